/*
 * cmd_export: `pyprof export` — writes one or more logs in a format another tool reads:
 * folded stacks, pstats, callgrind, speedscope, pprof or Chrome's trace events.  This
 * file owns the command line, the table of formats, the output file (written only once
 * the logs loaded, removed again when writing it failed) and the helpers the writers
 * share; each format lives in utils/export_FORMAT.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/allocs.h"

#include "cli.h"
#include "cli_args.h"
#include "cli_log.h"
#include "cli_parse.h"
#include "cmd.h"
#include "export.h"

/* clang-format off */
const char cmd_export_usage[] =
    "usage: pyprof export -f FORMAT [options] LOG... | DIR... [-o FILE]\n"
    "\n"
    "Writes the samples of pyprof logs in a format that other tools open.  A directory\n"
    "stands for every log in it; several logs are merged.\n"
    "\n"
    "formats:\n"
    "  folded      Brendan Gregg's collapsed stacks, one line per distinct stack:\n"
    "              'outer;...;inner COUNT', each frame 'NAME (FILE:LINE)' with the\n"
    "              function's first line (with --lines, the line running in that frame);\n"
    "              ';' in a name becomes ':' and control characters '?'.  The counts add up\n"
    "              to the samples.  For flamegraph.pl, inferno, speedscope.\n"
    "  pstats      the marshal file of Python's profile/cProfile modules, for\n"
    "              'python3 -m pstats FILE', snakeviz, gprof2dot, pyprof2calltree: self\n"
    "              (tottime) and cumulative (cumtime) time are the samples times the\n"
    "              period; the call counts are sample counts (ncalls 'A/B': frames on the\n"
    "              stacks, every recursion level, / samples with the function on the\n"
    "              stack); callers are the functions right below on the stacks.\n"
    "  callgrind   for kcachegrind and callgrind_annotate: events Samples and Time_us,\n"
    "              self cost per source line, inclusive cost per call site.\n"
    "  speedscope  speedscope's JSON file: one sampled profile per process and thread,\n"
    "              samples in time order with their weights in microseconds (--memory:\n"
    "              one profile in bytes).\n"
    "  pprof       gzipped protobuf for 'go tool pprof' and Pyroscope: values samples/count\n"
    "              and cpu/nanoseconds (wall/nanoseconds for wall-clock logs), one location\n"
    "              per function and line, labels pid, tid and thread (its name).\n"
    "  chrome      trace-event JSON for Perfetto and chrome://tracing: per thread, a\n"
    "              complete ('X') event per frame for each run of consecutive samples\n"
    "              that keep it on the stack, with process and thread names.\n"
    "\n"
    "options:\n"
    "  -f, --format FORMAT  one of the formats above (required)\n"
    "  -o, --output FILE    write to FILE (default, or '-': standard output; pstats and\n"
    "                       pprof are binary and need -o FILE when that is a terminal)\n"
    "  --lines              folded: name frames by the line they were running\n"
    "  --memory[=alloc|inuse|peak]\n"
    "                       folded, pprof, speedscope: the sampled allocations (logs written\n"
    "                       with PYPROF_ALLOC) instead of the samples.  folded: the bytes\n"
    "                       each stack allocated, or with =inuse holds at the end (at --to,\n"
    "                       with --to), or with =peak holds when the estimated heap was at\n"
    "                       its highest.  pprof: a heap profile, values alloc_objects/count,\n"
    "                       alloc_space/bytes, inuse_objects/count, inuse_space/bytes per\n"
    "                       stack (=peak: the inuse values are the peak's), the period the\n"
    "                       sampling interval in bytes; pprof shows inuse_space unless\n"
    "                       --memory=alloc\n"
    CLI_FILTER_HELP
    "  -h, --help           show this text\n"
    "\n"
    "Times are the samples' CPU time (the period each stands for; wall time for logs\n"
    "taken with PYPROF_CLOCK=wall).  A truncated log is exported up to where it ends,\n"
    "with a warning.  Exit status: 0 ok, 1 bad input or an output that could not be\n"
    "written, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof export -f folded logs/ | flamegraph.pl > flame.svg\n"
    "  pyprof export -f pstats logs/ -o app.pstats && python3 -m pstats app.pstats\n"
    "  pyprof export -f callgrind logs/ -o callgrind.out.app && kcachegrind callgrind.out.app\n"
    "  pyprof export -f speedscope --pid 4242 logs/ -o app.speedscope.json\n"
    "  pyprof export -f pprof logs/ -o app.pb.gz && go tool pprof -top app.pb.gz\n"
    "  pyprof export -f chrome --from 10 --to 12 logs/ -o trace.json\n"
    "  pyprof export -f pprof --memory logs/ -o heap.pb.gz && go tool pprof -top heap.pb.gz\n";
