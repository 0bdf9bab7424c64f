// SPDX-License-Identifier: Apache-2.0
//
// Running secondary vCPUs (core/hv.h): VCPU_RUN's claim of a vCPU, the entry
// protocol that keeps translations coherent without broadcast invalidation,
// the SLAT fault path, and the engine back end of secondary VMs.
//
// Coherence: a flush of VM v bumps v->tlb_gen and, where the machine has no
// broadcast invalidation (x86), kicks every vCPU of v in guest mode and waits
// until it has left. A CPU entering a vCPU flushes first when it last ran
// another VM or saw an older tlb_gen. The entry stores in_guest = 1 before it
// reads tlb_gen and the flusher bumps tlb_gen before it reads in_guest (both
// sequentially consistent), so either the entry sees the new generation or
// the flusher sees the vCPU in guest mode and kicks it.
#include "core/hv_internal.h"
#include "core/log.h"

static struct log_once hv_run_logged;

// ---- the engine's back end for secondary VMs ------------------------------------------
static uint64_t be_page_alloc(void *ctx, unsigned npages, uint64_t align)
{
	if (npages != 1) { // arch_hv_s2_config picks geometry with one-page roots
		if (log_once_first(&hv_run_logged, 1))
			log_err("hv: the engine asked for %u contiguous pages\n", npages);
		return 0;
	}
	return hv_page_alloc(ctx);
}

static void be_page_free(void *ctx, uint64_t pa, unsigned npages)
{
	for (unsigned i = 0; i < npages; i++)
		hv_page_free(ctx, pa + i * HV_PAGE);
}

// A kick can merge with one already pending at the target (x86: NMIs that
// arrive while one is held merge) and so be lost: the waiter kicks again
// every HV_REKICK relaxes, and reports a vCPU that stays in guest mode for
// HV_KICK_REPORT of them.
#define HV_REKICK      (1u << 16)
#define HV_KICK_REPORT (1u << 24)
static struct log_once hv_kick_logged;

// Waits for one vCPU that was in guest mode at exit count `seq` to leave.
static void kick_wait_vcpu(struct vm *vm, struct vcpu *v, uint64_t seq)
{
	uint64_t n = 0;

	while (__atomic_load_n(&v->hv.in_guest, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&v->hv.exit_seq, __ATOMIC_ACQUIRE) == seq) {
		arch_hv_relax();
		if (++n % HV_REKICK == 0)
			arch_hv_kick_pcpu(__atomic_load_n(&v->hv.pcpu, __ATOMIC_RELAXED));
		if (n == HV_KICK_REPORT && log_once_first(&hv_kick_logged, vm->id))
			log_err("hv: vm %u vcpu%u on CPU %u has not left guest mode after %u "
				"kicks; still kicking\n",
				vm->id, v->index, v->hv.pcpu, HV_KICK_REPORT / HV_REKICK);
	}
}

// Waits until every vCPU of `vm` that was in guest mode has left it once.
static void kick_and_wait(struct vm *vm)
{
	for (unsigned d = 0; d < HV_VCPU_DIR_PAGES; d++) {
		const uint64_t *dir = (const uint64_t *)(uintptr_t)__atomic_load_n(
		    &vm->hv.vcpu_dir[d], __ATOMIC_ACQUIRE);
		for (unsigned i = 0; dir && i < HV_PTRS_PER_PAGE; i++) {
			struct vcpu *v =
			    (struct vcpu *)(uintptr_t)__atomic_load_n(&dir[i], __ATOMIC_ACQUIRE);
			if (!v || !__atomic_load_n(&v->hv.in_guest, __ATOMIC_SEQ_CST))
				continue;
			uint64_t seq = __atomic_load_n(&v->hv.exit_seq, __ATOMIC_ACQUIRE);
			arch_hv_kick_pcpu(__atomic_load_n(&v->hv.pcpu, __ATOMIC_RELAXED));
			kick_wait_vcpu(vm, v, seq);
		}
	}
}

static void be_inval_context(void *ctx, struct s2_vm *s2)
{
	struct vm *vm = ctx;

	__atomic_fetch_add(&vm->hv.tlb_gen, 1, __ATOMIC_SEQ_CST);
	if (!arch_hv_flush_vm(vm))
		kick_and_wait(vm);
}

static void be_kick_reload(void *ctx, struct s2_vm *s2)
{
	kick_and_wait(ctx);
}

static void be_relax(void *ctx)
{
	arch_hv_relax();
}

static unsigned be_cpu_index(void *ctx)
{
	return arch_hv_pcpu();
}

const struct s2_backend hv_s2_backend = {
    .page_alloc = be_page_alloc,
    .page_free = be_page_free,
    .inval_context = be_inval_context,
    .cpu_relax = be_relax,
    .kick_reload = be_kick_reload,
    .cpu_index = be_cpu_index,
};

