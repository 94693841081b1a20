/*
 * cmd_diff: `pyprof diff BASE NEW` — per function, the time its samples stand for in
 * two sets of logs and the change, flagged where it is more than sampling alone explains
 * (src/read/compare.h has the noise model); a table, or one JSON object (--json).  With
 * --memory, the bytes its allocation samples stand for instead (allocated, or in use at
 * the end).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_args.h"
#include "cli_fmt.h"
#include "cli_log.h"
#include "cli_output.h"
#include "cli_parse.h"
#include "cli_text.h"
#include "cmd.h"
#include "jsonw.h"
#include "read/allocs.h"
#include "read/compare.h"

/* The differential flame graph's template, as cmd_html.c embeds the viewer's. */
__asm__(".section .rodata\n"
        ".globl pyprof_diff_html\n"
        ".hidden pyprof_diff_html\n"
        "pyprof_diff_html:\n"
        ".incbin \"" PYPROF_HTML_DIR "/diff.html\"\n"
        ".globl pyprof_diff_html_end\n"
        ".hidden pyprof_diff_html_end\n"
        "pyprof_diff_html_end:\n"
        ".byte 0\n"
        ".previous\n");
extern const char pyprof_diff_html[];
extern const char pyprof_diff_html_end[];

/* clang-format off */
const char cmd_diff_usage[] =
    "usage: pyprof diff [options] BASE NEW\n"
    "\n"
    "Compares two profiles function by function: BASE and NEW are each a log or a\n"
    "directory of logs (every process in it counts).  A function's time is what its\n"
    "samples stand for: CPU time with the cpu clock, thread time with the wall clock;\n"
    "self where it was the innermost frame, total where it was on the stack.  A change is\n"
    "flagged (*) when it is beyond what sampling alone explains (|z| >= 4, the samples\n"
    "counted as Poisson draws) and at least 10 % of the larger side: two runs of one\n"
    "program differ by what the machine did to them, too.  Functions are matched by\n"
    "file and name (and first line, where a name occurs twice in a file).  Both sides\n"
    "must have been sampled with the same clock.\n"
    "\n"
    "options:\n"
    "  --memory[=alloc|inuse]\n"
    "                   compare the sampled allocations (logs written with PYPROF_ALLOC)\n"
    "                   instead: per function the bytes allocated in it (self) and under\n"
    "                   it (total), or with =inuse the bytes still in use at the end; the\n"
    "                   noise is that of the samples, each standing for its own number of\n"
    "                   bytes (the clocks need not match; not with --html)\n"
    "  --json           print one JSON object: base, new, the thresholds, flagged, and\n"
    "                   functions (largest change first, each side's samples and seconds)\n"
    "  --top N          show N functions (default 20; --json shows all unless --top)\n"
    "  --html           write a differential flame graph page instead: both call trees\n"
    "                   merged, a frame's width the mean of its two times, red where it\n"
    "                   grew and blue where it shrank beyond the noise, grey otherwise\n"
    "  -o, --out FILE   where --html writes the page (default: standard output)\n"
    "  --base-from SECONDS, --base-to SECONDS\n"
    "                   the base side's window instead of --from and --to: with both\n"
    "                   sides the same log or directory, two windows of one run (times\n"
    "                   are compared as they are: give the windows the same length)\n"
    CLI_FILTER_HELP
    "                   (the filters apply to both sides)\n"
    "  -h, --help       show this text\n"
    "\n"
    "Exit status: 0 ok (whether or not anything changed), 1 bad input, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof diff before/ after/\n"
    "  pyprof diff --html -o diff.html before/ after/\n"
    "  pyprof diff --memory before/ after/                # bytes allocated per function\n"
    "  pyprof diff --base-to 600 --from 3000 --to 3600 logs/ logs/  # two 10-minute windows\n"
    "  pyprof diff --json --top 10 base.lz4 new.lz4 | jq '.functions[] | select(.flagged)'\n";
/* clang-format on */

typedef struct diff_opts {
    int top_given;
    size_t top;
    int html;
    int memory, by; /* --memory, and its ALLOCS_BY_* */
    const char *out;
    int has_from, has_to; /* --base-from, --base-to */
    double from_s, to_s;
} diff_opts;

