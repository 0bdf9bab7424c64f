// SPDX-License-Identifier: Apache-2.0
//
// The entry protocol of secondary vCPUs under concurrency (core/hv_run.c):
// two threads, each a physical CPU running a vCPU of the same VM through
// VCPU_RUN, cache translations in a software TLB while "in guest mode" (what
// hardware does) and drop it only when hv_vcpu_enter says flush. The main
// thread adds, moves and deletes slots meanwhile. Property: once a DELETE or
// MOVE has returned, no vCPU uses a translation of the old range, cached or
// not; every deposited page comes back at the end. Second: a kick that is
// lost (merged into one the target had pending, as NMIs merge) is sent again,
// so the flusher's wait ends. Runs under TSan too.
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/host/hv_host.h"
#include "core/hv_internal.h"

#define RAM_SIZE  (64ull << 20)
#define SLAT_SIZE (1ull << 20)
#define PG	  4096ull
#define NSLOTS	  8u
#define SLOT_PG	  16u
#define ROUNDS	  300u
#define TLB_N	  64u

static uint8_t *ram;
static uint64_t ram_pa, next_free;

// The main thread publishes which gpa range is dead (deleted or moved away)
// after the call that made it so has returned: [dead_lo, dead_hi).
static uint64_t dead_lo, dead_hi, dead_seq;
static uint32_t stop;
static uint64_t violations, accesses, flushes;
static uint64_t vm_id;

static uint64_t prim_pages(unsigned n)
{
	uint64_t pa = next_free;
	next_free += n * PG;
	assert_true(next_free <= ram_pa + RAM_SIZE - SLAT_SIZE);
	return pa;
}

static int64_t call(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		    uint64_t a5, uint64_t *res)
{
	struct hc_regs r = {HC_FN(fn), {a0, a1, a2, a3, a4, a5}};
	hv_dispatch(NULL, &r);
	if (res)
		*res = r.a[0];
	return (int64_t)r.fn;
}

struct tlb {
	uint64_t gpa[TLB_N], hpa[TLB_N];
	unsigned n;
	uint64_t rng;
};
static __thread struct tlb tlb;

static uint64_t rnd(void)
{
	tlb.rng ^= tlb.rng << 13;
	tlb.rng ^= tlb.rng >> 7;
	tlb.rng ^= tlb.rng << 17;
	return tlb.rng;
}

// One guest access in guest mode: the TLB first, else a walk of the root.
// Returns false when the access needs an exit (a SLAT fault).
static bool access_in_guest(struct vcpu *v, uint64_t gpa)
{
	uint64_t seq = __atomic_load_n(&dead_seq, __ATOMIC_ACQUIRE);
	uint64_t lo = __atomic_load_n(&dead_lo, __ATOMIC_ACQUIRE);
	uint64_t hi = __atomic_load_n(&dead_hi, __ATOMIC_ACQUIRE);
	bool dead =
	    seq && gpa >= lo && gpa < hi && seq == __atomic_load_n(&dead_seq, __ATOMIC_ACQUIRE);

	__atomic_fetch_add(&accesses, 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < tlb.n; i++)
		if (tlb.gpa[i] == gpa) {
			if (dead)
				__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
			return true;
		}
	struct s2_xlate x;
	s2_translate(v->vm->hv.s2, v->hv.root, gpa, &x);
	if (!x.mapped)
		return false;
	if (dead)
		__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
	unsigned k = tlb.n < TLB_N ? tlb.n++ : (unsigned)(rnd() % TLB_N);
	tlb.gpa[k] = gpa;
	tlb.hpa[k] = x.hpa;
	return true;
}

// The hosted guest: stays in guest mode until kicked or a fault, like a CPU.
static int churn_guest(struct vcpu *v, struct hc_run *run)
{
	unsigned cpu = arch_hv_pcpu();

	for (unsigned entries = 0; entries < 64; entries++) {
		struct hv_entry e;
		int r = hv_vcpu_enter(v, &e);
		if (r)
			return r;
		if (e.flush) {
			tlb.n = 0;
			__atomic_fetch_add(&flushes, 1, __ATOMIC_RELAXED);
		}
		uint64_t gpa = 0;
		bool faulted = false;
		// Long stays in guest mode with locality (mostly cached pages): only
		// a kick, a fault or 8192 accesses end one.
		// A kick is taken 2048 accesses after it was sent (interrupt latency),
		// so the flusher's wait for the exit is what keeps stale entries out.
		unsigned taken_in = 0;
		for (unsigned k = 0; k < 8192; k++) {
			if (!taken_in &&
			    __atomic_exchange_n(&host_hv_kick_flag[cpu], 0, __ATOMIC_ACQ_REL))
				taken_in = 2048;
			if (taken_in && --taken_in == 0)
				break;
			if (tlb.n && rnd() % 8)
				gpa = tlb.gpa[rnd() % tlb.n];
			else
				gpa =
				    (rnd() % (NSLOTS * 2)) * SLOT_PG * PG + (rnd() % SLOT_PG) * PG;
			if (!access_in_guest(v, gpa)) {
				faulted = true;
				break;
			}
		}
		hv_vcpu_exited(v);
		if (faulted && hv_vcpu_fault(v, gpa, true, false) == HC_E_NOMEM)
			return HC_E_NOMEM;
	}
	run->reason = HC_EXIT_PREEMPTED;
	return HC_OK;
}

