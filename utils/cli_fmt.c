/*
 * cli_fmt: numbers, sizes, durations and times as the outputs write them.  See cli_fmt.h.
 */
#include "cli_fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

uint64_t cli_bytes_count(double v)
{
    if (!(v >= 0.5))
        return 0;
    if (v >= 18446744073709551616.0) /* 2^64 */
        return UINT64_MAX;
    return (uint64_t)(v + 0.5);
}

double cli_pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

const char *cli_fmt_ns(uint64_t ns, char *buf, size_t len)
{
    if (ns >= 1000000000ull)
        snprintf(buf, len, "%g s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%g ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, len, "%g us", (double)ns / 1e3);
    else
        snprintf(buf, len, "%" PRIu64 " ns", ns);
    return buf;
}

const char *cli_fmt_unix_ns(uint64_t ns, char *buf, size_t len)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    char day[64];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(day, sizeof day, "%" PRIu64, ns / UINT64_C(1000000000));
    snprintf(buf, len, "%s.%03u UTC", day, (unsigned)(ns % 1000000000ull / 1000000ull));
    return buf;
}
