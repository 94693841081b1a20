/*
 * cmd_systemd: `pyprof systemd enable|disable SERVICE` — writes or removes the drop-in
 * that profiles a systemd service (/etc/systemd/system/NAME.service.d/pyprof.conf, the
 * packaged example's settings with this installation's library, and perf_event_open
 * added to the unit's SystemCallFilter= when its files under the unit directories have
 * one), and says what to run next.  It never talks to systemd itself: the operator
 * reloads and restarts when it suits the service.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd.h"

const char cmd_systemd_usage[] =
    "usage: pyprof systemd enable [--start] [--lib PATH] [--root DIR] [--force] SERVICE\n"
    "       pyprof systemd disable [--root DIR] SERVICE\n"
    "\n"
    "enable writes /etc/systemd/system/SERVICE.service.d/pyprof.conf, a drop-in that\n"
    "preloads the profiler into every process of the service: logs in\n"
    "/var/log/pyprof/SERVICE.service/ (made by systemd for the service's user, mode 0700),\n"
    "a new log every hour and the last 24 kept per process, and sampling paused until\n"
    "the service gets SIGUSR2 (each USR2 toggles it).  When the unit's files (under the\n"
    "usual unit directories) filter system calls with SystemCallFilter=, the drop-in adds\n"
    "perf_event_open to the filter, for the profiler's per-thread CPU timers, unless\n"
    "they deny it by name.  disable removes that file.  Neither reloads systemd: each\n"
    "prints the commands to run.\n"
    "\n"
    "options:\n"
    "  --start       profile from the start instead of waiting for SIGUSR2\n"
    "  --lib PATH    the library to preload (default: this installation's libpyprof.so)\n"
    "  --root DIR    write under DIR instead of / (an image, a container's root)\n"
    "  --force       replace a drop-in that is already there\n"
    "  -h, --help    show this text\n"
    "\n"
    "exit status: 0 done; 1 could not (already enabled, not enabled, cannot write);\n"
    "2 usage\n"
    "\n"
    "examples:\n"
    "  pyprof systemd enable vdsmd && systemctl daemon-reload && systemctl restart vdsmd\n"
    "  systemctl kill --kill-who=main --signal=USR2 vdsmd    # sampling on, then off\n"
    "  pyprof report /var/log/pyprof/vdsmd.service\n";

#define DROPIN_DIR "/etc/systemd/system"

/* The unit's name, with ".service" added when it has no suffix.  -1 for a name systemd
 * would not take for a service (one line said). */
static int unit_name(const char *arg, char *out, size_t len)
{
    size_t n = strlen(arg);
    if (!n || n > 240)
        return cli_usage_error("systemd", "'%s' is not a service name", arg);
    for (size_t i = 0; i < n; i++) {
        char c = arg[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr(":_.@-\\", c)))
            return cli_usage_error("systemd", "'%s' is not a service name", arg);
    }
    const char *dot = strrchr(arg, '.');
    static const char *const others[] = {".socket", ".timer",    ".target", ".mount",
                                         ".path",   ".slice",    ".scope",  ".device",
                                         ".swap",   ".automount"};
    for (size_t i = 0; dot && i < sizeof others / sizeof others[0]; i++)
        if (!strcmp(dot, others[i]))
            return cli_usage_error("systemd", "'%s' is not a service", arg);
    int has = dot && !strcmp(dot, ".service");
    snprintf(out, len, "%s%s", arg, has ? "" : ".service");
    return 0;
}

/* ---- the unit's system call filter ------------------------------------------------- */

/* Where systemd looks for units, most important first. */
static const char *const unit_dirs[] = {"/etc/systemd/system", "/run/systemd/system",
                                        "/usr/local/lib/systemd/system",
                                        "/usr/lib/systemd/system", "/lib/systemd/system"};
#define N_UNIT_DIRS (sizeof unit_dirs / sizeof unit_dirs[0])

enum { FILTER_NONE, FILTER_SET, FILTER_DENIES_PERF };

/* The SystemCallFilter= lines of one unit file or drop-in, in order, into *state: an
 * empty value resets the filter; a value that denies perf_event_open by name ("~..."),
 * FILTER_DENIES_PERF for good; any other value, FILTER_SET. */
static void scan_filter(const char *path, int *state)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *p = line + strspn(line, " \t");
        if (strncmp(p, "SystemCallFilter", 16))
            continue;
        p += 16;
        p += strspn(p, " \t");
        if (*p++ != '=')
            continue;
        p += strspn(p, " \t");
        p[strcspn(p, "\r\n")] = 0;
        if (!*p)
            *state = FILTER_NONE;
        else if (*state != FILTER_DENIES_PERF)
            *state = *p == '~' && strstr(p, "perf_event_open") ? FILTER_DENIES_PERF
                                                               : FILTER_SET;
    }
    fclose(f);
}

