/*
 * cmd_tree: `pyprof tree` — the call tree of one or more logs, every process and thread
 * merged into one tree (the filters split it), with each node's total and self share of
 * the samples, pruned below --min percent and cut at --depth; as indented text or as one
 * nested JSON object (--json).  With --memory, the same tree weighed by the bytes the
 * sampled allocations stand for (allocated, in use at the end, or in use at the peak of
 * the estimated heap).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/aggregate.h"
#include "read/allocs.h"
#include "read/calltree.h"
#include "cli.h"
#include "cli_args.h"
#include "cli_fmt.h"
#include "cli_log.h"
#include "cli_parse.h"
#include "cmd.h"
#include "jsonw.h"

/* clang-format off */
const char cmd_tree_usage[] =
    "usage: pyprof tree [options] LOG... | DIR...\n"
    "\n"
    "Prints the call tree: each line is a function called from the line above it, with\n"
    "its total share (samples taken while it was on the stack) and self share (samples\n"
    "taken in it), in percent of all samples and in samples.  Children are sorted by\n"
    "total.  Every process and thread is merged into one tree, so threads that start in\n"
    "the same function share its branch; use --pid and --thread to see one of them.  A\n"
    "recursive call is a deeper node, so no share is counted twice.\n"
    "\n"
    "options:\n"
    "  --min PERCENT    hide the calls below PERCENT of all samples (default 1; 0 shows\n"
    "                   every call)\n"
    "  --depth N        show N levels of calls at most; a line ending in '...' has\n"
    "                   callees below the cut\n"
    "  --json           print the tree as one JSON object: samples, min_percent, depth,\n"
    "                   roots (each node: name, file, line, total, self, children)\n"
    "  --memory[=alloc|inuse|peak]\n"
    "                   weigh the tree by the sampled allocations (logs written with\n"
    "                   PYPROF_ALLOC) instead of the samples: the bytes allocated, with\n"
    "                   =inuse the bytes still in use at the end (at --to, with --to),\n"
    "                   with =peak the bytes in use when the estimated heap of all the\n"
    "                   processes was highest; --json gives memory and bytes instead of\n"
    "                   samples, in bytes (and with =peak, peak_t_s)\n"
    CLI_FILTER_HELP
    "  -h, --help       show this text\n"
    "\n"
    "A truncated log is shown up to where it ends, with a warning.  Exit status: 0 ok,\n"
    "1 bad input, 2 usage.\n"
    "\n"
    "EXAMPLES\n"
    "  pyprof tree /tmp/pyprof.Ab12Cd\n"
    "  pyprof tree --min 5 --depth 8 pyprof.python3.4242.x1y2z3.lz4\n"
    "  pyprof tree --thread 4243 --min 0 logs/\n"
    "  pyprof tree --json logs/ | jq '.roots[0].children[:3]'\n"
    "  pyprof tree --memory=inuse --min 2 logs/\n";
/* clang-format on */

typedef struct tree_opts {
    double min_pct;
    uint32_t depth; /* 0: no limit */
    int json;
    int memory;       /* --memory */
    int by;           /* its ALLOCS_BY_* */
    allocs_peak peak; /* --memory: the peak of the estimated heap */
} tree_opts;

typedef struct tree_out {
    const profile *p;
    const calltree *t;
    const tree_opts *o;
    uint64_t all;         /* what the root stands for: samples, or bytes */
    uint64_t min_samples; /* a node is shown when its total reaches this */
    int oom;
} tree_out;

/* The function's name and where it starts, control characters shown as '?' so that no
 * name from the profiled program can move the terminal's cursor. */
static void print_func_plain(const profile_func *f)
{
    for (const unsigned char *s = (const unsigned char *)f->name; *s; s++)
        putchar(*s < 0x20 || *s == 0x7f ? '?' : *s);
    if (!f->file[0])
        return;
    fputs(" (", stdout);
    for (const unsigned char *s = (const unsigned char *)f->file; *s; s++)
        putchar(*s < 0x20 || *s == 0x7f ? '?' : *s);
    printf(":%" PRId64 ")", f->line);
}

static int node_shown(const tree_out *w, uint32_t n)
{
    return w->t->nodes[n].total >= w->min_samples && w->t->nodes[n].total > 0;
}

/* Whether node `n` has a child above --min that --depth hides. */
static int cut_below(const tree_out *w, uint32_t n)
{
    const calltree_node *node = &w->t->nodes[n];
    if (!w->o->depth || node->depth < w->o->depth)
        return 0;
    for (uint32_t c = node->first_child; c != CALLTREE_NONE; c = w->t->nodes[c].next_sibling)
        if (node_shown(w, c))
            return 1;
    return 0;
}