enum {
    OPT_TOP = 't',
    OPT_OUT = 'o',
    OPT_MEMORY = 'm',
    OPT_BASE_FROM = 0x2000,
    OPT_BASE_TO,
    OPT_HTML
};

static int diff_option(void *ctx, int c, const char *arg)
{
    diff_opts *o = ctx;
    if (c == OPT_HTML) {
        o->html = 1;
        return 0;
    }
    if (c == OPT_OUT) {
        o->out = arg;
        return 0;
    }
    if (c == OPT_MEMORY)
        return cli_parse_memory("diff", arg, 0, &o->memory, &o->by);
    if (c == OPT_BASE_FROM) {
        o->has_from = 1;
        return cli_parse_seconds("diff", "base-from", arg, &o->from_s);
    }
    if (c == OPT_BASE_TO) {
        o->has_to = 1;
        return cli_parse_seconds("diff", "base-to", arg, &o->to_s);
    }
    uint32_t v;
    int rc = cli_parse_count("diff", "top", arg, &v);
    if (rc)
        return rc;
    o->top = v;
    o->top_given = 1;
    return 0;
}

/* BASE and NEW are the command's two words; nothing may follow them. */
static int diff_check(void *ctx, int nlogs)
{
    const diff_opts *o = ctx;
    if (o->has_from && o->has_to && o->to_s < o->from_s)
        return cli_usage_error("diff", "--base-to %g is before --base-from %g", o->to_s,
                               o->from_s);
    if (o->out && !o->html)
        return cli_usage_error("diff", "--out is for --html pages");
    if (o->html && o->memory)
        return cli_usage_error("diff", "--html pages show time only: --memory is for the "
                                       "table and --json");
    if (nlogs < 0)
        return cli_usage_error("diff", "needs two operands, BASE and NEW");
    if (nlogs > 0)
        return cli_usage_error("diff", "takes exactly two operands, BASE and NEW");
    return -1;
}

/* The clock every process of `p` was sampled with, or -1 when they differ (-2: none). */
static int side_clock(const profile *p)
{
    int clock = -2;
    for (size_t i = 0; i < p->nprocs; i++) {
        if (clock == -2)
            clock = p->procs[i].clock;
        else if (clock != p->procs[i].clock)
            return -1;
    }
    return clock;
}

/* Whether some log of `p` was written with allocation sampling (cli_need_allocs's test,
 * without its message: diff names the side). */
static int has_allocs(const profile *p)
{
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].alloc_interval || p->procs[i].allocs_read)
            return 1;
    return 0;
}

/* The row's function: the new side's where it has one. */
static const profile_func *row_func(const profile *const ps[2], const compare_row *r)
{
    return r->func[1] != COMPARE_NONE ? &ps[1]->funcs[r->func[1]] : &ps[0]->funcs[r->func[0]];
}

/* "+12.3%", "new", "gone" or "=" into buf. */
static const char *fmt_change(double t0, double t1, char *buf, size_t len)
{
    if (t0 == t1)
        snprintf(buf, len, "=");
    else if (t0 == 0)
        snprintf(buf, len, "new");
    else if (t1 == 0)
        snprintf(buf, len, "gone");
    else
        snprintf(buf, len, "%+.1f%%", 100.0 * (t1 - t0) / t0);
    return buf;
}

static void print_side_text(const char *what, const profile *p, const compare_result *r, int s)
{
    printf("%s %" PRIu64 " samples, %.3f s (%s clock, %zu process%s)", what, r->samples[s],
           r->us[s] / 1e6, cli_clock_name(side_clock(p)), p->nprocs,
           p->nprocs == 1 ? "" : "es");
}

/* A measure in bytes, "12.3 MiB", into buf. */
static const char *fmt_bytes(double v, char *buf, size_t len)
{
    return cli_fmt_bytes(cli_bytes_count(v), buf, len);
}

static const char *memory_name(const compare_result *r)
{
    return r->by == ALLOCS_BY_INUSE ? "inuse" : "alloc";
}

static void print_side_memory(const char *what, const profile *p, const compare_result *r,
                              int s)
{
    char b[32];
    printf("%s %" PRIu64 " allocation samples, %s %s (%zu process%s)", what, r->samples[s],
           fmt_bytes(r->us[s], b, sizeof b),
           r->by == ALLOCS_BY_INUSE ? "in use at the end" : "allocated", p->nprocs,
           p->nprocs == 1 ? "" : "es");
}

