// SPDX-License-Identifier: Apache-2.0
//
// The secondary-VM layer's entry (core/hv.h): start-up, the dispatcher of the
// primary's hypercalls, DEPOSIT / WITHDRAW, the statistics pages and the
// summary. VMs and vCPUs are in core/hv_vm.c, memslots in core/hv_slot.c and
// the run protocol in core/hv_run.c.
#include "core/hv_internal.h"
#include "core/log.h"
#include "core/mem.h"

struct hv_state hv;

// ---- the ownership table's page source: the deposit pool -------------------------------
static void *own_page_alloc(void *ctx)
{
	return (void *)(uintptr_t)hv_depot_alloc(ctx);
}

static void own_page_free(void *ctx, void *page)
{
	hv_depot_free(ctx, (uint64_t)(uintptr_t)page);
}

int hv_init(const struct hv_boot *b)
{
	memset(&hv, 0, sizeof(hv));
	mm_spin_init(&hv.lock);
	hv_depot_init(&hv.depot);
	struct own_page_src src = {own_page_alloc, own_page_free, &hv.depot, arch_hv_relax};
	int r = own_init(&hv.own, &src, b->ram, b->nram, b->slat, b->nslat);
	if (r) {
		log_err("hv: ownership table refused the memory map (%d); no secondary VMs\n", r);
		return -1;
	}
	hv.abi = b->abi;
	hv.arch_call = b->arch_call;
	hv.ncpus = b->ncpus ? b->ncpus : 1;
	hv.next_id = 1;
	hv.next_token = 1;
	__atomic_store_n(&hv.ready, true, __ATOMIC_RELEASE);
	return 0;
}

// ---- shared helpers ---------------------------------------------------------------------
int hv_err_of_s2(int e)
{
	switch (e) {
	case S2_OK:
		return HC_OK;
	case S2_E_NOMEM:
		return HC_E_NOMEM;
	case S2_E_OVERLAP:
	case S2_E_EXIST:
		return HC_E_EXISTS;
	case S2_E_NOENT:
		return HC_E_BAD_SLOT;
	case S2_E_FULL:
		return HC_E_TOO_MANY;
	case S2_E_RANGE:
		return HC_E_RANGE;
	case S2_E_UNALIGNED:
		return HC_E_ALIGN;
	default:
		return HC_E_INVAL;
	}
}

int hv_primary_page(uint64_t pa, void **out)
{
	enum own_state st;
	uint32_t vm;
	int r = own_get(&hv.own, pa >> OWN_FRAME_SHIFT, &st, &vm);

	if (r)
		return r;
	if (st == OWN_SLAT)
		return HC_E_SLAT;
	if (st != OWN_PRIMARY)
		return HC_E_OTHER_VM;
	*out = (void *)(uintptr_t)pa;
	return HC_OK;
}

// Faults of the primary retried (for the exit summary: they are SLAT-fault
// exits that no bad access caused, as many as the map changes met).
static uint64_t primary_fault_retries;

bool hv_primary_fault_retry(struct vcpu *v, uint64_t pa)
{
	uint64_t pfn = pa >> OWN_FRAME_SHIFT;
	enum own_state st;
	uint32_t vm;

	if (!__atomic_load_n(&hv.ready, __ATOMIC_ACQUIRE) ||
	    own_get(&hv.own, pfn, &st, &vm) != OWN_OK || st != OWN_PRIMARY)
		return false;
	if (v->fault_retry_pfn != pfn + 1) {
		v->fault_retry_pfn = pfn + 1; // + 1: frame 0 is a frame too
		v->fault_retries = 0;
	}
	if (++v->fault_retries > HV_FAULT_RETRIES)
		return false;
	__atomic_fetch_add(&primary_fault_retries, 1, __ATOMIC_RELAXED);
	return true;
}

struct vm *hv_vm_find(uint32_t id)
{
	for (struct vm *vm = hv.vms; vm; vm = vm->hv.next)
		if (vm->id == id)
			return vm;
	return NULL;
}

// ---- the primary's own SLAT over deposited pages (arch_hv_primary_*) ------------------
static int hv_primary_result(int s2_err, const char *what, uint64_t pa, uint64_t pages)
{
	if (s2_err == S2_OK)
		return HC_OK;
	if (s2_err == S2_E_NOMEM)
		return HC_E_NOMEM;
	log_err("hv: cannot %s %llu pages at %#llx in the primary's SLAT (%d)\n", what,
		(unsigned long long)pages, (unsigned long long)pa, s2_err);
	return HC_E_INVAL;
}

