// SPDX-License-Identifier: Apache-2.0
//
// B2 modification stress (Linux memslot_modification_stress_test): vCPU
// threads write every 4 KiB page of their own memory in a loop while the host
// adds and deletes a one-page slot `iters` times. Measured per configuration
// (vCPUs x bytes per vCPU) in SLOT and ALL zap mode: add+delete latency, the
// pages (leaves) the vCPUs had to fault in again per iteration, the root
// reloads and the delete's own work (leaves and tables zapped, invalidations:
// the engine's s2_stats), and the latency again with the wait for the vCPU
// threads' acknowledgements replaced by a modelled kick cost (tools/bench/machine.h).
//
// Guest memory is one slot backed by 2 MiB-aligned host memory (so faults map
// 2 MiB leaves, like a THP-backed guest); above 64 MiB per vCPU the host pages
// alias a 64 MiB buffer (writes still touch real memory) so that 128 vCPUs x
// 1 GiB fit in a small machine.
//
// The default full run uses 64 MiB per vCPU only: with 1 GiB per vCPU the
// host's own minor faults on the aliased mappings (one per 4 KiB of every
// alias) take over 15 minutes on a 2-core machine; `mib=64,1024` runs both.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86/fmt_x86.h"
#include "tools/bench/bench.h"
#include "tools/bench/machine.h"

#define GUEST_GPA (4 * BENCH_GIB)
#define EXTRA_GPA (1ull << 44)
#define PAGE	  4096ull

struct ctx {
	struct machine m;
	unsigned nvcpus;
	uint64_t bytes;
	_Atomic bool stop;
	_Atomic unsigned warm;
	struct host_vcpu **v;
};

struct arg {
	struct ctx *c;
	unsigned i;
};

static void *vcpu_main(void *p)
{
	struct arg *a = p;
	struct ctx *c = a->c;
	struct host_vcpu *v = host_vcpu_new(&c->m.vcpus);
	c->v[a->i] = v;
	uint64_t base = GUEST_GPA + a->i * c->bytes;
	bool warm = false;
	while (!atomic_load(&c->stop)) {
		for (uint64_t off = 0; off < c->bytes && !atomic_load(&c->stop); off += PAGE)
			if (host_vcpu_write(v, base + off, off))
				bench_die("b2: unexpected MMIO exit at %#llx",
					  (unsigned long long)(base + off));
		if (!warm) {
			warm = true;
			atomic_fetch_add(&c->warm, 1);
		}
	}
	host_vcpu_exit_guest(v);
	return NULL;
}