/* clang-format on */

typedef struct export_format {
    const char *name;
    int (*write)(FILE *out, const profile *p, const export_opts *o);
    int binary;
} export_format;

static const export_format formats[] = {
    {"folded", export_folded, 0},       {"pstats", export_pstats, 1},
    {"callgrind", export_callgrind, 0}, {"speedscope", export_speedscope, 0},
    {"pprof", export_pprof, 1},         {"chrome", export_chrome, 0},
};
#define NFORMATS (sizeof formats / sizeof formats[0])

static const export_format *find_format(const char *name)
{
    for (size_t i = 0; i < NFORMATS; i++)
        if (!strcmp(formats[i].name, name))
            return &formats[i];
    return NULL;
}

/* Writes the profile to `path` ("-": stdout).  Returns an exit code; a file that could
 * not be completed is removed, so no half-written export is left behind. */
static int write_output(const export_format *fmt, const profile *p, const export_opts *o,
                        const char *path)
{
    int to_stdout = !strcmp(path, "-");
    FILE *out = to_stdout ? stdout : fopen(path, "wb");
    if (!out) {
        cli_error("cannot write %s: %s", path, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    /* Only a regular file is ours to remove again: never /dev/full or a FIFO. */
    struct stat st;
    int regular = !to_stdout && fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);
    int failed = fmt->write(out, p, o) < 0;
    if (to_stdout)
        return failed ? CLI_EXIT_BAD_INPUT : CLI_EXIT_OK; /* main checks stdout */
    int err = 0;
    if (!failed && (fflush(out) != 0 || ferror(out)))
        err = errno ? errno : EIO;
    if (fclose(out) != 0 && !failed && !err)
        err = errno ? errno : EIO;
    if (err)
        cli_error("error writing %s: %s", path, strerror(err));
    if (failed || err) {
        if (regular)
            unlink(path);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

static int format_names_error(const char *what)
{
    return cli_usage_error("export",
                           "%s (formats: folded, pstats, callgrind, speedscope, "
                           "pprof, chrome)",
                           what);
}

typedef struct export_args {
    const export_format *fmt;
    const char *output;
    export_opts o;
} export_args;

static int export_option(void *ctx, int c, const char *arg)
{
    export_args *a = ctx;
    char msg[256];
    switch (c) {
    case 'f':
        a->fmt = find_format(arg);
        if (!a->fmt) {
            snprintf(msg, sizeof msg, "unknown format '%.100s'", arg);
            return format_names_error(msg);
        }
        break;
    case 'o':
        a->output = arg;
        break;
    case 'M':
        a->o.by_set = arg != NULL;
        return cli_parse_memory("export", arg, 1, &a->o.memory, &a->o.by);
    default: /* --lines */
        a->o.lines = 1;
        break;
    }
    return 0;
}

static int export_check(void *ctx, int nlogs)
{
    const export_args *a = ctx;
    if (!a->fmt)
        return format_names_error("no format given: -f FORMAT");
    if (a->o.memory && a->fmt->write != export_folded && a->fmt->write != export_pprof &&
        a->fmt->write != export_speedscope)
        return cli_usage_error(
            "export", "--memory: only the folded, pprof and speedscope formats have it");
    int rc = cli_no_logs("export", nlogs);
    if (rc >= 0)
        return rc;
    if (!a->output[0])
        return cli_usage_error("export", "-o: empty file name");
    if (a->fmt->binary && !strcmp(a->output, "-") && isatty(STDOUT_FILENO))
        return cli_usage_error("export", "%s is binary: give -o FILE, or redirect the output",
                               a->fmt->name);
    return -1;
}

int cmd_export(int argc, char **argv)
{
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"lines", no_argument, NULL, 'l'},
        {"memory", optional_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"export",      cmd_export_usage, 0, "f:o:", options,
                                    export_option, export_check,     0};
    export_args e = {NULL, "-", {0, 0, ALLOCS_BY_ALLOC, 0}};
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, &e, &a);
    if (rc >= 0)
        goto cleanup;
    if (e.o.memory) {
        if ((rc = cli_need_allocs(a.p)) >= 0)
            goto cleanup;
        if (!a.p->nallocs)
            cli_error("warning: no allocation samples to export (the filters hold none)");
    } else if (!a.p->nsamples) /* still a valid file, though pstats.Stats refuses an empty
                                  one */
        cli_error("warning: no samples to export (the logs or the filters hold none)");
    rc = write_output(e.fmt, a.p, &e.o, e.output);

cleanup:
    cli_args_free(&a);
    return rc;
}
