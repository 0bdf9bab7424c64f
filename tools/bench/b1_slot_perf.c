// SPDX-License-Identifier: Apache-2.0
//
// B1: the six scenarios of Linux's KVM memslot_perf_test, rebuilt on the
// hosted engine, in SLOT and in ALL zap mode. One vCPU thread touches guest
// memory through the software TLB / walk / fault path (tools/bench/machine.h) while the host
// thread (main) unmaps ranges (the MMU-notifier path, s2_unmap) or moves a
// slot. Sizes as in the Linux test: 512 MiB + 64 KiB of guest memory split
// across N slots starting at 256 MiB; map 32 MiB, unmap 128 MiB (4 KiB or
// 2 MiB chunks), move areas of 192 KiB. Guest memory is real host memory
// mapped with 4 KiB leaves.
//
//   map            guest writes one half of the map area while the host
//                  unmaps the other half; an iteration is both halves
//   unmap          guest touches one page per half; host unmaps the half
//                  page by page
//   unmap_chunked  the same in 2 MiB chunks
//   move_active    guest writes an area half inside the last slot while the
//                  host moves that slot away and back (MMIO exits expected)
//   move_inactive  the same with the area just below the moved slot
//   rw             guest writes a word in every page, host writes another
//                  and checks the guest's; guest checks the host's
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/fmt_x86.h"
#include "tools/bench/bench.h"
#include "tools/bench/machine.h"

#define MEM_EXTRA    (64 * BENCH_KIB)
#define MEM_GPA	     (256 * BENCH_MIB)
#define MEM_TEST_GPA (MEM_GPA + MEM_EXTRA)
#define MAP_SIZE     (32 * BENCH_MIB)
#define UNMAP_SIZE   (128 * BENCH_MIB)
#define UNMAP_CHUNK  (2 * BENCH_MIB)
#define MOVE_SIZE    (192 * BENCH_KIB)
#define MOVE_DEST    (4 * BENCH_GIB)
#define VAL_1	     0x1122334455667788ull
#define VAL_2	     0x99aabbccddeeff00ull
#define PAGE	     4096ull

enum test { T_MAP, T_UNMAP, T_UNMAP_CHUNKED, T_MOVE_ACTIVE, T_MOVE_INACTIVE, T_RW, T_COUNT };
static const char *const test_names[] = {"map",		"unmap",	 "unmap_chunked",
					 "move_active", "move_inactive", "rw"};

struct ctx {
	struct machine m;
	enum test test;
	uint64_t mem_size; // bytes of guest memory (MEM_EXTRA included)
	unsigned nslots;
	uint64_t pages_per_slot;
	uint64_t hpa; // host memory backing MEM_GPA
	uint64_t test_size;
	uint64_t move_area;
	_Atomic bool start, stop, sync;
	_Atomic uint64_t guest_errors;
	struct host_vcpu *vcpu;
};

// ---- guest side (the vCPU thread)

static bool guest_sync(struct ctx *c)
{
	// Wait for the host to raise the flag, take it.
	for (;;) {
		if (atomic_load(&c->stop))
			return false;
		bool t = true;
		if (atomic_compare_exchange_weak(&c->sync, &t, false))
			return true;
	}
}

static void guest_write(struct ctx *c, uint64_t gpa, uint64_t val)
{
	if (host_vcpu_write(c->vcpu, gpa, val) && c->test != T_MOVE_ACTIVE)
		atomic_fetch_add(&c->guest_errors, 1);
}

static void *vcpu_main(void *arg)
{
	struct ctx *c = arg;
	c->vcpu = host_vcpu_new(&c->m.vcpus);
	host_vcpu_exit_guest(c->vcpu);
	while (!atomic_load(&c->start))
		;
	for (;;) {
		switch (c->test) {
		case T_MAP:
			for (uint64_t a = 0; a < MAP_SIZE / 2; a += PAGE)
				guest_write(c, MEM_TEST_GPA + a, VAL_1);
			if (!guest_sync(c))
				goto out;
			for (uint64_t a = MAP_SIZE / 2; a < c->test_size; a += PAGE)
				guest_write(c, MEM_TEST_GPA + a, VAL_2);
			if (!guest_sync(c))
				goto out;
			break;
		case T_UNMAP:
		case T_UNMAP_CHUNKED:
			guest_write(c, MEM_TEST_GPA, VAL_1);
			if (!guest_sync(c))
				goto out;
			guest_write(c, MEM_TEST_GPA + UNMAP_SIZE / 2, VAL_2);
			if (!guest_sync(c))
				goto out;
			break;
		case T_MOVE_ACTIVE:
		case T_MOVE_INACTIVE:
			for (uint64_t a = 0; a < MOVE_SIZE; a += PAGE)
				guest_write(c, c->move_area + a, VAL_1);
			if (atomic_load(&c->stop))
				goto out;
			break;
		case T_RW:
			for (uint64_t a = 0; a < c->test_size; a += PAGE)
				guest_write(c, MEM_TEST_GPA + a, VAL_1);
			if (!guest_sync(c))
				goto out;
			for (uint64_t a = PAGE / 2; a < c->test_size; a += PAGE) {
				uint64_t v = 0;
				if (host_vcpu_read(c->vcpu, MEM_TEST_GPA + a, &v) || v != VAL_2)
					atomic_fetch_add(&c->guest_errors, 1);
				guest_write(c, MEM_TEST_GPA + a, 0);
			}
			if (!guest_sync(c))
				goto out;
			break;
		default:
			goto out;
		}
	}
out:
	host_vcpu_exit_guest(c->vcpu);
	return NULL;
}