/* Orders paths by their last component. */
static int cmp_names_last(const void *a, const void *b)
{
    const char *x = strrchr(*(char *const *)a, '/'), *y = strrchr(*(char *const *)b, '/');
    return strcmp(x ? x + 1 : *(char *const *)a, y ? y + 1 : *(char *const *)b);
}

/* The drop-ins of `name` (NAME.d/ *.conf in every unit directory under `root`, ours left
 * out), scanned in the order systemd reads them: by file name, a name in a more important
 * directory hiding the same name in a less important one. */
static void scan_dropins(const char *root, const char *name, int *state)
{
    enum { MAX_DROPINS = 128 };
    char *paths[MAX_DROPINS];
    size_t n = 0;
    for (size_t d = 0; d < N_UNIT_DIRS; d++) {
        char dir[PATH_MAX];
        if ((size_t)snprintf(dir, sizeof dir, "%s%s/%s.d", root, unit_dirs[d], name) >=
            sizeof dir)
            continue;
        DIR *dh = opendir(dir);
        if (!dh)
            continue;
        struct dirent *e;
        while ((e = readdir(dh)) && n < MAX_DROPINS) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".conf") ||
                !strcmp(e->d_name, "pyprof.conf"))
                continue;
            int hidden = 0;
            for (size_t i = 0; i < n && !hidden; i++)
                hidden = !strcmp(strrchr(paths[i], '/') + 1, e->d_name);
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (!hidden && (paths[n] = strdup(path)))
                n++;
        }
        closedir(dh);
    }
    qsort(paths, n, sizeof paths[0], cmp_names_last);
    for (size_t i = 0; i < n; i++) {
        scan_filter(paths[i], state);
        free(paths[i]);
    }
}

/* The unit file `name` under `root`, the first found in unit_dirs, into *state.  1 when
 * there is one. */
static int scan_unit_file(const char *root, const char *name, int *state)
{
    for (size_t d = 0; d < N_UNIT_DIRS; d++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s%s/%s", root, unit_dirs[d], name);
        if (access(path, F_OK) == 0) {
            scan_filter(path, state);
            return 1;
        }
    }
    return 0;
}

/* Whether the service's unit file and drop-ins under `root` filter system calls: one of
 * FILTER_*.  A template's instance ("a@b.service") without a file of its own is read from
 * the template's ("a@.service"), and gets the template's drop-ins before its own. */
static int unit_filter(const char *root, const char *unit)
{
    char tmpl[256] = "";
    const char *at = strchr(unit, '@');
    if (at && at[1] != '.')
        snprintf(tmpl, sizeof tmpl, "%.*s@.service", (int)(at - unit), unit);
    int state = FILTER_NONE;
    if (!scan_unit_file(root, unit, &state) && *tmpl)
        scan_unit_file(root, tmpl, &state);
    if (*tmpl)
        scan_dropins(root, tmpl, &state);
    scan_dropins(root, unit, &state);
    return state;
}

/* The drop-in's text for `lib`. */
static void dropin_text(char *out, size_t len, const char *unit, const char *lib, int start,
                        int allow_perf)
{
    (void)!snprintf(out, len,
                    "# Written by `pyprof systemd enable %s`;\n"
                    "# `pyprof systemd disable %s` removes it.\n"
                    "# Each process of the service writes its logs to /var/log/pyprof/%s/,\n"
                    "# which systemd makes for the service's User= (LogsDirectory=, 0700).\n"
                    "%s"
                    "# LD_PRELOAD here replaces one the unit sets: add that library to the\n"
                    "# line if it has one.\n"
                    "[Service]\n"
                    "Environment=LD_PRELOAD=%s\n"
                    "Environment=PYPROF_OUTPUT=/var/log/pyprof/%%n/\n"
                    "%s"
                    "Environment=PYPROF_ROTATE=1h\n"
                    "Environment=PYPROF_KEEP=24\n"
                    "LogsDirectory=pyprof/%%n\n"
                    "LogsDirectoryMode=0700\n"
                    "%s",
                    unit, unit, unit,
                    start ? ""
                          : "# Sampling starts paused; each SIGUSR2 to the main process "
                            "toggles it.\n",
                    lib, start ? "" : "Environment=PYPROF_SIGNAL=USR2\n",
                    allow_perf ? "# The unit filters system calls: its filter lets the "
                                 "profiler's per-thread CPU\n"
                                 "# timers be made (without it, a process CPU timer "
                                 "stands in).\n"
                                 "SystemCallFilter=perf_event_open\n"
                               : "");
}

