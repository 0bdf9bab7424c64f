// SPDX-License-Identifier: Apache-2.0
//
// Secondary VMs and their vCPUs (core/hv_internal.h): every record lives in
// deposited pages; VM_DESTROY is the engine's batched teardown and gives
// every page back to the deposit pool and every frame back to the primary.
#include "core/hv_internal.h"
#include "core/log.h"
#include "core/mem.h"

_Static_assert(sizeof(struct vm) <= HV_PAGE, "a VM record is one deposited page");
_Static_assert(sizeof(struct vcpu) <= HV_PAGE, "a vCPU record is one deposited page");
_Static_assert(HC_MAX_VCPUS % HV_PTRS_PER_PAGE == 0, "vCPU directory pages are full");

uint64_t hv_page_alloc(struct vm *vm)
{
	uint64_t pa = hv_depot_alloc(&hv.depot);

	if (pa)
		__atomic_fetch_add(&vm->hv.meta_pages, 1, __ATOMIC_RELAXED);
	return pa;
}

void hv_page_free(struct vm *vm, uint64_t pa)
{
	hv_depot_free(&hv.depot, pa);
	__atomic_fetch_sub(&vm->hv.meta_pages, 1, __ATOMIC_RELAXED);
}

// ---- VMs --------------------------------------------------------------------------------
int hv_vm_create(uint32_t flags, uint32_t vcpu_limit, uint64_t *id)
{
	// Donation needs the frames unmapped from the primary's own SLAT, which
	// Slat does not do yet: VMs share their frames with the primary (KVM's model).
	if (flags & HC_VM_FLAG_DONATE)
		return HC_E_INVAL;
	uint64_t pa = hv_depot_alloc(&hv.depot);

	if (!pa)
		return HC_E_NOMEM;
	if (hv.next_id > HC_VM_MAX) { // 2^30 VMs created: ids are never reused
		hv_depot_free(&hv.depot, pa);
		return HC_E_TOO_MANY;
	}
	struct vm *vm = (struct vm *)(uintptr_t)pa;
	vm_init(vm, hv.next_id, "secondary", "SLAT", NULL, NULL, 0);
	vm->hv.meta_pages = 1;
	vm->hv.flags = flags;
	vm->hv.vcpu_limit = vcpu_limit;
	vm->hv.token = hv.next_token;
	struct s2_vm_config cfg = {0};
	arch_hv_s2_config(&cfg);
	cfg.zap_mode = flags & HC_VM_FLAG_ZAP_ALL ? S2_ZAP_ALL : S2_ZAP_SLOT;
	cfg.be = &hv_s2_backend;
	cfg.be_ctx = vm;
	cfg.ncpus = hv.ncpus;
	int r = s2_vm_create(&cfg, &vm->hv.s2);
	if (r) {
		hv_depot_free(&hv.depot, pa);
		return r == S2_E_NOMEM ? HC_E_NOMEM : HC_E_INVAL;
	}
	hv.next_id++;
	hv.next_token++;
	vm->hv.next = hv.vms;
	hv.vms = vm;
	hv.vms_live++;
	hv.vms_created++;
	*id = vm->id;
	return HC_OK;
}

static void vcpus_free(struct vm *vm)
{
	for (unsigned d = 0; d < HV_VCPU_DIR_PAGES; d++) {
		uint64_t *dir = (uint64_t *)(uintptr_t)vm->hv.vcpu_dir[d];
		if (!dir)
			continue;
		for (unsigned i = 0; i < HV_PTRS_PER_PAGE; i++) {
			struct vcpu *v = (struct vcpu *)(uintptr_t)dir[i];
			if (!v)
				continue;
			hv_vcpu_drop_root(v);
			arch_hv_vcpu_destroy(v);
			hv_page_free(vm, (uint64_t)(uintptr_t)v);
		}
		hv_page_free(vm, vm->hv.vcpu_dir[d]);
		vm->hv.vcpu_dir[d] = 0;
	}
}

// Order: vCPU roots dropped, then the engine's teardown (its one context
// invalidation is the flush), and only then are the slots' frames given back.
int hv_vm_destroy(uint32_t id)
{
	struct vm **link = &hv.vms, *vm;

	while ((vm = *link) && vm->id != id)
		link = &vm->hv.next;
	if (!vm)
		return HC_E_BAD_VM;
	// hv.lock is held: no RUN can claim a vCPU of this VM until it is unlinked.
	if (__atomic_load_n(&vm->hv.runs, __ATOMIC_ACQUIRE))
		return HC_E_BUSY;
	*link = vm->hv.next;
	vcpus_free(vm);
	s2_vm_destroy(vm->hv.s2);
	hv_slots_release(vm);
	if (vm->hv.meta_pages != 1)
		log_err("hv: vm %u: %llu pages unaccounted for at destroy\n", id,
			(unsigned long long)vm->hv.meta_pages - 1);
	hv_depot_free(&hv.depot, (uint64_t)(uintptr_t)vm);
	hv.vms_live--;
	hv.vms_destroyed++;
	return HC_OK;
}