/* An amount as the table shows it: bytes with --memory, seconds otherwise. */
static const char *fmt_amount(const compare_result *r, double v, char *buf, size_t cap)
{
    if (r->memory)
        return fmt_bytes(v, buf, cap);
    snprintf(buf, cap, "%.3fs", v / 1e6);
    return buf;
}

static int print_text(const profile *const ps[2], const compare_result *r, size_t top)
{
    if (r->memory) {
        print_side_memory("pyprof diff --memory: base", ps[0], r, 0);
        print_side_memory(", new", ps[1], r, 1);
    } else {
        print_side_text("pyprof diff: base", ps[0], r, 0);
        print_side_text(", new", ps[1], r, 1);
    }
    printf("\n%zu function%s changed beyond sampling noise (*: |z| >= %.0f and by %.0f %% or "
           "more)\n\n",
           r->nflagged, r->nflagged == 1 ? "" : "s", COMPARE_Z, 100 * COMPARE_MIN_RATIO);
    printf("  %10s %10s %7s  %10s %10s %7s  %s\n", "self base", "self new", "change",
           "total base", "total new", "change", "function");
    for (size_t k = 0; k < r->nrows && k < top; k++) {
        const compare_row *row = &r->rows[k];
        const compare_side *a = &row->side[0], *b = &row->side[1];
        char c1[32], c2[32], b1[32], b2[32], b3[32], b4[32];
        printf("%c %10s %10s %7s%c %10s %10s %7s%c  ", row->flags ? '*' : ' ',
               fmt_amount(r, a->self_us, b1, sizeof b1),
               fmt_amount(r, b->self_us, b2, sizeof b2),
               fmt_change(a->self_us, b->self_us, c1, sizeof c1),
               row->flags & COMPARE_SELF ? '*' : ' ', fmt_amount(r, a->total_us, b3, sizeof b3),
               fmt_amount(r, b->total_us, b4, sizeof b4),
               fmt_change(a->total_us, b->total_us, c2, sizeof c2),
               row->flags & COMPARE_TOTAL ? '*' : ' ');
        cli_print_func(stdout, row_func(ps, row));
        putchar('\n');
    }
    if (r->nrows > top)
        printf("  ... %zu more (--top N)\n", r->nrows - top);
    return CLI_EXIT_OK;
}

static void json_side(jsonw *w, const char *key, const profile *p, const compare_result *r,
                      int s)
{
    jsonw_key(w, key);
    jsonw_begin_object(w);
    jsonw_key_u64(w, "samples", r->samples[s]);
    if (r->memory) {
        jsonw_key_u64(w, "bytes", cli_bytes_count(r->us[s]));
        jsonw_key_u64(w, "processes", p->nprocs);
        jsonw_end_object(w);
        return;
    }
    jsonw_key_double(w, "seconds", r->us[s] / 1e6, 6);
    jsonw_key_string(w, "clock", cli_clock_name(side_clock(p)));
    jsonw_key_u64(w, "processes", p->nprocs);
    jsonw_end_object(w);
}

static void json_func_side(jsonw *w, const char *key, const compare_result *r,
                           const compare_row *row, int s)
{
    jsonw_key(w, key);
    if (row->func[s] == COMPARE_NONE) {
        jsonw_null(w);
        return;
    }
    const compare_side *d = &row->side[s];
    jsonw_begin_object(w);
    jsonw_key_u64(w, "self_samples", d->self_n);
    jsonw_key_u64(w, "total_samples", d->total_n);
    if (r->memory) {
        jsonw_key_u64(w, "self_bytes", cli_bytes_count(d->self_us));
        jsonw_key_u64(w, "total_bytes", cli_bytes_count(d->total_us));
        jsonw_end_object(w);
        return;
    }
    jsonw_key_double(w, "self_s", d->self_us / 1e6, 6);
    jsonw_key_double(w, "total_s", d->total_us / 1e6, 6);
    jsonw_end_object(w);
}