static void one(struct bench_json *j, const struct host_costs *costs, enum s2_zap_mode mode,
		unsigned nvcpus, uint64_t bytes, unsigned iters, uint64_t delay_us)
{
	struct ctx *c = calloc(1, sizeof(*c));
	c->nvcpus = nvcpus;
	c->bytes = bytes;
	c->v = calloc(nvcpus, sizeof(*c->v));
	machine_init(&c->m, costs);
	c->m.be->ops.cmo_clean_inval = NULL; // x86: no cache maintenance
	struct s2_vm *vm = machine_vm_create(&c->m, &s2_fmt_ept4, s2_fmt_ept4.caps, mode);
	uint64_t total = nvcpus * bytes;
	uint64_t hpa = machine_guest_mem_aliased(total, 64 * BENCH_MIB);
	uint64_t extra = machine_guest_mem(PAGE, PAGE);
	if (s2_slot_add(vm, 0, 1, GUEST_GPA, total, hpa, 0))
		bench_die("s2_slot_add guest memory");

	pthread_t *th = calloc(nvcpus, sizeof(*th));
	struct arg *args = calloc(nvcpus, sizeof(*args));
	for (unsigned i = 0; i < nvcpus; i++) {
		args[i] = (struct arg){c, i};
		pthread_create(&th[i], NULL, vcpu_main, &args[i]);
	}
	while (atomic_load(&c->warm) < nvcpus) {
		bench_progress("b2", "%s %uv x %llu MiB: warming up (%u/%u)",
			       mode == S2_ZAP_ALL ? "all" : "slot", nvcpus,
			       (unsigned long long)(bytes / BENCH_MIB), atomic_load(&c->warm),
			       nvcpus);
		usleep(1000);
	}
	uint64_t faults0 = 0, reloads0 = 0, f, r;
	for (unsigned i = 0; i < nvcpus; i++) {
		faults0 += __atomic_load_n(&c->v[i]->faults, __ATOMIC_RELAXED);
		reloads0 += __atomic_load_n(&c->v[i]->reloads, __ATOMIC_RELAXED);
	}
	machine_counts_reset(&c->m);
	struct bench_samples lat = {0}, model = {0};
	struct s2_stats st0, st1;
	s2_vm_stats(vm, &st0);
	uint64_t t_start = bench_now_ns();
	for (unsigned it = 0; it < iters; it++) {
		uint64_t w0 = __atomic_load_n(&c->m.be->c.kick_wait_ns, __ATOMIC_RELAXED);
		uint64_t t0 = bench_now_ns();
		if (s2_slot_add(vm, 0, 2, EXTRA_GPA, PAGE, extra, 0) || s2_slot_delete(vm, 0, 2))
			bench_die("b2: add/delete of the one-page slot");
		uint64_t dt = bench_now_ns() - t0;
		uint64_t wait = __atomic_load_n(&c->m.be->c.kick_wait_ns, __ATOMIC_RELAXED) - w0;
		bench_samples_add(&lat, dt);
		bench_samples_add(&model, dt > wait ? dt - wait : 0);
		machine_reclaim(&c->m);
		if (delay_us)
			usleep(delay_us);
		bench_progress("b2", "%s %uv x %llu MiB: %u/%u",
			       mode == S2_ZAP_ALL ? "all" : "slot", nvcpus,
			       (unsigned long long)(bytes / BENCH_MIB), it + 1, iters);
	}
	uint64_t elapsed = bench_now_ns() - t_start;
	s2_vm_stats(vm, &st1);
	atomic_store(&c->stop, true);
	for (unsigned i = 0; i < nvcpus; i++)
		pthread_join(th[i], NULL);
	bench_progress_done();
	f = r = 0;
	uint64_t acc = 0;
	for (unsigned i = 0; i < nvcpus; i++) {
		f += c->v[i]->faults;
		r += c->v[i]->reloads;
		acc += c->v[i]->accesses;
	}

	bj_obj(j, NULL);
	bj_str(j, "mode", mode == S2_ZAP_ALL ? "all" : "slot");
	bj_u64(j, "vcpus", nvcpus);
	bj_u64(j, "bytes_per_vcpu", bytes);
	bj_u64(j, "iterations", iters);
	bj_u64(j, "delay_us", delay_us);
	bj_latency(j, "add_delete", &lat);
	// The same without the wait for acknowledging threads (kept in the
	// modelled kick cost instead): what the delete would take on a machine
	// with a core per vCPU.
	bj_latency(j, "add_delete_kick_modelled", &model);
	bj_f64(j, "refaulted_pages_per_iter", (double)(f - faults0) / iters);
	bj_f64(j, "root_reloads_per_iter", (double)(r - reloads0) / iters);
	// The delete's own work (the engine's statistics), per iteration.
	bj_obj(j, "engine_per_iter");
	bj_f64(j, "leaves_zapped", (double)(st1.leaves_zapped - st0.leaves_zapped) / iters);
	bj_f64(j, "tables_zapped", (double)(st1.tables_zapped - st0.tables_zapped) / iters);
	bj_f64(j, "inval_context", (double)(st1.inval_context - st0.inval_context) / iters);
	bj_f64(j, "inval_range", (double)(st1.inval_range - st0.inval_range) / iters);
	bj_f64(j, "roots_alloc", (double)(st1.roots_alloc - st0.roots_alloc) / iters);
	bj_f64(j, "yields", (double)(st1.yields - st0.yields) / iters);
	bj_obj_end(j);
	bj_u64(j, "elapsed_ns", elapsed);
	bj_u64(j, "guest_accesses", acc);
	machine_counts_emit(j, &c->m);
	bj_obj_end(j);

	for (unsigned i = 0; i < nvcpus; i++)
		host_vcpu_free(c->v[i]);
	machine_vm_destroy(&c->m);
	bench_samples_free(&lat);
	bench_samples_free(&model);
	free(th);
	free(args);
	free(c->v);
	free(c);
}

static unsigned parse_list(const char *s, uint64_t *out, unsigned max)
{
	char buf[128];
	unsigned n = 0;
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *save, *t = strtok_r(buf, ",", &save); t && n < max;
	     t = strtok_r(NULL, ",", &save))
		out[n++] = strtoull(t, NULL, 0);
	return n;
}

int main(int argc, char **argv)
{
	bool quick = bench_arg_u64(argc, argv, "quick", 0);
	const char *vl = bench_arg_str(argc, argv, "vcpus", quick ? "1,8" : "1,8,64,128");
	const char *ml = bench_arg_str(argc, argv, "mib", "64");
	unsigned iters = bench_arg_u64(argc, argv, "iters", quick ? 10 : 10);
	uint64_t delay = bench_arg_u64(argc, argv, "delay_us", 1000);
	struct host_costs costs;
	machine_costs_from_args(&costs, argc, argv);
	uint64_t vs[8], ms[8];
	unsigned nv = parse_list(vl, vs, 8), nm = parse_list(ml, ms, 8);

	struct bench_json j;
	bench_begin(&j, "b2_mod_stress", "ok");
	bj_obj(&j, "params");
	bj_str(&j, "format", "EPT 4-level");
	bj_str(&j, "vcpus", vl);
	bj_str(&j, "mib_per_vcpu", ml);
	bj_u64(&j, "iterations", iters);
	bj_u64(&j, "delay_us", delay);
	bj_u64(&j, "leaf_size", 2 * BENCH_MIB);
	machine_costs_emit(&j, &costs);
	bj_obj_end(&j);
	bj_arr(&j, "results");
	for (unsigned a = 0; a < nm; a++)
		for (unsigned b = 0; b < nv; b++)
			for (int m = 0; m < 2; m++)
				one(&j, &costs, m ? S2_ZAP_ALL : S2_ZAP_SLOT, (unsigned)vs[b],
				    ms[a] * BENCH_MIB, iters, delay);
	bj_arr_end(&j);
	bench_end(&j);
	return 0;
}