// ---- the entry protocol --------------------------------------------------------------
int hv_vcpu_enter(struct vcpu *v, struct hv_entry *e)
{
	struct vm *vm = v->vm;
	unsigned cpu = arch_hv_pcpu();

	for (;;) {
		// The lock-light root path: a valid root is reused; an invalid one
		// (zap-all, teardown) is dropped and a fresh one taken.
		if (v->hv.root && s2_root_is_invalid(v->hv.root))
			hv_vcpu_drop_root(v);
		if (!v->hv.root && s2_root_get(vm->hv.s2, (struct s2_role){0, 0}, &v->hv.root))
			return HC_E_NOMEM;
		__atomic_store_n(&v->hv.pcpu, cpu, __ATOMIC_RELAXED);
		__atomic_store_n(&v->hv.in_guest, 1, __ATOMIC_SEQ_CST);
		if (!s2_root_is_invalid(v->hv.root))
			break;
		__atomic_store_n(&v->hv.in_guest, 0, __ATOMIC_RELEASE);
	}
	uint64_t gen = __atomic_load_n(&vm->hv.tlb_gen, __ATOMIC_SEQ_CST);
	struct hv_pcpu *p = &hv.pcpu[cpu];
	e->flush = p->token != vm->hv.token || p->gen != gen;
	p->token = vm->hv.token;
	p->gen = gen;
	e->root_pa = s2_root_pa(v->hv.root);
	return HC_OK;
}

void hv_vcpu_exited(struct vcpu *v)
{

	__atomic_fetch_add(&v->hv.exit_seq, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&v->hv.in_guest, 0, __ATOMIC_RELEASE);
}

void hv_vcpu_drop_root(struct vcpu *v)
{
	if (!v->hv.root)
		return;
	struct vm *vm = v->vm;
	// The engine lets the last reference go only on an invalid root; a
	// vCPU that goes away while its root is valid just leaves the MMU's.
	s2_root_put(vm->hv.s2, v->hv.root);
	v->hv.root = NULL;
}

int hv_vcpu_fault(struct vcpu *v, uint64_t gpa, bool write, bool exec)
{
	struct vm *vm = v->vm;
	unsigned access = S2_PROT_R | (write ? S2_PROT_W : 0) | (exec ? S2_PROT_X : 0);
	int r;

	if (!v->hv.root)
		return S2_FAULT_RETRY;
	r = s2_fault(vm->hv.s2, v->hv.root, gpa, access, NULL);
	switch (r) {
	case S2_FAULT_MAPPED:
	case S2_FAULT_RETRY:
	case S2_FAULT_MMIO:
	case S2_FAULT_ABSENT:
		return r;
	case S2_E_PERM: // a write to a read-only slot: the VMM emulates it
	case S2_E_RANGE:
		return S2_FAULT_MMIO;
	case S2_E_NOMEM:
		return HC_E_NOMEM;
	default:
		if (log_once_first(&hv_run_logged, 2))
			log_err("hv: vm %u: SLAT fault at 0x%llx failed (%d)\n", vm->id,
				(unsigned long long)gpa, r);
		return HC_E_INVAL;
	}
}

bool hv_vcpu_memfault(struct vcpu *v, uint64_t gpa, bool write, struct hc_run *run)
{
	struct vm *vm = v->vm;
	struct s2_slot sl;

	if (!s2_slot_find(vm->hv.s2, 0, gpa, &sl))
		return false; // the slot went away meanwhile: the access runs again
	run->reason = HC_EXIT_MEMFAULT;
	run->u.memfault.gpa = gpa;
	run->u.memfault.slot = sl.id;
	run->u.memfault.index = (uint32_t)((gpa - sl.gpa) >> S2_PAGE_SHIFT);
	run->u.memfault.is_write = write;
	return true;
}

// ---- VCPU_RUN ------------------------------------------------------------------------------
int hv_vcpu_run(uint32_t vm_id, uint32_t index, struct vcpu *caller, uint64_t run_pa,
		uint64_t *reason)
{
	struct hc_run *run;
	unsigned cpu = arch_hv_pcpu();
	int r;

	mm_spin_lock(&hv.lock);
	struct vm *vm = hv_vm_find(vm_id);
	struct vcpu *v = vm ? hv_vcpu_find(vm, index) : NULL;
	uint32_t free_claim = 0;
	if (!vm)
		r = HC_E_BAD_VM;
	else if (!v)
		r = HC_E_BAD_VCPU;
	else if ((r = hv_primary_page(run_pa, (void **)&run)))
		;
	else if (!__atomic_compare_exchange_n(&v->hv.running_on, &free_claim, cpu + 1, false,
					      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		r = HC_E_BUSY;
	else
		__atomic_fetch_add(&vm->hv.runs, 1, __ATOMIC_ACQUIRE);
	mm_spin_unlock(&hv.lock);
	if (r)
		return r;
	vcpu_set_running(v);
	r = arch_hv_run(caller, v, run);
	if (!r)
		*reason = run->reason;
	__atomic_store_n(&v->hv.running_on, 0, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&vm->hv.runs, 1, __ATOMIC_RELEASE);
	return r;
}