/* The page's data: docs/JSON.md, "diff page", describes every key. */
typedef struct page_ctx {
    const profile *const *ps;
    const compare_result *r;
    const char *title;
} page_ctx;

static int write_page_data(FILE *f, void *ctx)
{
    const page_ctx *c = ctx;
    compare_node *nodes;
    size_t nnodes;
    if (compare_tree(c->ps[0], c->ps[1], c->r, &nodes, &nnodes) < 0)
        return ENOMEM;
    jsonw w;
    jsonw_init(&w, f, JSONW_HTML);
    jsonw_set_compact(&w, 1);
    jsonw_begin_object(&w);
    jsonw_key_string(&w, "title", c->title);
    json_side(&w, "base", c->ps[0], c->r, 0);
    json_side(&w, "new", c->ps[1], c->r, 1);
    jsonw_key_double(&w, "z_threshold", COMPARE_Z, 2);
    jsonw_key_double(&w, "min_ratio", COMPARE_MIN_RATIO, 3);
    jsonw_key_u64(&w, "flagged", c->r->nflagged);
    jsonw_key(&w, "functions");
    jsonw_begin_array(&w);
    for (size_t k = 0; k < c->r->nrows; k++) {
        const compare_row *row = &c->r->rows[k];
        const profile_func *fn = row_func(c->ps, row);
        jsonw_begin_object(&w);
        cli_json_func(&w, fn);
        jsonw_key_double(&w, "base_total_us", row->side[0].total_us, 0);
        jsonw_key_double(&w, "new_total_us", row->side[1].total_us, 0);
        jsonw_key_double(&w, "total_z", row->total_z, 3);
        jsonw_key_bool(&w, "flagged", row->flags != 0);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    /* [parent, function, base samples, base us, new samples, new us, sign]: sign 1 where
     * the node grew and -1 where it shrank beyond the noise. */
    jsonw_key(&w, "nodes");
    jsonw_begin_array(&w);
    for (size_t k = 0; k < nnodes; k++) {
        const compare_node *n = &nodes[k];
        int sign = 0;
        if (compare_flagged(n->us[0], n->n[0], n->us[1], n->n[1]))
            sign = n->us[1] > n->us[0] ? 1 : -1;
        jsonw_begin_array(&w);
        jsonw_i64(&w, n->parent == COMPARE_NONE ? -1 : (int64_t)n->parent);
        jsonw_i64(&w, n->row == COMPARE_NONE ? -1 : (int64_t)n->row);
        jsonw_u64(&w, n->n[0]);
        jsonw_double(&w, n->us[0], 0);
        jsonw_u64(&w, n->n[1]);
        jsonw_double(&w, n->us[1], 0);
        jsonw_i64(&w, sign);
        jsonw_end_array(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    free(nodes);
    return jsonw_error(&w);
}

/* docs/JSON.md, "diff", describes every key. */
static int print_json(const profile *const ps[2], const compare_result *r, const diff_opts *o)
{
    jsonw w;
    jsonw_init(&w, stdout, 0);
    jsonw_begin_object(&w);
    json_side(&w, "base", ps[0], r, 0);
    json_side(&w, "new", ps[1], r, 1);
    if (r->memory)
        jsonw_key_string(&w, "memory", memory_name(r));
    else {
        jsonw_key(&w, "memory");
        jsonw_null(&w);
    }
    jsonw_key_double(&w, "z_threshold", COMPARE_Z, 2);
    jsonw_key_double(&w, "min_ratio", COMPARE_MIN_RATIO, 3);
    jsonw_key_u64(&w, "flagged", r->nflagged);
    jsonw_break(&w, 1);
    jsonw_key(&w, "functions");
    jsonw_begin_array(&w);
    size_t n = r->nrows;
    if (o->top_given && n > o->top)
        n = o->top;
    for (size_t k = 0; k < n; k++) {
        const compare_row *row = &r->rows[k];
        const profile_func *fn = row_func(ps, row);
        jsonw_break(&w, 2);
        jsonw_begin_object(&w);
        cli_json_func(&w, fn);
        json_func_side(&w, "base", r, row, 0);
        json_func_side(&w, "new", r, row, 1);
        jsonw_key_double(&w, "self_z", row->self_z, 3);
        jsonw_key_double(&w, "total_z", row->total_z, 3);
        jsonw_key_bool(&w, "self_flagged", (row->flags & COMPARE_SELF) != 0);
        jsonw_key_bool(&w, "total_flagged", (row->flags & COMPARE_TOTAL) != 0);
        jsonw_key_bool(&w, "flagged", row->flags != 0);
        jsonw_end_object(&w);
    }
    jsonw_end_array(&w);
    jsonw_end_object(&w);
    jsonw_finish(&w);
    return CLI_EXIT_OK;
}

int cmd_diff(int argc, char **argv)
{
    static const struct option options[] = {
        {"top", required_argument, NULL, OPT_TOP},
        {"base-from", required_argument, NULL, OPT_BASE_FROM},
        {"base-to", required_argument, NULL, OPT_BASE_TO},
        {"html", no_argument, NULL, OPT_HTML},
        {"out", required_argument, NULL, OPT_OUT},
        {"memory", optional_argument, NULL, OPT_MEMORY},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"diff",      cmd_diff_usage, 1, "o:", options,
                                    diff_option, diff_check,     0, 2};
    diff_opts o;
    memset(&o, 0, sizeof o);
    o.top = 20;
    cli_args a;
    profile *nw = NULL;
    compare_result r;
    memset(&r, 0, sizeof r);
    int rc = cli_start(&cmd, argc, argv, &o, &a);
    if (rc >= 0)
        goto cleanup;
    if (o.html && a.json) {
        rc = cli_usage_error("diff", "--html and --json: choose one");
        goto cleanup;
    }
    /* cli_start loaded nothing (no operand after the two words): each side now. */
    profile_free(a.p);
    a.p = NULL;
    profile_filter bf = a.cf.f;
    if (o.has_from || o.has_to) {
        bf.has_from = o.has_from;
        bf.from_s = o.from_s;
        bf.has_to = o.has_to;
        bf.to_s = o.to_s;
    }
    rc = cli_load(&a.args[0], 1, &bf, a.load, a.root, &a.p);
    if (rc)
        goto cleanup;
    rc = cli_load(&a.args[1], 1, &a.cf.f, a.load, a.root, &nw);
    if (rc)
        goto cleanup;
    const profile *const ps[2] = {a.p, nw};
    if (o.memory) {
        /* Allocations do not depend on the clock: only on their sampling. */
        for (int s = 0; s < 2; s++) {
            if (!has_allocs(ps[s])) {
                cli_error("diff: %s: no allocation samples: the logs were written without "
                          "PYPROF_ALLOC",
                          a.args[s]);
                rc = CLI_EXIT_BAD_INPUT;
                goto cleanup;
            }
        }
        rc = compare_profiles_memory(ps[0], ps[1], o.by, &r) < 0 ? cli_oom()
             : a.json                                            ? print_json(ps, &r, &o)
                                                                 : print_text(ps, &r, o.top);
        goto cleanup;
    }
    int c0 = side_clock(ps[0]), c1 = side_clock(ps[1]);
    if (c0 == -1 || c1 == -1 || c0 != c1) {
        cli_error("diff: %s was sampled with the %s clock and %s with the %s clock: their "
                  "times do not compare",
                  a.args[0], c0 == -1 ? "cpu and the wall" : cli_clock_name(c0), a.args[1],
                  c1 == -1 ? "cpu and the wall" : cli_clock_name(c1));
        rc = CLI_EXIT_BAD_INPUT;
        goto cleanup;
    }
    char *title = NULL;
    if (compare_profiles(ps[0], ps[1], &r) < 0 ||
        (o.html && asprintf(&title, "pyprof diff %s %s", a.args[0], a.args[1]) < 0)) {
        title = NULL;
        rc = cli_oom();
    } else if (o.html) {
        page_ctx pc = {ps, &r, title};
        rc = cli_write_page("diff", o.out ? o.out : "-", pyprof_diff_html,
                            (size_t)(pyprof_diff_html_end - pyprof_diff_html), write_page_data,
                            &pc);
    } else {
        rc = a.json ? print_json(ps, &r, &o) : print_text(ps, &r, o.top);
    }
    free(title);

cleanup:
    compare_free(&r);
    profile_free(nw);
    cli_args_free(&a);
    return rc;
}