// ---- host side

// Raise the flag and wait until the guest took it (it has finished the work
// before its sync point).
static void host_sync(struct ctx *c)
{
	atomic_store(&c->sync, true);
	while (atomic_load(&c->sync))
		;
}

static void host_unmap(struct ctx *c, struct s2_root *root, uint64_t off, uint64_t len,
		       uint64_t chunk)
{
	for (uint64_t a = off; a < off + len; a += chunk)
		if (s2_unmap(c->m.vm, root, MEM_TEST_GPA + a, chunk))
			bench_die("s2_unmap");
}

static uint64_t *hva(struct ctx *c, uint64_t gpa)
{
	return (uint64_t *)(uintptr_t)(c->hpa + (gpa - MEM_GPA));
}

static uint64_t slot_gpa(struct ctx *c, unsigned i)
{
	return MEM_GPA + i * c->pages_per_slot * PAGE;
}

static void host_iteration(struct ctx *c, struct s2_root *root, uint64_t *errors)
{
	switch (c->test) {
	case T_MAP:
		host_unmap(c, root, MAP_SIZE / 2, c->test_size - MAP_SIZE / 2, PAGE);
		host_sync(c);
		host_unmap(c, root, 0, MAP_SIZE / 2, PAGE);
		host_sync(c);
		break;
	case T_UNMAP:
	case T_UNMAP_CHUNKED: {
		uint64_t chunk = c->test == T_UNMAP ? PAGE : UNMAP_CHUNK;
		host_sync(c);
		host_unmap(c, root, 0, UNMAP_SIZE / 2, chunk);
		host_sync(c);
		host_unmap(c, root, UNMAP_SIZE / 2, UNMAP_SIZE / 2, chunk);
		break;
	}
	case T_MOVE_ACTIVE:
	case T_MOVE_INACTIVE: {
		unsigned last = c->nslots - 1;
		if (s2_slot_move(c->m.vm, 0, 1 + last, MOVE_DEST) ||
		    s2_slot_move(c->m.vm, 0, 1 + last, slot_gpa(c, last)))
			bench_die("s2_slot_move");
		break;
	}
	case T_RW:
		for (uint64_t a = PAGE / 2; a < c->test_size; a += PAGE)
			*hva(c, MEM_TEST_GPA + a) = VAL_2;
		host_sync(c);
		for (uint64_t a = 0; a < c->test_size; a += PAGE) {
			uint64_t *p = hva(c, MEM_TEST_GPA + a);
			if (*p != VAL_1)
				(*errors)++;
			*p = 0;
		}
		host_sync(c);
		break;
	default:
		break;
	}
	machine_reclaim(&c->m);
}

static void run_test(struct bench_json *j, const struct host_costs *costs, enum test t,
		     enum s2_zap_mode mode, unsigned nslots, double seconds)
{
	uint64_t mem = t == T_MAP			      ? MAP_SIZE + MEM_EXTRA
		       : t == T_UNMAP || t == T_UNMAP_CHUNKED ? UNMAP_SIZE + MEM_EXTRA
							      : 512 * BENCH_MIB + MEM_EXTRA;
	if (mem / PAGE < nslots) { // as the Linux test: each slot needs a page
		bj_obj(j, NULL);
		bj_str(j, "test", test_names[t]);
		bj_str(j, "mode", mode == S2_ZAP_ALL ? "all" : "slot");
		bj_u64(j, "slots", nslots);
		bj_str(j, "skipped", "fewer guest pages than slots");
		bj_obj_end(j);
		return;
	}
	struct ctx *c = calloc(1, sizeof(*c));
	if (!c)
		bench_die("out of memory");
	c->test = t;
	c->nslots = nslots;
	c->mem_size = mem;
	c->test_size = c->mem_size - MEM_EXTRA;
	uint64_t pages = c->mem_size / PAGE;
	c->pages_per_slot = pages / nslots;
	machine_init(&c->m, costs);
	c->m.be->ops.cmo_clean_inval = NULL; // x86: no cache maintenance
	struct s2_vm *vm = machine_vm_create(&c->m, &s2_fmt_ept4, s2_fmt_ept4.caps, mode);
	// Host memory 2 MiB aligned plus 4 KiB: 4 KiB leaves only (like the
	// Linux test's anonymous memory without THP).
	c->hpa = machine_guest_mem(c->mem_size + PAGE, 2 * BENCH_MIB) + PAGE;

