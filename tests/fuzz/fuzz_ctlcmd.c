/*
 * fuzz_ctlcmd: a libFuzzer target for what the control socket makes of a client's bytes:
 * the framing of a request (ctlsock_feed, ctlsock_line_ok in src/lib/ctlsock.c) and the
 * request line's parse (ctlcmd_parse in src/lib/ctlcmd.c).  A client is any process of the
 * same user; the library parses what it sends inside the profiled program.
 *
 * An input is
 *
 *     errlen (1 byte) | chunking seed (1 byte) | the bytes the client sends
 *
 * The bytes are fed to ctlsock_feed in chunks of pseudo-random sizes (from the seed), as
 * recv() may cut them, into a line buffer of exactly CTLSOCK_LINE_MAX + 1 bytes.  What is
 * checked:
 *   - the framing does not depend on the chunking: the line is the bytes before the first
 *     '\n' (a '\r' before it dropped) when that '\n' comes within CTLSOCK_LINE_MAX bytes,
 *     TOO_LONG when it does not, MORE when the bytes end first; the length never exceeds
 *     CTLSOCK_LINE_MAX and a complete line is NUL-terminated;
 *   - ctlsock_line_ok accepts exactly the lines of printable ASCII;
 *   - ctlcmd_parse (on every line the socket would serve: a complete line, or what came
 *     before the client closed its side) splits the line's first 299 bytes at spaces and
 *     tabs like an independent split here does: one or two words, an argument only to
 *     period and clock, the words pointing into the request's own buffer; a refusal is
 *     "error: ...\n", the same at every size of the error buffer up to the cut, and always
 *     NUL-terminated inside it (errlen from 0 to 255; ASan catches a byte past it);
 *   - the argument goes through the parser the request would use (period: a duration,
 *     clock: cpu or wall), as ctlcmd_handle does after the parse.
 *
 * The rest of the control path acts on the live library (windows, the writer, the dump);
 * it is stubbed out here, and a stub that is called aborts.
 *
 * Built and run by `make fuzz` (tests/fuzz/README.md); `make fuzz-replay` replays
 * tests/fuzz/corpus-ctlcmd/ with tests/fuzz/replay_main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "lib/ctlcmd.h"
#include "lib/ctlsock.h"
#include "lib/ownthreads.h"
#include "lib/sampler.h"
#include "lib/wall.h"
#include "lib/window.h"
#include "lib/writer.h"
#include "fuzz.h"

/* ---- the live library, which the parse never reaches ---------------------------------- */

void writer_status(writer_status_info *st, uint64_t rounds_cpu_ns)
{
    (void)st, (void)rounds_cpu_ns;
    abort();
}

int writer_request(int op, char *path, size_t cap)
{
    (void)op, (void)path, (void)cap;
    abort();
}

int sampler_native(void) { abort(); }

const char *sampler_timer_name(void) { abort(); }

int wall_snapshot(uint32_t snapshot_id)
{
    (void)snapshot_id;
    abort();
}

int ownthreads_start(pthread_t *thread, void *(*start)(void *), void *arg)
{
    (void)thread, (void)start, (void)arg;
    abort();
}

void ownthreads_name_self(const char *role)
{
    (void)role;
    abort();
}

void window_lock(void) { abort(); }
void window_unlock(void) { abort(); }
int window_is_open(void) { abort(); }
void window_pause(void) { abort(); }
uint64_t window_cron_cpu_ns(void) { abort(); }

void window_config(pyprof_config *out)
{
    (void)out;
    abort();
}

int window_resume(const pyprof_config *cfg)
{
    (void)cfg;
    abort();
}

/* ---- the checks ----------------------------------------------------------------------- */

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* The framing by its definition: the result for the whole stream, and the line. */
static int expected_frame(const uint8_t *s, size_t n, char *line, size_t *len)
{
    const uint8_t *nl = memchr(s, '\n', n);
    size_t k = nl ? (size_t)(nl - s) : n;
    if (k > CTLSOCK_LINE_MAX)
        return CTLSOCK_TOO_LONG;
    memcpy(line, s, k);
    if (nl && k && line[k - 1] == '\r')
        k--;
    line[k] = 0;
    *len = k;
    return nl ? CTLSOCK_LINE : CTLSOCK_MORE;
}