/* The shown children of `n` in order; sets *count.  NULL with w->oom on failure. */
static uint32_t *shown_children(tree_out *w, uint32_t n, size_t *count)
{
    *count = 0;
    if (w->o->depth && w->t->nodes[n].depth >= w->o->depth)
        return NULL;
    uint32_t *kids;
    size_t nk = calltree_children(w->t, w->p, n, &kids);
    if (nk == (size_t)-1) {
        w->oom = 1;
        return NULL;
    }
    while (*count < nk && node_shown(w, kids[*count]))
        (*count)++; /* sorted by total, so the shown ones come first */
    return kids;
}

static void print_text_node(tree_out *w, uint32_t n, char *prefix, size_t plen, int last)
{
    const calltree_node *node = &w->t->nodes[n];
    uint64_t all = w->all;
    if (w->o->memory) {
        char b1[64], b2[64];
        printf("  %5.1f%% %10s %6.1f%% %10s  %s", cli_pct(node->total, all),
               cli_fmt_bytes(node->total, b1, sizeof b1), cli_pct(node->self, all),
               cli_fmt_bytes(node->self, b2, sizeof b2), prefix);
    } else
        printf("  %5.1f%% %9" PRIu64 " %6.1f%% %9" PRIu64 "  %s", cli_pct(node->total, all),
               node->total, cli_pct(node->self, all), node->self, prefix);
    /* Outermost frames stand at the margin; below them each level adds a guide. */
    if (node->depth > 1)
        fputs(last ? "`- " : "|- ", stdout);
    print_func_plain(&w->p->funcs[node->func]);
    if (cut_below(w, n))
        fputs(" ...", stdout);
    putchar('\n');

    size_t nk;
    uint32_t *kids = shown_children(w, n, &nk);
    if (node->depth > 1) {
        memcpy(prefix + plen, last ? "   " : "|  ", 4);
        plen += 3;
    }
    for (size_t k = 0; k < nk && !w->oom; k++)
        print_text_node(w, kids[k], prefix, plen, k + 1 == nk);
    prefix[plen - (node->depth > 1 ? 3 : 0)] = 0;
    free(kids);
}

static void print_json_node(tree_out *w, jsonw *j, uint32_t n)
{
    const calltree_node *node = &w->t->nodes[n];
    const profile_func *f = &w->p->funcs[node->func];
    jsonw_begin_object(j);
    jsonw_key_string(j, "name", f->name);
    jsonw_key_string(j, "file", f->file);
    jsonw_key_i64(j, "line", f->line);
    jsonw_key_u64(j, "total", node->total);
    jsonw_key_u64(j, "self", node->self);
    jsonw_key(j, "children");
    jsonw_begin_array(j);
    size_t nk;
    uint32_t *kids = shown_children(w, n, &nk);
    for (size_t k = 0; k < nk && !w->oom; k++)
        print_json_node(w, j, kids[k]);
    jsonw_end_array(j);
    jsonw_end_object(j);
    free(kids);
}

static const char *memory_name(int by)
{
    return by == ALLOCS_BY_INUSE ? "inuse" : by == ALLOCS_BY_PEAK ? "peak" : "alloc";
}

