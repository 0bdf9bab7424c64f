// SPDX-License-Identifier: Apache-2.0
//
// The physical floor of a teardown: the time to read, once and sequentially,
// as many bytes as the translation tables of a mapping occupy. No teardown can
// be faster than touching each table entry once; the ratio of a policy's time
// to this floor says how much of the teardown is bookkeeping and maintenance.
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tools/bench/bench.h"
#include "tools/bench/floor.h"

uint64_t floor_table_pages(uint64_t bytes, uint64_t page_size, unsigned levels)
{
	// Entries of the leaf level, then one table per 512 entries of each level
	// up to the root (one table at least per level).
	uint64_t entries = (bytes + page_size - 1) / page_size, pages = 0;
	unsigned level_of_leaf = page_size >= BENCH_GIB ? 2 : page_size >= 2 * BENCH_MIB ? 1 : 0;
	for (unsigned l = level_of_leaf; l < levels; l++) {
		uint64_t tables = (entries + 511) / 512;
		pages += tables;
		entries = tables;
	}
	return pages;
}

volatile uint64_t floor_sink; // keeps the reads from being optimised away

static uint64_t read_all(const uint64_t *p, size_t words)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < words; i++)
		sum += p[i];
	return sum;
}

// Best of `reps` sequential reads of `pages` 4 KiB pages written beforehand.
uint64_t floor_read_ns(uint64_t pages, unsigned reps)
{
	size_t len = (size_t)pages * 4096;
	uint64_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		bench_die("floor: cannot map %zu bytes", len);
	// Entries that look like table entries (not zero pages the kernel shares).
	for (size_t i = 0; i < len / 8; i++)
		buf[i] = (i << 12) | 0x7;
	uint64_t best = UINT64_MAX;
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t0 = bench_now_ns();
		floor_sink += read_all(buf, len / 8);
		uint64_t dt = bench_now_ns() - t0;
		best = dt < best ? dt : best;
	}
	munmap(buf, len);
	return best;
}

void floor_emit(struct bench_json *j, uint64_t mapped, uint64_t page_size, unsigned levels)
{
	uint64_t pages = floor_table_pages(mapped, page_size, levels);
	uint64_t ns = floor_read_ns(pages, 3);
	bj_obj(j, NULL);
	bj_u64(j, "page_size", page_size);
	bj_u64(j, "mapped_bytes", mapped);
	bj_u64(j, "table_pages", pages);
	bj_u64(j, "table_bytes", pages * 4096);
	bj_u64(j, "read_ns", ns);
	bj_f64(j, "read_gib_per_s",
	       ns ? (double)(pages * 4096) / (double)BENCH_GIB / (ns * 1e-9) : 0);
	bj_obj_end(j);
}