/* mkdir -p of `path` (mode 0755).  0, or -1 with errno. */
static int make_dirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = c;
        if (rc < 0 && errno != EEXIST)
            return -1;
        if (!c)
            return 0;
    }
}

/* Writes `text` to `path` whole or not at all: a temporary file beside it, renamed. */
static int write_file(const char *path, const char *text)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int err = fchmod(fd, 0644) < 0 || write(fd, text, n) != (ssize_t)n || fsync(fd) < 0;
    int saved = errno;
    if (close(fd) < 0 && !err) {
        err = 1;
        saved = errno;
    }
    if (!err && rename(tmp, path) == 0)
        return 0;
    unlink(tmp);
    errno = saved;
    return -1;
}

int cmd_systemd(int argc, char **argv)
{
    static const struct option opts[] = {
        {"start", no_argument, NULL, 's'},      {"lib", required_argument, NULL, 'l'},
        {"root", required_argument, NULL, 'r'}, {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        if (argc >= 2) {
            fputs(cmd_systemd_usage, stdout);
            return CLI_EXIT_OK;
        }
        return cli_usage_error("systemd", "say enable or disable");
    }
    const char *verb = argv[1];
    int enable = !strcmp(verb, "enable");
    if (!enable && strcmp(verb, "disable"))
        return cli_usage_error("systemd", "unknown action '%s' (enable or disable)", verb);
    const char *lib = NULL, *root = "";
    int start = 0, force = 0;
    opterr = 0;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(cmd_systemd_usage, stdout);
            return CLI_EXIT_OK;
        }
        if (!enable && (c == 's' || c == 'l' || c == 'f'))
            return cli_usage_error("systemd", "'%s' is an option of enable", argv[optind - 1]);
        if (c == 's')
            start = 1;
        else if (c == 'l')
            lib = optarg;
        else if (c == 'r')
            root = optarg;
        else if (c == 'f')
            force = 1;
        else
            return cli_bad_option("systemd", c, argv);
    }
    if (optind != argc - 1)
        return cli_usage_error("systemd", "name one service");
    char unit[256];
    if (unit_name(argv[optind], unit, sizeof unit))
        return CLI_EXIT_USAGE;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if ((size_t)snprintf(dir, sizeof dir, "%s%s/%s.d", root, DROPIN_DIR, unit) >= sizeof dir) {
        cli_error("path too long under %s", root);
        return CLI_EXIT_BAD_INPUT;
    }
    snprintf(path, sizeof path, "%s/pyprof.conf", dir);

    if (!enable) {
        if (unlink(path) < 0) {
            if (errno == ENOENT)
                cli_error("%s is not profiled: there is no %s", unit, path);
            else
                cli_error("cannot remove %s: %s", path, strerror(errno));
            return CLI_EXIT_BAD_INPUT;
        }
        rmdir(dir); /* only when nothing else is in it */
        printf("removed %s\n"
               "now run: systemctl daemon-reload && systemctl restart %s\n",
               path, unit);
        return CLI_EXIT_OK;
    }

    char found[PATH_MAX];
    if (!lib) {
        if (cli_find_library(found, sizeof found) < 0) {
            cli_error("cannot find libpyprof.so (give it with --lib PATH)");
            return CLI_EXIT_BAD_INPUT;
        }
        lib = found;
    }
    if (lib[0] != '/' || strpbrk(lib, " \t\n\"'\\%$")) {
        cli_error("--lib: '%s' is not an absolute path systemd can take as it is", lib);
        return CLI_EXIT_BAD_INPUT;
    }
    if (access(path, F_OK) == 0 && !force) {
        cli_error("%s is already profiled: %s exists (--force replaces it)", unit, path);
        return CLI_EXIT_BAD_INPUT;
    }
    int filter = unit_filter(root, unit);
    char text[3 * PATH_MAX];
    dropin_text(text, sizeof text, unit, lib, start, filter == FILTER_SET);
    if (make_dirs(dir) < 0 || write_file(path, text) < 0) {
        cli_error("cannot write %s: %s", path, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    printf("wrote %s\n"
           "now run: systemctl daemon-reload && systemctl restart %s\n"
           "logs:    /var/log/pyprof/%s/%s%s\n",
           path, unit, unit,
           start ? ""
                 : "\nsampling starts paused: systemctl kill --kill-who=main --signal=USR2 "
                   "toggles it",
           filter == FILTER_SET ? "\nthe unit filters system calls: the drop-in adds "
                                  "perf_event_open to its SystemCallFilter="
           : filter == FILTER_DENIES_PERF
               ? "\nthe unit's SystemCallFilter= denies perf_event_open: the profiler "
                 "samples with a process CPU timer"
               : "");
    return CLI_EXIT_OK;
}
