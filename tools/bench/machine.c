// SPDX-License-Identifier: Apache-2.0
//
// The benchmarks' machine; see machine.h.
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tools/bench/machine.h"

// ---- costs

void machine_costs_from_args(struct host_costs *c, int argc, char **argv)
{
	// Modelled, not measured: a broadcast context invalidation with its
	// barrier ~2 us; a range call ~300 ns plus ~50 ns a page; cleaning 4 KiB
	// to PoC (64 lines) ~400 ns. Override with cost_*=NS.
	c->inval_context_ns = bench_arg_u64(argc, argv, "cost_inval_context", 2000);
	c->inval_range_ns = bench_arg_u64(argc, argv, "cost_inval_range", 300);
	c->inval_page_ns = bench_arg_u64(argc, argv, "cost_inval_page", 50);
	c->cmo_4k_ns = bench_arg_u64(argc, argv, "cost_cmo_4k", 400);
	// A kick: ~1 us to send the IPIs; per vCPU in guest mode ~2 us for the
	// exit, the request check and the acknowledgement seen by the sender.
	c->kick_ns = bench_arg_u64(argc, argv, "cost_kick", 1000);
	c->kick_ack_ns = bench_arg_u64(argc, argv, "cost_kick_ack", 2000);
}

void machine_costs_emit(struct bench_json *j, const struct host_costs *c)
{
	bj_obj(j, "costs_ns");
	bj_u64(j, "inval_context", c->inval_context_ns);
	bj_u64(j, "inval_range", c->inval_range_ns);
	bj_u64(j, "inval_page", c->inval_page_ns);
	bj_u64(j, "cmo_4k", c->cmo_4k_ns);
	bj_u64(j, "kick", c->kick_ns);
	bj_u64(j, "kick_ack", c->kick_ack_ns);
	bj_obj_end(j);
}

// ---- backend and VM

void machine_init(struct machine *m, const struct host_costs *costs)
{
	memset(m, 0, sizeof(*m));
	m->be = host_be_new();
	if (!m->be)
		bench_die("out of memory (host_be)");
	m->be->costs = *costs;
	m->be->fast_free = true; // freed pages are not poisoned or quarantined
}

struct s2_vm *machine_vm_create(struct machine *m, const struct s2_fmt *fmt, unsigned caps,
				enum s2_zap_mode mode)
{
	struct s2_vm_config cfg = host_be_config(m->be, fmt);

	cfg.caps = caps;
	cfg.zap_mode = mode;
	cfg.ncpus = HOST_MAX_CPUS; // every thread may run a vCPU
	int r = s2_vm_create(&cfg, &m->vm);
	if (r)
		bench_die("s2_vm_create: %d", r);
	host_vcpus_init(&m->vcpus, m->be, m->vm);
	return m->vm;
}

void machine_vm_destroy(struct machine *m)
{
	host_vcpus_fini(&m->vcpus);
	s2_vm_destroy(m->vm);
	m->vm = NULL;
	host_be_free(m->be);
	m->be = NULL;
}

void machine_reclaim(struct machine *m)
{
	s2_reclaim(m->vm); // the engine's deferred frees (mm/defer.c)
}

// ---- counters

static uint64_t tables_deferred(struct machine *m)
{
	struct s2_stats st;

	s2_vm_stats(m->vm, &st);
	return st.tables_deferred;
}

void machine_counts_reset(struct machine *m)
{
	host_be_counts(m->be, &m->mark);
	m->mark_deferred = tables_deferred(m);
}

struct host_counts machine_counts(struct machine *m)
{
	struct host_counts now, d;
	const uint64_t *a = (const uint64_t *)&now, *b = (const uint64_t *)&m->mark;
	uint64_t *o = (uint64_t *)&d;

	// host_counts is a flat structure of uint64_t counters.
	_Static_assert(sizeof(now) % sizeof(uint64_t) == 0, "host_counts: uint64_t only");
	host_be_counts(m->be, &now);
	for (size_t i = 0; i < sizeof(now) / sizeof(uint64_t); i++)
		o[i] = a[i] - b[i];
	return d;
}

void machine_counts_emit(struct bench_json *j, struct machine *m)
{
	struct host_counts n = machine_counts(m);

	bj_obj(j, "backend");
	bj_u64(j, "inval_context", n.inval_context);
	bj_u64(j, "inval_range", n.inval_range);
	bj_u64(j, "inval_range_pages", n.inval_range_pages);
	bj_u64(j, "cmo_calls", n.cmo_calls);
	bj_u64(j, "cmo_bytes", n.cmo_bytes);
	bj_u64(j, "pages_alloc", n.alloc_pages);
	bj_u64(j, "pages_freed", n.free_pages);
	bj_u64(j, "pages_deferred", tables_deferred(m) - m->mark_deferred);
	bj_u64(j, "kicks", n.kicks);
	bj_u64(j, "kick_acks", n.kick_acks);
	bj_u64(j, "kick_wait_ns", n.kick_wait_ns);
	bj_u64(j, "modelled_ns", n.cost_ns);
	bj_obj_end(j);
}

// ---- guest memory

uint64_t machine_guest_mem(uint64_t size, uint64_t align)
{
	size_t len = size + align;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		bench_die("cannot reserve %llu bytes of guest memory", (unsigned long long)size);
	uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	return a;
}

uint64_t machine_guest_mem_aliased(uint64_t size, uint64_t chunk)
{
	if (size <= chunk)
		return machine_guest_mem(size, 2 * BENCH_MIB);
	int fd = memfd_create("slat-bench-guest", 0);
	if (fd < 0 || ftruncate(fd, (off_t)chunk))
		bench_die("memfd for aliased guest memory");
	uint64_t base = machine_guest_mem(size, 2 * BENCH_MIB);
	for (uint64_t off = 0; off < size; off += chunk) {
		void *p = mmap((void *)(uintptr_t)(base + off), chunk, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, fd, 0);
		if (p == MAP_FAILED)
			bench_die("aliased guest memory mapping");
	}
	close(fd);
	return base;
}

void machine_guest_mem_free(uint64_t hpa, uint64_t size)
{
	// The reservation around it (alignment slack) stays: benchmarks are short.
	munmap((void *)(uintptr_t)hpa, size);
}