static int hv_primary_unmap(uint64_t pa, uint64_t pages)
{
	return hv_primary_result(arch_hv_primary_unmap(pa, pages), "unmap", pa, pages);
}

static int hv_primary_map(uint64_t pa, uint64_t pages)
{
	return hv_primary_result(arch_hv_primary_map(pa, pages), "map", pa, pages);
}

// ---- DEPOSIT / WITHDRAW ------------------------------------------------------------------
// Every page must be the primary's RAM (checked first: nothing changes on a
// refusal). The pages leave the primary's own SLAT before Slat writes a byte
// of them (the claim below may already put ownership records there): from
// then on only Slat reaches them. They go on the free list before the claim
// so that the ownership records of the claim itself can come from them; a
// claim that still runs out takes them back (their contents may then have
// been zeroed) and the primary gets its mapping back.
static int hv_deposit(uint64_t pa, uint64_t n, uint64_t *bad)
{
	for (uint64_t i = 0; i < n; i++) {
		void *p;
		int r = hv_primary_page(pa + i * HV_PAGE, &p);
		if (r) {
			*bad = pa + i * HV_PAGE;
			return r;
		}
	}
	int r = hv_primary_unmap(pa, n);
	if (r)
		return r; // HC_E_NOMEM: the primary's table pool; nothing changed
	hv_depot_add(&hv.depot, pa, n);
	r = own_range_op(&hv.own, OWN_OP_CLAIM, 0, pa, n * HV_PAGE, bad);
	if (r) {
		uint64_t back = hv_depot_remove_range(&hv.depot, pa, n);
		if (back != n)
			log_err("hv: deposit rollback found %llu of %llu pages\n",
				(unsigned long long)back, (unsigned long long)n);
		// The unmap just freed (or kept) the tables this needs.
		if (hv_primary_map(pa, n))
			log_err("hv: deposit rollback cannot map %llu pages at %#llx back into "
				"the primary\n",
				(unsigned long long)n, (unsigned long long)pa);
		return r;
	}
	__atomic_fetch_add(&hv.depot.deposited, n, __ATOMIC_RELAXED);
	return HC_OK;
}

// Maps the n frames of pfn[] back into the primary, run by run; all or
// nothing (a failed run unmaps the runs before it: 4 KiB leaves and whole
// blocks, no split, no table needed).
static int hv_remap(const uint64_t *pfn, uint64_t n)
{
	uint64_t i = 0;

	while (i < n) {
		uint64_t len = 1;
		while (i + len < n && pfn[i + len] == pfn[i] + len)
			len++;
		int r = hv_primary_map(pfn[i] << OWN_FRAME_SHIFT, len);
		if (r) {
			for (uint64_t j = 0; j < i; j++)
				if (hv_primary_unmap(pfn[j] << OWN_FRAME_SHIFT, 1))
					log_err("hv: withdraw rollback cannot unmap %#llx\n",
						(unsigned long long)(pfn[j] << OWN_FRAME_SHIFT));
			return r;
		}
		i += len;
	}
	return HC_OK;
}

// The last pages: once nothing but the ownership table's own nodes is left
// (no VM, nothing free), those nodes only record that they themselves are
// Slat's. The table is emptied (every frame the primary's again) and the
// nodes, now on the free list, go back without a release.
static bool hv_only_nodes_left(uint64_t max)
{
	uint64_t nodes = own_nodes(&hv.own);
	uint64_t held = hv.depot.deposited - hv.depot.withdrawn;

	return nodes && nodes <= max && hv.vms_live == 0 && hv.depot.nfree == 0 && held == nodes;
}

