/*
 * logfile: naming, creating and compressing the log.  See logfile.h.
 */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <pyprof/format.h>

#include "common/clock.h"
#include "common/config.h"
#include "diag.h"
#include "ownfd.h"

/* ---- naming and creating ------------------------------------------------------------ */

static int random_suffix(char *out, size_t len)
{
    static const char chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint8_t r[16];
    if (len > sizeof r || getrandom(r, len, GRND_NONBLOCK) != (ssize_t)len)
        return -1;
    for (size_t i = 0; i < len; i++)
        out[i] = chars[r[i] % (sizeof chars - 1)];
    out[len] = 0;
    return 0;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int logfile_check_dir(const char *out, char *dir, size_t dircap, char *err, size_t errlen)
{
    if (out[0]) {
        snprintf(dir, dircap, "%s", out);
        if (!is_dir(dir) && dir[strlen(dir) - 1] != '/') {
            /* A template: the directory is what precedes its last '/'. */
            char *slash = strrchr(dir, '/');
            if (slash)
                slash[slash == dir ? 1 : 0] = 0;
            else
                snprintf(dir, dircap, ".");
        }
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(dir, dircap, "%s", t && t[0] ? t : "/tmp");
    }
    if (!is_dir(dir) || access(dir, W_OK | X_OK) != 0) {
        snprintf(err, errlen, "pyprof: PYPROF_OUTPUT: directory %s is %s; not profiling", dir,
                 is_dir(dir) ? "not writable" : "missing");
        return -1;
    }
    return 0;
}

/* Creates the log file: O_EXCL, 0600, O_NOFOLLOW; a random suffix when the name from the
 * template is taken (or always, with the default name).  Its descriptor, or -1. */
static int create_file(logfile *lf, const logfile_naming *nm)
{
    char start[32];
    time_t now = (time_t)(nm->start_unix_ns / 1000000000ull);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(start, sizeof start, "%Y%m%dT%H%M%S", &tm);
    char seq[16];
    snprintf(seq, sizeof seq, "%04u", nm->seq);
    config_template_vars v = {.pid = nm->pid,
                              .ppid = nm->ppid,
                              .prog = nm->prog,
                              .start = start,
                              .host = nm->host,
                              .run_id = nm->run_id,
                              .seq = seq};
    const char *out = nm->output;
    int template = out[0] && !is_dir(out) && out[strlen(out) - 1] != '/';
    /* A rotated series whose template has no %s: ".<seq>" before ".lz4", or at the end. */
    int add_seq = template && nm->series && !strstr(out, "%s");
    char name[PATH_MAX];
    for (int attempt = 0; attempt < 20; attempt++) {
        char rnd[8];
        if (random_suffix(rnd, 6) < 0)
            snprintf(rnd, sizeof rnd, "%06d", (int)(clock_mono_ns() % 1000000));
        if (template) {
            if (config_expand_template(out, &v, name, sizeof name) < 0)
                return -1;
            if (add_seq) {
                size_t l = strlen(name);
                int ext = l > 4 && strcmp(name + l - 4, ".lz4") == 0;
                if (ext)
                    name[l - 4] = 0;
                size_t room = sizeof name - strlen(name);
                if ((size_t)snprintf(name + strlen(name), room, ".%s%s", seq,
                                     ext ? ".lz4" : "") >= room)
                    return -1;
            }
            if (attempt > 0) {
                /* Taken: put the random part before a .lz4 extension, or at the end. */
                size_t l = strlen(name);
                char tail[16] = "";
                if (l > 4 && strcmp(name + l - 4, ".lz4") == 0) {
                    strcpy(tail, ".lz4");
                    name[l - 4] = 0;
                }
                size_t room = sizeof name - strlen(name);
                if ((size_t)snprintf(name + strlen(name), room, ".%s%s", rnd, tail) >= room)
                    return -1;
            }
        } else {
            const char *dir = out[0]
                                  ? out
                                  : (getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR")
                                                                             : "/tmp");
            size_t dl = strlen(dir);
            if ((size_t)snprintf(name, sizeof name, "%s%spyprof.%s.%ld.%s%s%s.lz4", dir,
                                 dl && dir[dl - 1] == '/' ? "" : "/", nm->prog, nm->pid,
                                 nm->series ? seq : "", nm->series ? "." : "",
                                 rnd) >= sizeof name)
                return -1;
        }
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            fd = ownfd_move(fd);
            snprintf(lf->path, sizeof lf->path, "%s", name);
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    diag_error("pyprof: cannot create %s: %s; not profiling", name, strerror(errno));
    return -1;
}

/* ---- the compressed frame ----------------------------------------------------------- */

static void write_all(logfile *lf, const void *buf, size_t len)
{
    if (lf->failed || lf->fd < 0)
        return;
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(lf->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            diag_error("pyprof: cannot write %s: %s; profiling data from now on is lost",
                       lf->path, n < 0 ? strerror(errno) : "short write");
            lf->failed = 1;
            if (lf->write_failed)
                lf->write_failed();
            return;
        }
        p += n;
        len -= (size_t)n;
        lf->written += (uint64_t)n;
    }
}

static void compress_stage(logfile *lf)
{
    if (!lf->stage_len)
        return;
    if (!lf->cctx || lf->failed) {
        lf->stage_len = 0;
        return;
    }
    size_t n = LZ4F_compressUpdate(lf->cctx, lf->out, lf->out_cap, lf->stage, lf->stage_len,
                                   NULL);
    lf->stage_len = 0;
    if (LZ4F_isError(n)) {
        diag_error("pyprof: compression failed: %s", LZ4F_getErrorName(n));
        lf->failed = 1;
        return;
    }
    write_all(lf, lf->out, n);
}

int logfile_init(logfile *lf, void (*write_failed)(void))
{
    memset(lf, 0, sizeof *lf);
    lf->fd = -1;
    lf->write_failed = write_failed;
    lf->stage = malloc(LOGFILE_STAGE_BYTES);
    return lf->stage ? 0 : -1;
}

int logfile_open(logfile *lf, const logfile_naming *nm)
{
    if (lf->fd >= 0 || lf->failed)
        return lf->fd >= 0 ? 0 : -1;
    int fd = create_file(lf, nm);
    if (fd < 0) {
        lf->failed = 1;
        return -1;
    }
    lf->fd = fd;
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockLinked;
    prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
    prefs.compressionLevel = 0;
    if (LZ4F_isError(LZ4F_createCompressionContext(&lf->cctx, LZ4F_VERSION))) {
        lf->failed = 1;
        return -1;
    }
    lf->out_cap = LZ4F_compressBound(LOGFILE_STAGE_BYTES * 2, &prefs) + 64;
    lf->out = malloc(lf->out_cap);
    if (!lf->out) {
        lf->failed = 1;
        return -1;
    }
    size_t n = LZ4F_compressBegin(lf->cctx, lf->out, lf->out_cap, &prefs);
    if (LZ4F_isError(n)) {
        lf->failed = 1;
        return -1;
    }
    write_all(lf, lf->out, n);
    memcpy(lf->stage, PYPROF_MAGIC, PYPROF_MAGIC_LEN);
    lf->stage_len = PYPROF_MAGIC_LEN;
    return 0;
}

void logfile_emit(logfile *lf, uint8_t type, const rec_out *payload)
{
    if (lf->stage_len + payload->len + 16 > LOGFILE_STAGE_BYTES)
        compress_stage(lf);
    if (payload->len + 16 > LOGFILE_STAGE_BYTES) {
        /* Larger than the stage (a huge CODE record): compress it on its own. */
        if (!lf->cctx || lf->failed)
            return;
        uint8_t *tmp = malloc(payload->len + 16);
        if (!tmp)
            return;
        size_t n = rec_envelope(tmp, payload->len + 16, type, payload->buf, payload->len);
        size_t c = LZ4F_compressUpdate(lf->cctx, lf->out, lf->out_cap, tmp, n, NULL);
        free(tmp);
        if (!LZ4F_isError(c))
            write_all(lf, lf->out, c);
        return;
    }
    lf->stage_len += rec_envelope(lf->stage + lf->stage_len,
                                  LOGFILE_STAGE_BYTES - lf->stage_len, type, payload->buf,
                                  payload->len);
}

void logfile_flush(logfile *lf)
{
    compress_stage(lf);
    if (!lf->cctx)
        return;
    size_t n = LZ4F_flush(lf->cctx, lf->out, lf->out_cap, NULL);
    if (!LZ4F_isError(n))
        write_all(lf, lf->out, n);
}

void logfile_close(logfile *lf)
{
    if (lf->fd < 0)
        return;
    compress_stage(lf);
    if (lf->cctx && lf->out) {
        size_t n = LZ4F_compressEnd(lf->cctx, lf->out, lf->out_cap, NULL);
        if (!LZ4F_isError(n))
            write_all(lf, lf->out, n);
    }
    close(lf->fd);
    lf->fd = -1;
}

void logfile_free(logfile *lf)
{
    if (lf->fd >= 0)
        close(lf->fd);
    if (lf->cctx)
        LZ4F_freeCompressionContext(lf->cctx);
    free(lf->stage);
    free(lf->out);
    memset(lf, 0, sizeof *lf);
    lf->fd = -1;
}
