"""Checks what report.sh collected from the booted root (tests/package/hardening_test.sh).

usage: check.py OUT CASES
CASES: lines "NAME|TIMER|LINE" (LINE: what the one stderr line of the library says, or -
for none).  Prints a table, one row per case, and exits 1 when any row failed.
"""
import json
import os
import sys


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return "(%s)" % e.strerror


def check_case(out, name, timer, line):
    unit = "pp-%s.service" % name
    d = os.path.join(out, unit)
    bad = []
    show = read(os.path.join(d, "show.txt"))
    if "Result=success" not in show:
        bad.append("unit failed: " + " ".join(show.split()))
    journal = read(os.path.join(d, "journal.txt"))
    said = [ln for ln in journal.splitlines() if ln.startswith("pyprof:")]
    if line == "-":
        if said:
            bad.append("the library said: %s" % said)
    elif len(said) != 1 or line not in said[0]:
        bad.append("expected one line with %r, got %s" % (line, said))
    logdir = read(os.path.join(d, "logdir.txt")).split()
    if not logdir or logdir[0] != "700":
        bad.append("log directory mode/owner %s, expected 700" % logdir)
    # What the program measured of its own spin: each thread's user and system time
    # in it (getrusage of the thread), printed on its last line.
    spent = {}
    for ln in journal.splitlines():
        if ln.startswith("work done:"):
            spent = dict(w.split("=", 1) for w in ln.split()[3:] if "=" in w)
    got_timer, samples, in_spin, most, period = "-", 0, 0, 0, 0
    try:
        rep = json.loads(read(os.path.join(d, "report.json")))
        proc = rep["processes"][0]
        got_timer, samples, period = proc["timer"], rep["samples"], proc["period_ns"]
        in_spin = sum(f["self"] for f in rep["functions"] if f["name"] == "spin")
        # No more than the process's CPU allows (the random first period of each of
        # its two threads adds at most one each).
        most = proc["cost"]["process_cpu_ns"] // period + 2
    except (ValueError, KeyError, IndexError, TypeError) as e:
        bad.append("no report: %s %s" % (e, read(os.path.join(d, "report.err")).strip()))
    # "-user": perf events counting user time only, all an unprivileged process may
    # count where the kernel's perf_event_paranoid is 2 (Debian's default).
    if got_timer not in (timer, timer + "-user"):
        bad.append("timer %s, expected %s" % (got_timer, timer))
    # spin's samples stand for the CPU its threads spent in it, as the kernel accounts
    # it (user time only for a "-user" timer): within 15 %, and a period either way for
    # each thread's first and last.  The rest of the program (the allocations above
    # all: page faults, which cost more in some containers) is not held to a share.
    try:
        spin_ns = int(spent["spin_user_ns"])
        if not got_timer.endswith("-user"):
            spin_ns += int(spent["spin_system_ns"])
    except (KeyError, ValueError):
        spin_ns = 0
        bad.append("the program did not say what it spent: %s" % journal.strip()[-200:])
    want = spin_ns / period if period else 0.0
    if spin_ns and not (0.85 * want - 2 <= in_spin <= 1.15 * want + 2 and samples <= most):
        bad.append("%d samples in spin for %.1f periods of its CPU (%+.1f %%), %d in all "
                   "(at most %d)" % (in_spin, want, 100 * (in_spin / want - 1) if want else 0,
                                     samples, most))
    off = 100 * (in_spin / want - 1) if want else 0.0
    owner = logdir[1] if len(logdir) > 1 else "?"
    print("  %-16s %-6s %-20s %5d  %4d %+6.1f%%  %-8s %s" % (
        name, "ok" if not bad else "FAIL", got_timer, samples, in_spin, off, owner,
        said[0][len("pyprof: "):][:60] if said else "-"))
    for b in bad:
        print("      " + b)
    return not bad


def check_ctl(out):
    ok = True
    # The control socket is abstract, so it lives in the unit's network namespace:
    # reachable from the host's only when the unit shares it.
    for unit, direct in (("pp-ctl-plain.service", True), ("pp-ctl-privnet.service", False)):
        for how, want in (("ctl", direct), ("nsenter", True)):
            text = read(os.path.join(out, "%s.%s" % (unit, how)))
            reached = "rc=0" in text and text.startswith("ok")
            good = reached == want
            if not want:  # and the client says why, and how to reach it
                good = good and "another network namespace" in text and "nsenter" in text
            ok = ok and good
            print("  %-24s %-8s %-10s %s" % (unit, how, "ok" if good else "FAIL",
                                             text.splitlines()[0] if text else "-"))
    return ok


def main():
    out, cases = sys.argv[1], sys.argv[2]
    if not os.path.exists(os.path.join(out, "END")):
        print("the booted root never finished its report (see the boot's console log)")
        return 1
    print("  %-16s %-6s %-20s %5s  %4s %7s  %-8s %s" % (
        "case", "", "timer", "samp", "spin", "vs cpu", "log dir", "the library's stderr line"))
    ok = True
    for spec in cases.strip().splitlines():
        name, timer, line = spec.split("|")
        ok = check_case(out, name, timer, line) and ok
    ok = check_ctl(out) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