	uint64_t t0 = bench_now_ns();
	for (unsigned i = 0; i < nslots; i++) {
		uint64_t np = c->pages_per_slot + (i == nslots - 1 ? pages % nslots : 0);
		int r = s2_slot_add(vm, 0, 1 + i, slot_gpa(c, i), np * PAGE,
				    c->hpa + (slot_gpa(c, i) - MEM_GPA), 0);
		if (r)
			bench_die("s2_slot_add %u: %d", i, r);
	}
	uint64_t setup_ns = bench_now_ns() - t0;

	uint64_t last = slot_gpa(c, nslots - 1);
	c->move_area = t == T_MOVE_ACTIVE ? last - MOVE_SIZE / 2 : last - MOVE_SIZE;
	struct s2_root *root;
	if (s2_root_get(vm, (struct s2_role){0, 0}, &root))
		bench_die("s2_root_get");

	pthread_t th;
	pthread_create(&th, NULL, vcpu_main, c);
	struct s2_stats st0, st1;
	s2_vm_stats(vm, &st0);
	uint64_t iters = 0, errors = 0;
	atomic_store(&c->start, true);
	t0 = bench_now_ns();
	uint64_t limit = (uint64_t)(seconds * 1e9), now;
	while ((now = bench_now_ns()) - t0 < limit) {
		host_iteration(c, root, &errors);
		iters++;
		bench_progress("b1", "%s %s %u slots: %llu iterations", test_names[t],
			       mode == S2_ZAP_ALL ? "all" : "slot", nslots,
			       (unsigned long long)iters);
	}
	uint64_t elapsed = bench_now_ns() - t0;
	atomic_store(&c->stop, true);
	pthread_join(th, NULL);
	bench_progress_done();
	s2_vm_stats(vm, &st1);

	bj_obj(j, NULL);
	bj_str(j, "test", test_names[t]);
	bj_str(j, "mode", mode == S2_ZAP_ALL ? "all" : "slot");
	bj_u64(j, "slots", nslots);
	bj_u64(j, "mem_bytes", c->mem_size);
	bj_u64(j, "iterations", iters);
	bj_u64(j, "elapsed_ns", elapsed);
	bj_f64(j, "ns_per_iter", iters ? (double)elapsed / (double)iters : 0);
	bj_u64(j, "setup_ns", setup_ns);
	bj_u64(j, "guest_accesses", c->vcpu->accesses);
	bj_u64(j, "tlb_misses", c->vcpu->tlb_misses);
	bj_u64(j, "faults", c->vcpu->faults);
	bj_u64(j, "mmio_exits", c->vcpu->mmio_exits);
	bj_u64(j, "root_reloads", c->vcpu->reloads);
	bj_u64(j, "leaves_zapped", st1.leaves_zapped - st0.leaves_zapped);
	bj_u64(j, "zap_all", st1.zap_all - st0.zap_all);
	bj_u64(j, "verify_errors", errors + atomic_load(&c->guest_errors));
	machine_counts_emit(j, &c->m);
	bj_obj_end(j);

	host_vcpu_free(c->vcpu);
	s2_root_put(vm, root);
	machine_vm_destroy(&c->m);
	machine_guest_mem_free(c->hpa - PAGE, c->mem_size + PAGE);
	free(c);
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	double seconds = (double)bench_arg_u64(argc, argv, "ms", quick ? 250 : 2000) / 1000.0;
	const char *slots_arg = bench_arg_str(argc, argv, "slots", quick ? "8" : "2,32,127,32763");
	struct host_costs costs;
	machine_costs_from_args(&costs, argc, argv);

	struct bench_json j;
	bench_begin(&j, "b1_slot_perf", "ok");
	bj_obj(&j, "params");
	bj_str(&j, "format", "EPT 4-level");
	bj_f64(&j, "seconds_per_test", seconds);
	bj_str(&j, "slots", slots_arg);
	bj_u64(&j, "mem_gpa", MEM_GPA);
	bj_u64(&j, "move_size", MOVE_SIZE);
	machine_costs_emit(&j, &costs);
	bj_obj_end(&j);
	bj_arr(&j, "results");
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", slots_arg);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned n = (unsigned)strtoul(tok, NULL, 0);
		if (n < 2 || n > S2_MAX_SLOTS - 1)
			bench_die("slots must be 2..%d", S2_MAX_SLOTS - 1);
		for (int t = 0; t < T_COUNT; t++)
			for (int m = 0; m < 2; m++)
				run_test(&j, &costs, t, m ? S2_ZAP_ALL : S2_ZAP_SLOT, n, seconds);
	}
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