// ---- vCPUs --------------------------------------------------------------------------------
struct vcpu *hv_vcpu_find(struct vm *vm, uint32_t index)
{
	if (index >= vm->hv.vcpu_limit)
		return NULL;
	uint64_t dir =
	    __atomic_load_n(&vm->hv.vcpu_dir[index / HV_PTRS_PER_PAGE], __ATOMIC_ACQUIRE);
	if (!dir)
		return NULL;
	return (struct vcpu *)(uintptr_t)__atomic_load_n(
	    &((uint64_t *)(uintptr_t)dir)[index % HV_PTRS_PER_PAGE], __ATOMIC_ACQUIRE);
}

int hv_vcpu_create(uint32_t vm_id, uint32_t index)
{
	struct vm *vm = hv_vm_find(vm_id);

	if (!vm)
		return HC_E_BAD_VM;
	if (index >= vm->hv.vcpu_limit)
		return HC_E_BAD_VCPU;
	if (hv_vcpu_find(vm, index))
		return HC_E_EXISTS;
	uint64_t *slot_dir = &vm->hv.vcpu_dir[index / HV_PTRS_PER_PAGE];
	bool new_dir = !*slot_dir;
	uint64_t dir = new_dir ? hv_page_alloc(vm) : *slot_dir;
	uint64_t pa = dir ? hv_page_alloc(vm) : 0;
	if (!pa) {
		if (dir && new_dir)
			hv_page_free(vm, dir);
		return HC_E_NOMEM;
	}
	struct vcpu *v = (struct vcpu *)(uintptr_t)pa;
	v->vm = vm;
	v->index = index;
	v->hw_id = index;
	v->state = VCPU_CREATED;
	int r = arch_hv_vcpu_create(v);
	if (r) {
		hv_page_free(vm, pa);
		if (new_dir)
			hv_page_free(vm, dir);
		return r;
	}
	// Published last: RUN finds the vCPU only once it is whole.
	__atomic_store_n(&((uint64_t *)(uintptr_t)dir)[index % HV_PTRS_PER_PAGE], pa,
			 __ATOMIC_RELEASE);
	__atomic_store_n(slot_dir, dir, __ATOMIC_RELEASE);
	vm->hv.nvcpus++;
	return HC_OK;
}

// ---- statistics -------------------------------------------------------------------------
void hv_vm_stats(struct vm *vm, struct hc_vm_stats *o)
{
	struct s2_stats s;

	s2_vm_stats(vm->hv.s2, &s);
	memset(o, 0, sizeof(*o));
	o->faults = s.faults;
	o->faults_mmio = s.faults_mmio;
	o->faults_retry = s.faults_retry;
	for (unsigned l = 0; l < 4 && l < S2_MAX_LEVELS; l++)
		o->leaves_mapped[l] = s.leaves_mapped[l];
	o->leaves_zapped = s.leaves_zapped;
	o->tables_zapped = s.tables_zapped;
	o->tables_live = s.tables_live;
	o->tables_max = s.tables_max;
	o->inval_context = s.inval_context;
	o->inval_range = s.inval_range;
	o->inval_range_pages = s.inval_range_pages;
	o->cmo_calls = s.cmo_calls;
	o->slot_updates = s.slot_updates;
	o->zap_all = s.zap_all;
	o->slots = vm->hv.nslots;
	o->slot_pages = vm->hv.slot_frames;
	o->meta_pages = __atomic_load_n(&vm->hv.meta_pages, __ATOMIC_RELAXED);
	o->vcpus = vm->hv.nvcpus;
	o->roots_alloc = s.roots_alloc;
	o->roots_freed = s.roots_freed;
	for (unsigned d = 0; d < HV_VCPU_DIR_PAGES; d++) {
		const uint64_t *dir = (const uint64_t *)(uintptr_t)vm->hv.vcpu_dir[d];
		for (unsigned i = 0; dir && i < HV_PTRS_PER_PAGE; i++) {
			const struct vcpu *v = (const struct vcpu *)(uintptr_t)dir[i];
			for (unsigned e = 0; v && e < EXIT_REASONS && e < 16; e++)
				o->exits[e] += __atomic_load_n(&v->exits[e], __ATOMIC_RELAXED);
		}
	}
}
