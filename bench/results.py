"""The JSON written to --out: its head (the machine, the interpreters, the targets,
how every figure is measured: new_results) and the writing of it, with the elapsed
time and the load at the end (write_results)."""

import json
import os
import time

from common import HANDLER_CPU_S
from machine import git_info, interp_version, machine_info
from targets import TARGETS


def new_results(args, want, py, debian, started, notes):
    """The JSON's head, before any run; the parts add their figures to it."""
    quick = args.quick
    return {
        "schema": "pyprof-bench/1",
        "started": started,
        "quick": quick,
        "machine": machine_info(py),
        "git": git_info(),
        "library": args.lib,
        "tool": args.tool,
        "python": {"path": py, "version": interp_version(py)},
        "debian_python": debian,
        "only": sorted(want) if args.only else None,
        "targets": TARGETS,
        "method": {
            "pairs": "each repetition runs every setting of a workload once, back to back, "
                     "in an order that reverses every repetition; a ratio is a run over the "
                     "bare run of the same repetition",
            "wall": "perf_counter around the process, start-up and exit included",
            "cpu": "user+sys of the process and its waited-for children, from wait4",
            "ci95_median": "95 % percentile bootstrap interval of the median (2000 "
                           "resamples)",
            "achieved": "cpu clock: samples / ((process CPU - writer thread CPU) x rate - "
                        "ticks that found no interpreter running); achieved_strict: "
                        "samples / (process CPU x rate); wall clock: sampling passes per "
                        "wall second (the footer's achieved_hz) / rate; steady_state: "
                        "(samples of a long run - of a short run) / (their CPU difference "
                        "x rate)",
            "library_cpu_share": "the footer's library CPU (handler + writer) / the "
                                 "process's CPU from wait4",
            "handler_by_depth": "from the footer's cost histogram (pyprof report --json "
                                "processes[].cost.by_depth): per depth bucket, the median "
                                "over runs of each run's median handler time (interpolated "
                                "within the histogram's time buckets)",
            "log_bytes_per_sample": "log file size / samples; steady_state: the "
                                    "difference between a long and a short run",
            "thread_per_request": "server.py: each request handled in a new thread that "
                                  "burns about %.1f ms of CPU (an inline loop sized from "
                                  "deep.py's calibration; handler_cpu_ms: the loop's CPU "
                                  "as each handler thread measured it, bare runs); "
                                  "achieved: samples / (process CPU from wait4 x rate), "
                                  "achieved_pooled: the same over all runs summed; "
                                  "achieved_python_running: as 'achieved' above"
                                  % (HANDLER_CPU_S * 1e3),
            "spans": "spans.py: N span start+stop pairs of the pyprof package per loop, "
                     "best of 5 loops per run; median over runs, with the library "
                     "(recording into a log), with it paused (PYPROF_SIGNAL set: it "
                     "starts paused) and without (the package's no-op); "
                     "c_functions_ns: pyprof_span_start + pyprof_span_stop through ctypes",
            "versions": "per version: the cpu and deep30 workloads, sized on each "
                        "interpreter to the main interpreter's CPU per run, bare and with "
                        "the library at 100 Hz and 1 kHz (cpu clock), in interleaved "
                        "repetitions of their own after the main ones; ratios and log "
                        "figures as for "
                        "the main interpreter; launcher_cpu_s: the CPU of the sid root's "
                        "chroot wrapper alone (sid-run /bin/true, median of 5), taken off "
                        "the process's CPU for samples expected and the library's share",
            "alloc": "alloc_mix.py, sized on each interpreter (the main one, and the sid "
                     "root's 3.14) to cpu_s_per_run of CPU, and alloc_loop.c (a C program, "
                     "no Python), in interleaved repetitions of their own after the others: "
                     "bare, the library at 100 Hz with allocation sampling off (PYPROF_ALLOC "
                     "unset) and at PYPROF_ALLOC=512KB and 64KB, -X tracemalloc, and on 3.14 "
                     "memray run (default, and --trace-python-allocators) where sid's "
                     "python3-memray is installed; cpu: user+sys from wait4 less the sid "
                     "wrapper's own (launcher_cpu_s); ratios against the bare run of the same "
                     "repetition (median, bootstrap CI); extra_cpu_over: (median cpu ratio - "
                     "1) of pyprof over the same of another tool (or the cheapest of them), "
                     "CI by resampling repetitions; alloc_samples: the ALLOC records of `pyprof "
                     "report --memory --json`; log_bytes_per_alloc_sample: (log bytes of the "
                     "run - of the allocation-off run of the same repetition) / its ALLOC "
                     "records; accuracy: pyprof's self bytes of alloc_mix.py's blobs_* "
                     "functions, pooled over the runs, against the bytes they allocate "
                     "(calls x sys.getsizeof of one block, exact; tracemalloc_check: that "
                     "size as -X tracemalloc traces it), sigma the estimator's sampling "
                     "error; c_loop: the loop's own CPU (CLOCK_PROCESS_CPUTIME_ID) over the "
                     "bare run's, paired, and from its 20 windows (ratio_q: iterations per "
                     "CPU second at the 75th percentile, bare over loaded; boot_ratio_ci), "
                     "the logs written (a program without Python is not profiled: none, and "
                     "nothing is hooked), and callgrind's instruction count of a short run "
                     "per setting (where valgrind is installed)",
            "correction": "the cpu and deep30 workloads also with PYPROF_TEST_UNCORRECTED=1 "
                          "(settings named '... (correction off)', in the same "
                          "repetitions, not checked against the targets); "
                          "corrected_over_off: the corrected run's CPU (wall) over the "
                          "off run's of the same repetition; whole_cost: work_rate.py "
                          "both ways, the off runs with half the windows; clock_read: "
                          "time.thread_time_ns (clock_gettime(CLOCK_THREAD_CPUTIME_ID), "
                          "the system call the correction adds to each signal) less "
                          "gc.isenabled, best of 5 loops, ns per call, not in the "
                          "handler's figures (the handler times the sample alone); "
                          "off_reads_clock: whether the off runs' logs count any clock "
                          "reading",
            "timer_excess": "per cpu-clock run: the footer's clock_timer_ns / "
                            "clock_kernel_ns - 1 (pyprof report --json "
                            "processes[].cost, summed over processes): the CPU the "
                            "perf timers counted over the intervals their signals "
                            "closed, over the kernel's CPU of the same threads over "
                            "them; None where no clock was read",
            "thread_create": "thread_create.py: N threads created and joined one at a time, "
                             "each doing nothing; us_per_thread: perf_counter around the "
                             "loop / N; cpu_us_per_thread: process_time around the loop / "
                             "N; ratio and added_us_per_thread: against the bare run of "
                             "the same repetition; threading: threading.Thread, pthread: "
                             "the loop in C (thread_create.c) through ctypes",
        },
        "checks": [],
        "notes": notes,
    }


def write_results(results, args, t_start):
    """Writes the JSON (through a temporary file); the exit status: 1 when a run failed."""
    results["elapsed_s"] = time.monotonic() - t_start
    results["machine"]["load_at_end"] = os.getloadavg()
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(results, fh, indent=1, sort_keys=False)
        fh.write("\n")
    os.replace(tmp, args.out)
    print("all figures: %s (%.0f s)" % (args.out, results["elapsed_s"]))
    return 1 if results["failures"] else 0
