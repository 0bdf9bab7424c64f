// SPDX-License-Identifier: Apache-2.0
//
// B3 root-load latency: T vCPU threads run on one root that maps `mapped`
// bytes with 4 KiB leaves. Each round the host invalidates all roots
// (s2_roots_invalidate_all: mark invalid under the write lock, kick the vCPUs,
// zap the invalid root under the read lock); every vCPU then drops its root
// and loads a new one while the zapper is still running. The latency of each
// put+get is recorded. Two designs of the same engine, switched per VM:
//   lock_light  root get/put under the mmu lock held for read (default)
//   write_lock  root get/put under the mmu lock held for write (the baseline)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/fmt_x86.h"
#include "tools/bench/bench.h"
#include "tools/bench/machine.h"

#include "mm/s2_testhooks.h"

#define PAGE 4096ull

struct ctx {
	struct machine m;
	unsigned nthreads;
	uint64_t hpa;
	_Atomic bool stop;
	_Atomic unsigned ready;
	struct host_vcpu **v;
	struct bench_samples *lat;
};

struct arg {
	struct ctx *c;
	unsigned i;
};

// A vCPU's reload latency, into its samples.
static void sample_reload(void *samples, uint64_t ns)
{
	bench_samples_add(samples, ns);
}

static void *vcpu_main(void *p)
{
	struct arg *a = p;
	struct ctx *c = a->c;
	struct host_vcpu *v = host_vcpu_new(&c->m.vcpus);
	c->v[a->i] = v;
	// The first root load is not a reload after invalidation: not sampled.
	v->on_reload = NULL;
	if (host_vcpu_write(v, a->i * PAGE, 1))
		bench_die("b3: MMIO exit");
	v->on_reload_ctx = &c->lat[a->i];
	v->on_reload = sample_reload;
	atomic_fetch_add(&c->ready, 1);
	// Guest work: keep writing one page (each access checks reload requests).
	while (!atomic_load(&c->stop))
		if (host_vcpu_write(v, a->i * PAGE, 2))
			bench_die("b3: MMIO exit");
	host_vcpu_exit_guest(v);
	return NULL;
}

