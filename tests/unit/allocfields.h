/*
 * allocfields: one allocation event's fields for logenc, for the unit tests that write
 * ALLOCS records (test_logenc) and read them back (test_logdec).  Test code, header only.
 *
 *   alloc_at(t_us, thread_idx, stack_id, size, address, domain, flags, nstack_id)
 */
#ifndef PYPROF_TEST_ALLOCFIELDS_H
#define PYPROF_TEST_ALLOCFIELDS_H

#include <stdint.h>

#include "common/logenc.h"

static inline logenc_alloc_fields alloc_at(uint64_t t_us, uint64_t thread_idx,
                                           uint64_t stack_id, uint64_t size, uint64_t address,
                                           uint8_t domain, uint64_t flags, uint64_t nstack_id)
{
    return (logenc_alloc_fields){.t_us = t_us,
                                 .thread_idx = thread_idx,
                                 .stack_id = stack_id,
                                 .size = size,
                                 .address = address,
                                 .domain = domain,
                                 .flags = flags,
                                 .nstack_id = nstack_id};
}

#endif
