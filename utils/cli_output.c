/*
 * cli_output: what the commands write besides their text: stdout's end, pages.  See
 * cli_output.h.
 */
#include "cli_output.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_close_stdout(void)
{
    /* fflush finds most errors; fclose the ones a file system reports only at close. */
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        cli_error("error writing to standard output: %s", strerror(err ? err : EIO));
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

int cli_write_page(const char *cmd, const char *path, const char *tpl, size_t tpl_len,
                   int (*write_data)(FILE *f, void *ctx), void *ctx)
{
    static const char marker[] = "/*PYPROF_DATA*/";
    const char *mark = memmem(tpl, tpl_len, marker, sizeof marker - 1);
    if (!mark) {
        cli_error("%s: the embedded page template has no data marker (a build problem)", cmd);
        return CLI_EXIT_BAD_INPUT;
    }
    int to_stdout = !strcmp(path, "-");
    FILE *out = to_stdout ? stdout : fopen(path, "w");
    if (!out) {
        cli_error("%s: cannot create: %s", path, strerror(errno));
        return CLI_EXIT_BAD_INPUT;
    }
    /* A page cut short is removed, but only a regular file: never a device or a pipe the
     * user named (-o /dev/stdout). */
    struct stat st;
    int regular = !to_stdout && fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);
    fwrite(tpl, 1, (size_t)(mark - tpl), out);
    int err = write_data(out, ctx);
    const char *rest = mark + sizeof marker - 1;
    fwrite(rest, 1, (size_t)(tpl + tpl_len - rest), out);
    if (to_stdout)
        return CLI_EXIT_OK; /* main checks that stdout got everything */
    int bad = ferror(out);
    if (!err)
        err = errno;
    if (fclose(out) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        cli_error("%s: cannot write: %s", path, strerror(err ? err : EIO));
        if (regular)
            unlink(path);
        return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}