static int hv_withdraw(uint64_t list_pa, uint64_t max, uint64_t *given)
{
	uint64_t *list;
	uint64_t pfn[HC_LIST_MAX];
	uint64_t n = 0, bad;
	int r = hv_primary_page(list_pa, (void **)&list);
	bool unclaimed = false;

	if (r)
		return r;
	if (hv_only_nodes_left(max)) {
		own_destroy(&hv.own); // no lookup runs: every caller holds hv.lock
		unclaimed = true;
	}
	while (n < max) {
		uint64_t pa = hv_depot_alloc(&hv.depot); // zeroed
		if (!pa)
			break;
		pfn[n++] = pa >> OWN_FRAME_SHIFT;
	}
	// Zeroed and mapped back before the primary owns them (and before any
	// other CPU may reach them through the primary's SLAT).
	r = hv_remap(pfn, n);
	if (r && unclaimed) // the table is gone: the frames are the primary's anyway
		log_err("hv: withdraw: %llu last pages stay out of the primary's map (%d)\n",
			(unsigned long long)n, r);
	else if (r) {
		for (uint64_t i = 0; i < n; i++)
			hv_depot_free(&hv.depot, pfn[i] << OWN_FRAME_SHIFT);
		return r;
	}
	r = n && !unclaimed ? own_list_op(&hv.own, OWN_OP_RELEASE, 0, pfn, n, &bad) : HC_OK;
	if (r) { // cannot happen: every page on the free list is claimed
		log_err("hv: withdraw: release refused (%d)\n", r);
		for (uint64_t i = 0; i < n; i++) { // Slat's again: out of the primary's map
			if (hv_primary_unmap(pfn[i] << OWN_FRAME_SHIFT, 1))
				log_err("hv: withdraw: %#llx stays in the primary's map\n",
					(unsigned long long)(pfn[i] << OWN_FRAME_SHIFT));
			hv_depot_free(&hv.depot, pfn[i] << OWN_FRAME_SHIFT);
		}
		return HC_E_INVAL;
	}
	for (uint64_t i = 0; i < n; i++)
		list[i] = pfn[i];
	__atomic_fetch_add(&hv.depot.withdrawn, n, __ATOMIC_RELAXED);
	*given = n;
	return HC_OK;
}

// ---- statistics ---------------------------------------------------------------------------
static void hv_stats(struct hc_hv_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->deposited = hv.depot.deposited;
	s->withdrawn = hv.depot.withdrawn;
	s->free = hv.depot.nfree;
	s->used = s->deposited - s->withdrawn - s->free;
	s->own_nodes = own_nodes(&hv.own);
	s->vms = hv.vms_live;
	s->vms_created = hv.vms_created;
	s->vms_destroyed = hv.vms_destroyed;
	for (struct vm *vm = hv.vms; vm; vm = vm->hv.next) {
		if (vm->hv.flags & HC_VM_FLAG_DONATE)
			s->donated_frames += vm->hv.slot_frames;
		else
			s->shared_frames += vm->hv.slot_frames;
	}
	s->calls = __atomic_load_n(&hv.calls, __ATOMIC_RELAXED);
	s->calls_failed = __atomic_load_n(&hv.calls_failed, __ATOMIC_RELAXED);
	s->primary_tables = arch_hv_primary_tables();
}

static int hv_stats_call(const struct hc_call *c)
{
	void *page;
	int r = hv_primary_page(c->pa, &page);

	if (r)
		return r;
	if (c->fn == HC_HV_STATS) {
		struct hc_hv_stats s;
		hv_stats(&s);
		memcpy(page, &s, sizeof(s));
		return HC_OK;
	}
	struct vm *vm = hv_vm_find(c->vm);
	if (!vm)
		return HC_E_BAD_VM;
	struct hc_vm_stats s;
	hv_vm_stats(vm, &s);
	memcpy(page, &s, sizeof(s));
	return HC_OK;
}

// LOG_READ: a window of Slat's log ring into a page of the primary.
static int hv_log_read(uint64_t pa, uint64_t pos, uint64_t *res)
{
	void *page;
	int r = hv_primary_page(pa, &page);
	long n = r ? 0 : log_ring_read(pos, page, HC_LOG_READ_MAX, &res[1], &res[2]);

	res[0] = n < 0 ? 0 : (uint64_t)n;
	return r ? r : n < 0 ? HC_E_INVAL : HC_OK;
}

void hv_print_summary(void)
{
	struct hc_hv_stats s;

	if (!__atomic_load_n(&hv.ready, __ATOMIC_ACQUIRE))
		return;
	mm_spin_lock(&hv.lock);
	hv_stats(&s);
	mm_spin_unlock(&hv.lock);
	log_info("slat: secondary VMs: %llu created, %llu destroyed, %llu alive; %llu calls "
		 "(%llu refused)\n",
		 (unsigned long long)s.vms_created, (unsigned long long)s.vms_destroyed,
		 (unsigned long long)s.vms, (unsigned long long)s.calls,
		 (unsigned long long)s.calls_failed);
	log_info("slat: deposited pages: %llu in, %llu withdrawn, %llu held = %llu free + %llu "
		 "used (%llu ownership nodes)%s\n",
		 (unsigned long long)s.deposited, (unsigned long long)s.withdrawn,
		 (unsigned long long)(s.deposited - s.withdrawn), (unsigned long long)s.free,
		 (unsigned long long)s.used, (unsigned long long)s.own_nodes,
		 s.used == 0 && s.vms == 0 ? "" : " (VMs still alive)");
	log_info("slat: primary SLAT faults retried while Slat changed the map: %llu\n",
		 (unsigned long long)__atomic_load_n(&primary_fault_retries, __ATOMIC_RELAXED));
}