static int print_tree(const profile *p, const calltree *t, const tree_opts *o)
{
    tree_out w = {p, t, o, o->memory ? t->nodes[CALLTREE_ROOT].total : p->nsamples, 0, 0};
    /* The threshold in samples (bytes), rounded up: a node at exactly --min percent is
     * shown. */
    w.min_samples = (uint64_t)ceil(o->min_pct * (double)w.all / 100.0 - 1e-9);
    size_t nk;
    uint32_t *roots = shown_children(&w, CALLTREE_ROOT, &nk);
    if (o->json) {
        /* docs/JSON.md, "tree", describes every key. */
        jsonw j;
        jsonw_init(&j, stdout, 0);
        jsonw_begin_object(&j);
        if (o->memory) {
            jsonw_key_string(&j, "memory", memory_name(o->by));
            jsonw_key_u64(&j, "bytes", w.all);
            if (o->by == ALLOCS_BY_PEAK) {
                jsonw_key(&j, "peak_t_s");
                if (o->peak.found)
                    jsonw_double(&j, o->peak.t_s, 6);
                else
                    jsonw_null(&j);
            }
        } else
            jsonw_key_u64(&j, "samples", p->nsamples);
        char pct[32];
        snprintf(pct, sizeof pct, "%g", o->min_pct); /* a percentage the user gave: 0-100 */
        jsonw_key(&j, "min_percent");
        jsonw_raw(&j, pct);
        jsonw_key(&j, "depth");
        if (o->depth)
            jsonw_u64(&j, o->depth);
        else
            jsonw_null(&j);
        jsonw_key(&j, "roots");
        jsonw_begin_array(&j);
        for (size_t k = 0; k < nk && !w.oom; k++) {
            jsonw_break(&j, 2);
            print_json_node(&w, &j, roots[k]);
        }
        jsonw_end_array(&j);
        jsonw_end_object(&j);
        jsonw_finish(&j);
    } else {
        char b[64];
        if (o->memory) {
            printf(
                "pyprof tree --memory: %zu process%s, %zu allocations sampled, %s %s, merged",
                p->nprocs, p->nprocs == 1 ? "" : "es", p->nallocs,
                cli_fmt_bytes(w.all, b, sizeof b),
                o->by == ALLOCS_BY_INUSE  ? "in use at the end"
                : o->by == ALLOCS_BY_PEAK ? "in use at the peak"
                                          : "allocated");
            if (o->by == ALLOCS_BY_PEAK && o->peak.found)
                printf(" (at %.3f s from the start)", o->peak.t_s);
        } else
            printf("pyprof tree: %zu process%s, %zu thread%s, %zu samples, merged", p->nprocs,
                   p->nprocs == 1 ? "" : "es", p->nthreads, p->nthreads == 1 ? "" : "s",
                   p->nsamples);
        if (o->min_pct > 0)
            printf("; calls under %g%% hidden", o->min_pct);
        if (o->depth)
            printf("; %" PRIu32 " levels shown", o->depth);
        putchar('\n');
        if (o->memory)
            printf("  %6s %10s %7s %10s  %s\n", "total%", "total", "self%", "self", "function");
        else
            printf("  %6s %9s %7s %9s  %s\n", "total%", "total", "self%", "self", "function");
        /* Guides take three bytes per level below the outermost. */
        char *prefix = calloc(3 * (size_t)aggregate_max_depth(p) + 4, 1);
        if (!prefix)
            w.oom = 1;
        for (size_t k = 0; k < nk && !w.oom; k++)
            print_text_node(&w, roots[k], prefix, 0, k + 1 == nk);
        free(prefix);
        if (o->memory ? !p->nallocs : !p->nsamples)
            printf(o->memory ? "no allocation samples\n" : "no samples\n");
    }
    free(roots);
    if (w.oom)
        return cli_oom();
    return CLI_EXIT_OK;
}

static int tree_option(void *ctx, int c, const char *arg)
{
    tree_opts *o = ctx;
    if (c == 'M')
        return cli_parse_memory("tree", arg, 1, &o->memory, &o->by);
    if (c == 'd')
        return cli_parse_count("tree", "depth", arg, &o->depth);
    char *end;
    double v = strtod(arg, &end);
    if (!arg[0] || *end || !isfinite(v) || v < 0 || v > 100)
        return cli_usage_error("tree", "--min: '%s' is not a percentage from 0 to 100", arg);
    o->min_pct = v;
    return 0;
}

int cmd_tree(int argc, char **argv)
{
    static const struct option options[] = {
        {"min", required_argument, NULL, 'm'},
        {"depth", required_argument, NULL, 'd'},
        {"memory", optional_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    static const cli_command cmd = {"tree",  cmd_tree_usage, 1,    "",
                                    options, tree_option,    NULL, 0};
    tree_opts o = {1.0, 0, 0, 0, ALLOCS_BY_ALLOC, {0}};
    aggregate_counts agg;
    memset(&agg, 0, sizeof agg);
    calltree t;
    memset(&t, 0, sizeof t);
    uint64_t *weights = NULL;
    cli_args a;
    int rc = cli_start(&cmd, argc, argv, &o, &a);
    if (rc >= 0)
        goto cleanup;
    o.json = a.json;
    if (o.memory) {
        allocs_counts c;
        if ((rc = cli_need_allocs(a.p)) >= 0)
            goto cleanup;
        if (allocs_sum(a.p, &c) < 0) {
            rc = cli_oom();
            goto cleanup;
        }
        weights = allocs_stack_weights(a.p, &c, o.by);
        o.peak = c.peak;
        allocs_counts_free(&c);
    } else if (aggregate_funcs(a.p, &agg) == 0)
        weights = agg.stack_weight;
    if (!weights || calltree_build(&t, a.p, weights, 0) < 0)
        rc = cli_oom();
    else
        rc = print_tree(a.p, &t, &o);

cleanup:
    if (weights != agg.stack_weight)
        free(weights);
    calltree_free(&t);
    aggregate_counts_free(&agg);
    cli_args_free(&a);
    return rc;
}
