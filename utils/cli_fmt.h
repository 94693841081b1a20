/*
 * cli_fmt: numbers as the outputs write them — shares, estimated counts, sizes,
 * durations and times of day.
 *
 * Interface: cli_bytes_count, cli_pct, cli_fmt_bytes, cli_fmt_ns, cli_fmt_unix_ns.
 */
#ifndef PYPROF_CLI_FMT_H
#define PYPROF_CLI_FMT_H

#include <stddef.h>
#include <stdint.h>

/* An estimate of bytes or objects as the outputs give it: rounded to a whole number, 0
 * for anything below 0.5 (and for NaN). */
uint64_t cli_bytes_count(double v);

/* 100 * part / whole, 0 when whole is 0. */
double cli_pct(uint64_t part, uint64_t whole);

/* "12.3 MiB" into buf. */
const char *cli_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* "10 ms", "500 us", "1.5 s" into buf. */
const char *cli_fmt_ns(uint64_t ns, char *buf, size_t len);

/* "2024-05-01 12:00:00.123 UTC" into buf. */
const char *cli_fmt_unix_ns(uint64_t ns, char *buf, size_t len);

#endif