// ---- the dispatcher -------------------------------------------------------------------------
// In the documented order: the page, the VM, the vCPU, not inside VCPU_RUN.
int hv_stopped_vcpu(uint32_t vm_id, uint32_t index, uint64_t pa, void **page, struct vcpu **out)
{
	int r = hv_primary_page(pa, page);

	if (r)
		return r;
	struct vm *vm = hv_vm_find(vm_id);
	if (!vm)
		return HC_E_BAD_VM;
	struct vcpu *v = hv_vcpu_find(vm, index);
	if (!v)
		return HC_E_BAD_VCPU;
	if (__atomic_load_n(&v->hv.running_on, __ATOMIC_ACQUIRE))
		return HC_E_BUSY;
	*out = v;
	return HC_OK;
}

static int hv_regs_call(const struct hc_call *c)
{
	union {
		struct hc_regs_x86 x86;
		struct hc_regs_arm64 arm64;
	} buf;
	struct vcpu *v;
	void *page;
	int r = hv_stopped_vcpu(c->vm, c->vcpu, c->pa, &page, &v);

	if (r)
		return r;
	if (c->fn == HC_VCPU_GET_REGS) {
		memset(&buf, 0, sizeof(buf));
		arch_hv_get_regs(v, &buf);
		memcpy(page, &buf, sizeof(buf));
		return HC_OK;
	}
	memcpy(&buf, page, sizeof(buf)); // one copy: the primary may change its page
	return arch_hv_set_regs(v, &buf);
}

// Management calls, under hv.lock; `a`: the raw argument registers.
static int hv_call_locked(const struct hc_call *c, const uint64_t *a, uint64_t *res)
{
	if (hc_fn_is_arch(c->fn))
		return hv.arch_call ? hv.arch_call(c->fn, a, res) : HC_E_UNKNOWN;
	switch (c->fn) {
	case HC_VERSION_FN:
		res[0] = HC_VERSION;
		return HC_OK;
	case HC_DEPOSIT:
		return hv_deposit(c->pa, c->count, &res[0]);
	case HC_WITHDRAW:
		return hv_withdraw(c->pa, c->count, &res[0]);
	case HC_VM_CREATE:
		return hv_vm_create(c->flags, c->vcpu, &res[0]);
	case HC_VM_DESTROY:
		return hv_vm_destroy(c->vm);
	case HC_VCPU_CREATE:
		return hv_vcpu_create(c->vm, c->vcpu);
	case HC_SLOT_SET:
		return hv_slot_set(c, &res[0]);
	case HC_VCPU_SET_REGS:
	case HC_VCPU_GET_REGS:
		return hv_regs_call(c);
	case HC_VM_STATS:
	case HC_HV_STATS:
		return hv_stats_call(c);
	case HC_LOG_READ:
		return hv_log_read(c->pa, c->count, res);
	default:
		return HC_E_UNKNOWN;
	}
}

void hv_dispatch(struct vcpu *caller, struct hc_regs *r)
{
	struct hc_call c;
	uint64_t res[3] = {0, 0, 0};
	int st;

	if (!__atomic_load_n(&hv.ready, __ATOMIC_ACQUIRE)) {
		st = HC_E_UNKNOWN;
	} else if ((st = hc_decode(hv.abi, r, &c)) == HC_OK) {
		if (c.fn == HC_VCPU_RUN) {
			st = hv_vcpu_run(c.vm, c.vcpu, caller, c.pa, &res[0]);
		} else {
			mm_spin_lock(&hv.lock);
			st = hv_call_locked(&c, r->a, res);
			mm_spin_unlock(&hv.lock);
		}
	}
	if (__atomic_load_n(&hv.ready, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&hv.calls, 1, __ATOMIC_RELAXED);
		if (st)
			__atomic_fetch_add(&hv.calls_failed, 1, __ATOMIC_RELAXED);
	}
	r->fn = (uint64_t)(int64_t)st;
	r->a[0] = res[0];
	r->a[1] = res[1];
	r->a[2] = res[2];
}