static uint64_t run_pages[2];

static void *vcpu_thread(void *arg)
{
	unsigned idx = (unsigned)(uintptr_t)arg;

	host_hv_set_pcpu(idx + 1);
	tlb.rng = 0x9e3779b97f4a7c15ull * (idx + 1);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		uint64_t reason;
		int64_t r = call(HC_VCPU_RUN, vm_id, idx, run_pages[idx], 0, 0, 0, &reason);
		assert_true(r == HC_OK || r == HC_E_NOMEM);
	}
	return NULL;
}

static uint64_t slot_frames(void)
{
	uint64_t list = prim_pages(1), mem = prim_pages(SLOT_PG);
	for (unsigned i = 0; i < SLOT_PG; i++)
		((uint64_t *)(uintptr_t)list)[i] = (mem >> 12) + i;
	return list;
}

// A fresh layer over RAM_SIZE of zeroed "physical" memory (Slat's region at
// its top), with `guest` as the hosted vCPUs' guest.
static void hv_setup(host_hv_guest_fn guest)
{
	ram = aligned_alloc(2 << 20, RAM_SIZE);
	assert_non_null(ram);
	memset(ram, 0, RAM_SIZE);
	ram_pa = (uint64_t)(uintptr_t)ram;
	next_free = ram_pa;
	const uint64_t r[1][2] = {{ram_pa, RAM_SIZE}};
	const uint64_t s[1][2] = {{ram_pa + RAM_SIZE - SLAT_SIZE, SLAT_SIZE}};
	struct hv_boot b = {r, 1, s, 1, HC_ABI_X86, 4, NULL};
	assert_int_equal(hv_init(&b), 0);
	host_hv_guest = guest;
}

static void test_delete_move_vs_running_vcpus(void **state)
{
	hv_setup(churn_guest);
	uint64_t dep = prim_pages(1024);
	assert_int_equal(call(HC_DEPOSIT, dep, 1024, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(call(HC_VM_CREATE, 0, 2, 0, 0, 0, 0, &vm_id), HC_OK);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(call(HC_VCPU_CREATE, vm_id, i, 0, 0, 0, 0, NULL), HC_OK);
		run_pages[i] = prim_pages(1);
	}
	uint64_t lists[NSLOTS];
	for (unsigned k = 0; k < NSLOTS; k++) {
		lists[k] = slot_frames();
		assert_int_equal(call(HC_SLOT_SET, vm_id, k, HC_SLOT_ADD, k * SLOT_PG * PG,
				      lists[k], SLOT_PG, NULL),
				 HC_OK);
	}
	pthread_t t[2];
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, vcpu_thread, (void *)(uintptr_t)i), 0);
	uint64_t where[NSLOTS];
	for (unsigned k = 0; k < NSLOTS; k++)
		where[k] = k * SLOT_PG * PG;
	for (unsigned round = 0; round < ROUNDS; round++) {
		unsigned k = round % NSLOTS;
		// Let the vCPUs run (and fill their TLBs) between two changes.
		uint64_t a0 = __atomic_load_n(&accesses, __ATOMIC_RELAXED);
		for (unsigned w = 0;
		     w < 100000 && __atomic_load_n(&accesses, __ATOMIC_RELAXED) < a0 + 300; w++)
			sched_yield();
		uint64_t old = where[k];
		if (round % 2) { // delete, then add back at the same place
			assert_int_equal(call(HC_SLOT_SET, vm_id, k, HC_SLOT_DELETE, 0, 0, 0, NULL),
					 HC_OK);
		} else { // move into the upper half (or back)
			uint64_t to = old < NSLOTS * SLOT_PG * PG ? old + NSLOTS * SLOT_PG * PG
								  : old - NSLOTS * SLOT_PG * PG;
			assert_int_equal(call(HC_SLOT_SET, vm_id, k, HC_SLOT_MOVE, to, 0, 0, NULL),
					 HC_OK);
			where[k] = to;
		}
		// Published only now: from here on, no translation of `old` may be used.
		__atomic_store_n(&dead_seq, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&dead_lo, old, __ATOMIC_RELEASE);
		__atomic_store_n(&dead_hi, old + SLOT_PG * PG, __ATOMIC_RELEASE);
		__atomic_store_n(&dead_seq, round + 1, __ATOMIC_RELEASE);
		for (volatile unsigned spin = 0; spin < 20000; spin++)
			;
		__atomic_store_n(&dead_seq, 0, __ATOMIC_RELEASE);
		if (round % 2)
			assert_int_equal(
			    call(HC_SLOT_SET, vm_id, k, HC_SLOT_ADD, old, lists[k], SLOT_PG, NULL),
			    HC_OK);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	print_message("accesses %lu, flushes %lu, kicks %lu, violations %lu\n",
		      (unsigned long)accesses, (unsigned long)flushes, (unsigned long)host_hv_kicks,
		      (unsigned long)violations);
	assert_int_equal(violations, 0);
	assert_true(accesses > 10000 && flushes > 0 && host_hv_kicks > 0);
	assert_int_equal(call(HC_VM_DESTROY, vm_id, 0, 0, 0, 0, 0, NULL), HC_OK);
	uint64_t list = prim_pages(1), got, total = 0;
	do {
		assert_int_equal(call(HC_WITHDRAW, list, HC_LIST_MAX, 0, 0, 0, 0, &got), HC_OK);
		total += got;
	} while (got);
	assert_int_equal(total, 1024);
	free(ram);
}

