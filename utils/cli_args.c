/*
 * cli_args: the command line of the commands that read logs, and the logs loaded.  See
 * cli_args.h.
 */
#include "cli_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_parse.h"

static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    if (!s[0] || s[0] == '-')
        return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

static int append_u64(uint64_t **list, size_t *n, uint64_t v)
{
    uint64_t *l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n)++] = v;
    *list = l;
    return 0;
}

static int append_str(const char ***list, size_t *n, const char *s)
{
    const char **l = realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n)++] = s;
    *list = l;
    return 0;
}

int cli_filter_option(cli_filter *cf, const char *cmd, int opt, const char *arg)
{
    uint64_t v;
    switch (opt) {
    case CLI_OPT_PID:
    case CLI_OPT_THREAD:
        if (parse_u64(arg, &v) < 0)
            return cli_usage_error(cmd, "--%s: '%s' is not a process or thread id",
                                   opt == CLI_OPT_PID ? "pid" : "thread", arg);
        if (opt == CLI_OPT_PID ? append_u64(&cf->pids, &cf->f.npids, v)
                               : append_u64(&cf->tids, &cf->f.ntids, v))
            return cli_oom();
        cf->f.pids = cf->pids;
        cf->f.tids = cf->tids;
        return 1;
    case CLI_OPT_RUN:
    case CLI_OPT_SPAN:
        if (opt == CLI_OPT_RUN ? append_str(&cf->runs, &cf->f.nruns, arg)
                               : append_str(&cf->spans, &cf->f.nspan_names, arg))
            return cli_oom();
        cf->f.runs = cf->runs;
        cf->f.span_names = cf->spans;
        return 1;
    case CLI_OPT_TASK:
        if (append_str(&cf->tasks, &cf->f.ntask_globs, arg))
            return cli_oom();
        cf->f.task_globs = cf->tasks;
        return 1;
    case CLI_OPT_AWAITING:
        cf->f.awaiting = 1;
        return 1;
    case CLI_OPT_GIL_WAIT:
        cf->f.gil_wait = 1;
        return 1;
    case CLI_OPT_FROM:
    case CLI_OPT_TO: {
        double s;
        int rc = cli_parse_seconds(cmd, opt == CLI_OPT_FROM ? "from" : "to", arg, &s);
        if (rc)
            return rc;
        if (opt == CLI_OPT_FROM) {
            cf->f.has_from = 1;
            cf->f.from_s = s;
        } else {
            cf->f.has_to = 1;
            cf->f.to_s = s;
        }
        if (cf->f.has_from && cf->f.has_to && cf->f.to_s < cf->f.from_s)
            return cli_usage_error(cmd, "--to %g is before --from %g", cf->f.to_s,
                                   cf->f.from_s);
        return 1;
    }
    default:
        return 0;
    }
}

void cli_filter_free(cli_filter *cf)
{
    free(cf->pids);
    free(cf->tids);
    free(cf->runs);
    free(cf->spans);
    free(cf->tasks);
    memset(cf, 0, sizeof *cf);
}

int cli_no_logs(const char *cmd, int nlogs)
{
    return nlogs > 0 ? -1 : cli_usage_error(cmd, "no log given");
}
/* --root DIR: an existing directory, kept as an absolute path (the recorded paths are
 * appended to it) in *root, replacing an earlier one.  0, or an exit code after printing
 * why. */
static int parse_root(const char *cmd, const char *arg, char **root)
{
    struct stat st;
    if (stat(arg, &st) < 0)
        return cli_usage_error(cmd, "--root: '%s': %s", arg, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_usage_error(cmd, "--root: '%s' is not a directory", arg);
    char *abs = realpath(arg, NULL);
    if (!abs) {
        if (errno == ENOMEM)
            return cli_oom();
        return cli_usage_error(cmd, "--root: '%s': %s", arg, strerror(errno));
    }
    free(*root);
    *root = abs;
    return 0;
}

/* The options every command that reads logs takes, before its own. */
static const struct option common_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"native-glue", no_argument, NULL, CLI_OPT_NATIVE_GLUE},
    {"root", required_argument, NULL, CLI_OPT_ROOT},
    CLI_FILTER_OPTIONS,
};
#define NCOMMON (sizeof common_options / sizeof common_options[0])
#define MAX_OPTIONS 32

int cli_start(const cli_command *cmd, int argc, char **argv, void *ctx, cli_args *a)
{
    memset(a, 0, sizeof *a);
    struct option longopts[MAX_OPTIONS];
    size_t n = 0;
    for (size_t i = 0; i < NCOMMON; i++)
        longopts[n++] = common_options[i];
    if (cmd->json)
        longopts[n++] = (struct option){"json", no_argument, NULL, CLI_OPT_JSON};
    for (const struct option *o = cmd->options; o && o->name && n + 1 < MAX_OPTIONS; o++)
        longopts[n++] = *o;
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    char shortopts[64];
    snprintf(shortopts, sizeof shortopts, ":h%s", cmd->shortopts ? cmd->shortopts : "");

    int c;
    unsigned load = cmd->load;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int fr = cli_filter_option(&a->cf, cmd->name, c, optarg);
        if (fr == 1)
            continue;
        if (fr)
            return fr;
        if (c == 'h') {
            fputs(cmd->usage, stdout);
            return CLI_EXIT_OK;
        }
        if (c == CLI_OPT_JSON) {
            a->json = 1;
            continue;
        }
        if (c == CLI_OPT_NATIVE_GLUE) {
            load |= PROFILE_NATIVE_GLUE;
            continue;
        }
        if (c == CLI_OPT_ROOT) {
            int rr = parse_root(cmd->name, optarg, &a->root);
            if (rr)
                return rr;
            continue;
        }
        if (c == '?' || c == ':' || !cmd->option)
            return cli_bad_option(cmd->name, c, argv);
        int rc = cmd->option(ctx, c, optarg);
        if (rc)
            return rc;
    }
    if (cmd->load_for)
        load |= cmd->load_for(ctx);
    int nlogs = argc - optind - cmd->nargs;
    int rc = cmd->check ? cmd->check(ctx, nlogs) : cli_no_logs(cmd->name, nlogs);
    if (rc >= 0)
        return rc;
    a->args = argv + optind;
    a->load = load;
    optind += cmd->nargs;
    rc = cli_load(argv + optind, argc - optind, &a->cf.f, load, a->root, &a->p);
    return rc ? rc : -1;
}

void cli_args_free(cli_args *a)
{
    profile_free(a->p);
    cli_filter_free(&a->cf);
    free(a->root);
    memset(a, 0, sizeof *a);
}

int cli_load(char **paths, int npaths, const profile_filter *filter, unsigned options,
             const char *root, profile **out)
{
    *out = NULL;
    profile *p = profile_new(filter, options, root);
    if (!p)
        return cli_oom();
    int rc = CLI_EXIT_OK;
    /* One set: the files of a rotated series load in seq order whatever the order given. */
    if (profile_load_paths(p, (const char *const *)paths, (size_t)npaths) < 0)
        rc = CLI_EXIT_BAD_INPUT;
    /* Warnings first, in the order met, then the error that stopped us. */
    for (size_t i = 0; i < p->nwarnings; i++)
        cli_error("%s", p->warnings[i]);
    if (rc)
        cli_error("%s", p->error);
    if (rc) {
        profile_free(p);
        return rc;
    }
    *out = p;
    return CLI_EXIT_OK;
}