static void one(struct bench_json *j, const struct host_costs *costs, bool write_lock,
		unsigned nthreads, uint64_t mapped, unsigned rounds)
{
	struct ctx *c = calloc(1, sizeof(*c));
	c->nthreads = nthreads;
	c->v = calloc(nthreads, sizeof(*c->v));
	c->lat = calloc(nthreads, sizeof(*c->lat));
	machine_init(&c->m, costs);
	c->m.be->ops.cmo_clean_inval = NULL; // x86: no cache maintenance
	struct s2_vm *vm = machine_vm_create(&c->m, &s2_fmt_ept4, s2_fmt_ept4.caps, S2_ZAP_SLOT);
	s2_vm_set_root_lock_write(vm, write_lock);
	// 4 KiB leaves: host memory 2 MiB aligned plus 4 KiB.
	c->hpa = machine_guest_mem(mapped + PAGE, 2 * BENCH_MIB) + PAGE;
	if (s2_slot_add(vm, 0, 1, 0, mapped, c->hpa, 0))
		bench_die("s2_slot_add");
	struct s2_root *root;
	if (s2_root_get(vm, (struct s2_role){0, 0}, &root) ||
	    s2_map(vm, root, 0, mapped, c->hpa, S2_PROT_R | S2_PROT_W, S2_MT_WB))
		bench_die("b3: initial map");

	pthread_t *th = calloc(nthreads, sizeof(*th));
	struct arg *args = calloc(nthreads, sizeof(*args));
	for (unsigned i = 0; i < nthreads; i++) {
		args[i] = (struct arg){c, i};
		pthread_create(&th[i], NULL, vcpu_main, &args[i]);
	}
	while (atomic_load(&c->ready) < nthreads)
		sched_yield();

	struct s2_stats st0, st1;
	s2_vm_stats(vm, &st0);
	struct bench_samples zap = {0};
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t t0 = bench_now_ns();
		s2_roots_invalidate_all(vm);
		bench_samples_add(&zap, bench_now_ns() - t0);
		// The host's own reference goes too; wait until every vCPU runs on
		// a new root, then map the range again for the next round's zapper.
		s2_root_put(vm, root);
		for (unsigned i = 0; i < nthreads; i++)
			while (__atomic_load_n(&c->v[i]->reloads, __ATOMIC_ACQUIRE) < r + 2)
				sched_yield();
		if (s2_root_get(vm, (struct s2_role){0, 0}, &root) ||
		    s2_map(vm, root, 0, mapped, c->hpa, S2_PROT_R | S2_PROT_W, S2_MT_WB))
			bench_die("b3: map");
		machine_reclaim(&c->m);
		bench_progress("b3", "%s %u threads: round %u/%u",
			       write_lock ? "write_lock" : "lock_light", nthreads, r + 1, rounds);
	}
	atomic_store(&c->stop, true);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	bench_progress_done();
	s2_vm_stats(vm, &st1);

	struct bench_samples all = {0};
	for (unsigned i = 0; i < nthreads; i++)
		for (size_t k = 0; k < c->lat[i].n; k++)
			bench_samples_add(&all, c->lat[i].v[k]);

	bj_obj(j, NULL);
	bj_str(j, "design", write_lock ? "write_lock" : "lock_light");
	bj_u64(j, "threads", nthreads);
	bj_u64(j, "rounds", rounds);
	bj_u64(j, "mapped_bytes", mapped);
	bj_latency(j, "load", &all);
	bj_histogram(j, "histogram", &all);
	bj_latency(j, "invalidate_all_latency", &zap);
	bj_u64(j, "lock_read", st1.lock_read - st0.lock_read);
	bj_u64(j, "lock_write", st1.lock_write - st0.lock_write);
	bj_u64(j, "lock_contended", st1.lock_contended - st0.lock_contended);
	bj_u64(j, "yields", st1.yields - st0.yields);
	bj_u64(j, "roots_alloc", st1.roots_alloc - st0.roots_alloc);
	bj_obj_end(j);

	for (unsigned i = 0; i < nthreads; i++) {
		c->v[i]->on_reload = NULL;
		host_vcpu_free(c->v[i]);
		bench_samples_free(&c->lat[i]);
	}
	s2_root_put(vm, root);
	machine_vm_destroy(&c->m);
	bench_samples_free(&all);
	bench_samples_free(&zap);
	machine_guest_mem_free(c->hpa - PAGE, mapped + PAGE);
	free(th);
	free(args);
	free(c->lat);
	free(c->v);
	free(c);
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	const char *tl = bench_arg_str(argc, argv, "threads", quick ? "8,24" : "8,24,112,256");
	uint64_t mapped = bench_arg_u64(argc, argv, "mapped", quick ? 256 * BENCH_MIB : BENCH_GIB);
	unsigned rounds = bench_arg_u64(argc, argv, "rounds", quick ? 5 : 20);
	struct host_costs costs;
	machine_costs_from_args(&costs, argc, argv);

	struct bench_json j;
	bench_begin(&j, "b3_root_load", "ok");
	bj_obj(&j, "params");
	bj_str(&j, "format", "EPT 4-level");
	bj_str(&j, "threads", tl);
	bj_u64(&j, "mapped_bytes", mapped);
	bj_u64(&j, "rounds", rounds);
	machine_costs_emit(&j, &costs);
	bj_obj_end(&j);
	bj_arr(&j, "results");
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", tl);
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned n = (unsigned)strtoul(t, NULL, 0);
		one(&j, &costs, false, n, mapped, rounds);
		one(&j, &costs, true, n, mapped, rounds);
	}
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
