// SPDX-License-Identifier: Apache-2.0
//
// Physical floor of a teardown (see floor.c).
#ifndef SLAT_TOOLS_BENCH_FLOOR_H
#define SLAT_TOOLS_BENCH_FLOOR_H

#include <stdint.h>

#include "tools/bench/bench.h"

// 4 KiB table pages that map `bytes` with leaves of `page_size` in a
// `levels`-level radix tree of 512-entry tables.
uint64_t floor_table_pages(uint64_t bytes, uint64_t page_size, unsigned levels);
// Best of `reps` sequential reads of that many pages (written beforehand).
uint64_t floor_read_ns(uint64_t pages, unsigned reps);
extern volatile uint64_t floor_sink;
// One floor measurement as a JSON object (array element).
void floor_emit(struct bench_json *j, uint64_t mapped, uint64_t page_size, unsigned levels);

#endif
