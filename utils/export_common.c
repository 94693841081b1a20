/*
 * export_common: the helpers the export writers share (export.h).
 */
#include "export.h"

#include "cli.h"
#include "read/allocs.h"

int export_oom(void)
{
    cli_error("out of memory");
    return -1;
}

uint64_t *export_memory_weights(const profile *p, int by)
{
    allocs_counts c;
    if (allocs_sum(p, &c) < 0)
        return NULL;
    uint64_t *w = allocs_stack_weights(p, &c, by);
    allocs_counts_free(&c);
    return w;
}
