/*
 * report: what the reports of `pyprof report` share.  See report.h.
 */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>

#include "cli_text.h"

void report_print_process(const profile_process *pr)
{
    printf("\nprocess %" PRIu64 " (parent %" PRIu64 "), run %s", pr->pid, pr->ppid, pr->run_id);
    if (pr->window)
        printf(" window %" PRIu64, pr->window);
    fputs(": ", stdout);
    cli_print_argv(stdout, pr->argv, pr->argc);
}

void report_json_u64_or_null(jsonw *w, const char *key, int known, uint64_t v)
{
    jsonw_key(w, key);
    if (known)
        jsonw_u64(w, v);
    else
        jsonw_null(w);
}

void report_json_process_ident(jsonw *w, const profile_process *pr)
{
    jsonw_key_u64(w, "pid", pr->pid);
    jsonw_key_u64(w, "ppid", pr->ppid);
    jsonw_key_string(w, "run_id", pr->run_id);
    jsonw_key(w, "argv");
    jsonw_begin_array(w);
    for (size_t k = 0; k < pr->argc; k++)
        jsonw_string(w, pr->argv[k]);
    jsonw_end_array(w);
}