static void check_parse(const char *line, size_t errlen)
{
    /* The words, split here without strtok: of the first 299 bytes, as ctlcmd_parse. */
    char copy[300];
    size_t n = strlen(line);
    if (n > sizeof copy - 1)
        n = sizeof copy - 1;
    memcpy(copy, line, n);
    copy[n] = 0;
    const char *word[3] = {0};
    size_t wlen[3] = {0};
    int nwords = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && is_space(copy[i]))
            i++;
        if (i == n)
            break;
        size_t start = i;
        while (i < n && !is_space(copy[i]))
            i++;
        if (nwords < 3) {
            word[nwords] = copy + start;
            wlen[nwords] = i - start;
        }
        nwords++;
    }

    ctlcmd_req req;
    static char big[512];
    int rc = ctlcmd_parse(line, &req, big, sizeof big);
    int takes_arg = nwords >= 1 && ((wlen[0] == 6 && !memcmp(word[0], "period", 6)) ||
                                    (wlen[0] == 5 && !memcmp(word[0], "clock", 5)));
    int ok = nwords == 1 || (nwords == 2 && takes_arg);
    CHECK((rc == 0) == ok);
    if (rc == 0) {
        CHECK(req.name >= req.buf && req.name < req.buf + sizeof req.buf);
        CHECK(strlen(req.name) == wlen[0] && !memcmp(req.name, word[0], wlen[0]));
        if (nwords == 2) {
            CHECK(req.arg && req.arg >= req.buf && req.arg < req.buf + sizeof req.buf);
            CHECK(strlen(req.arg) == wlen[1] && !memcmp(req.arg, word[1], wlen[1]));
            /* What ctlcmd_handle does with it next. */
            uint64_t ns;
            int clock;
            if (req.name[0] == 'p' && config_parse_duration(req.arg, CONFIG_PERIOD_MIN_NS,
                                                            CONFIG_PERIOD_MAX_NS, &ns) == 0)
                CHECK(ns >= CONFIG_PERIOD_MIN_NS && ns <= CONFIG_PERIOD_MAX_NS);
            if (req.name[0] == 'c' && config_parse_clock(req.arg, &clock) == 0)
                CHECK(clock == PYPROF_CLOCK_CPU || clock == PYPROF_CLOCK_WALL);
        } else {
            CHECK(req.arg == NULL);
        }
        return;
    }
    size_t blen = strlen(big);
    CHECK(blen > 8 && blen < sizeof big);
    CHECK(!strncmp(big, "error: ", 7) && big[blen - 1] == '\n');

    /* The same refusal into an error buffer of exactly errlen bytes: cut, terminated. */
    char *err = malloc(errlen ? errlen : 1);
    if (!err)
        return;
    memset(err, 'X', errlen ? errlen : 1);
    CHECK(ctlcmd_parse(line, &req, err, errlen) < 0);
    if (errlen) {
        size_t elen = strnlen(err, errlen);
        CHECK(elen < errlen);
        CHECK(elen == (blen < errlen ? blen : errlen - 1));
        CHECK(!memcmp(err, big, elen));
    } else {
        CHECK(err[0] == 'X');
    }
    free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t errlen = data[0];
    uint32_t seed = data[1] * 2654435761u + 1;
    const uint8_t *s = data + 2;
    size_t n = size - 2;

    char want[CTLSOCK_LINE_MAX + 1];
    size_t want_len = 0;
    int want_rc = expected_frame(s, n, want, &want_len);

    /* Exactly the room a client's line has. */
    char *line = malloc(CTLSOCK_LINE_MAX + 1);
    if (!line)
        return 0;
    size_t len = 0, at = 0;
    int rc = CTLSOCK_MORE;
    while (at < n && rc == CTLSOCK_MORE) {
        seed = seed * 1103515245u + 12345u;
        size_t chunk = 1 + (seed >> 16) % 600; /* recv() takes up to 512 at a time */
        if (chunk > n - at)
            chunk = n - at;
        rc = ctlsock_feed(line, &len, (const char *)s + at, chunk);
        CHECK(rc == CTLSOCK_MORE || rc == CTLSOCK_LINE || rc == CTLSOCK_TOO_LONG);
        CHECK(len <= CTLSOCK_LINE_MAX);
        at += chunk;
    }
    CHECK(rc == want_rc);
    if (rc != CTLSOCK_TOO_LONG) {
        CHECK(len == want_len);
        if (rc == CTLSOCK_MORE)
            line[len] = 0; /* the client closed its side: the line as it is */
        CHECK(line[len] == 0 && !memcmp(line, want, len));
        int printable = 1;
        for (size_t i = 0; i < len; i++)
            printable &= (unsigned char)line[i] >= 0x20 && (unsigned char)line[i] <= 0x7e;
        CHECK(ctlsock_line_ok(line, len) == printable);
        /* The socket serves only lines of printable text (and, at close, only a line
         * that is not empty); every printable line is parsed here. */
        if (printable)
            check_parse(line, errlen);
    }
    free(line);
    return 0;
}