// ---- a lost kick ---------------------------------------------------------------------
// The guest stays in guest mode until it sees a kick, and drops the first
// one it sees (a kick merged into one already pending): only a second kick
// gets it out. Without the waiter's re-kick the DELETE below never returns
// (the unit watchdog fails the test).
static uint32_t lossy_in_guest, lossy_dropped;
static int64_t lossy_run_rc = 1;

static int lossy_guest(struct vcpu *v, struct hc_run *run)
{
	unsigned cpu = arch_hv_pcpu();
	struct hv_entry e;
	// A page mapped first (an entry takes the root, a fault maps gpa 0): the
	// DELETE then has a translation to flush.
	int r = hv_vcpu_enter(v, &e);

	if (r)
		return r;
	hv_vcpu_exited(v);
	if (hv_vcpu_fault(v, 0, true, false) != S2_FAULT_MAPPED)
		return HC_E_INVAL;
	r = hv_vcpu_enter(v, &e);
	if (r)
		return r;
	__atomic_store_n(&lossy_in_guest, 1, __ATOMIC_RELEASE);
	for (;;) {
		if (__atomic_exchange_n(&host_hv_kick_flag[cpu], 0, __ATOMIC_ACQ_REL)) {
			if (!__atomic_exchange_n(&lossy_dropped, 1, __ATOMIC_ACQ_REL))
				continue; // the first kick is lost
			break;
		}
		sched_yield();
	}
	hv_vcpu_exited(v);
	run->reason = HC_EXIT_PREEMPTED;
	return HC_OK;
}

static void *lossy_thread(void *arg)
{
	uint64_t reason;

	host_hv_set_pcpu(1);
	lossy_run_rc = call(HC_VCPU_RUN, vm_id, 0, run_pages[0], 0, 0, 0, &reason);
	return NULL;
}

static void test_lost_kick_is_sent_again(void **state)
{
	hv_setup(lossy_guest);
	host_hv_kicks = 0;
	uint64_t dep = prim_pages(256);
	assert_int_equal(call(HC_DEPOSIT, dep, 256, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(call(HC_VM_CREATE, 0, 1, 0, 0, 0, 0, &vm_id), HC_OK);
	assert_int_equal(call(HC_VCPU_CREATE, vm_id, 0, 0, 0, 0, 0, NULL), HC_OK);
	run_pages[0] = prim_pages(1);
	assert_int_equal(call(HC_SLOT_SET, vm_id, 0, HC_SLOT_ADD, 0, slot_frames(), SLOT_PG, NULL),
			 HC_OK);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, lossy_thread, NULL), 0);
	while (!__atomic_load_n(&lossy_in_guest, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&lossy_run_rc, __ATOMIC_ACQUIRE) == 1)
		sched_yield();
	assert_int_equal(lossy_run_rc, 1); // still running
	assert_int_equal(lossy_in_guest, 1);
	// The delete flushes the VM: it kicks the vCPU and waits for its exit.
	assert_int_equal(call(HC_SLOT_SET, vm_id, 0, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_OK);
	pthread_join(t, NULL);
	print_message("kicks %lu\n", (unsigned long)host_hv_kicks);
	assert_int_equal(lossy_run_rc, HC_OK);
	assert_int_equal(lossy_dropped, 1);
	assert_true(host_hv_kicks >= 2);
	assert_int_equal(call(HC_VM_DESTROY, vm_id, 0, 0, 0, 0, 0, NULL), HC_OK);
	free(ram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_delete_move_vs_running_vcpus),
	    cmocka_unit_test(test_lost_kick_is_sent_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
