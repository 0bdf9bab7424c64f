// SPDX-License-Identifier: Apache-2.0
//
// The secondary-VM layer (core/hv*.c) through its only entry, hv_dispatch,
// against the hosted back end: a 32 MiB buffer is the primary's RAM, its
// last MiB Slat's region. Deposits, VM and vCPU records, memslots over frame lists
// (ownership checked over the whole request before anything changes, exact
// error codes), the lazily built SLAT seen from a hosted guest, slot delete
// and move zapping exactly the slot, destroy returning every page, and a
// fuzz of 10^5 hostile calls that leaves a victim VM intact.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "arch/host/hv_host.h"
#include "core/hv_internal.h"
#include "core/log.h"

#define RAM_SMALL (32ull << 20)
#define RAM_BIG	  (192ull << 20) // a 64 GiB lazy slot's 32833 list pages fit
#define SLAT_SIZE (1ull << 20)
#define PG	  4096ull

static uint64_t ram_size = RAM_SMALL; // the primary's RAM in this test
#define RAM_SIZE ram_size
static uint8_t *ram, *slat_mem;
static uint64_t ram_pa, next_free;			// a bump allocator over the primary's RAM
static uint64_t hv_stats_page, vm_stats_page, run_page; // primary pages, per test

static uint64_t prim_page(void)
{
	uint64_t pa = next_free;

	next_free += PG;
	assert_true(next_free <= ram_pa + RAM_SIZE - SLAT_SIZE);
	memset((void *)(uintptr_t)pa, 0, PG);
	return pa;
}

static int64_t call(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		    uint64_t a5, uint64_t *res)
{
	struct hc_regs r = {HC_FN(fn), {a0, a1, a2, a3, a4, a5}};

	hv_dispatch(NULL, &r);
	if (res)
		memcpy(res, r.a, 3 * sizeof(uint64_t));
	return (int64_t)r.fn;
}
#define C(fn, ...) call(fn, __VA_ARGS__)

static struct hc_hv_stats hv_stats_now(void)
{
	if (!hv_stats_page)
		hv_stats_page = prim_page();
	assert_int_equal(C(HC_HV_STATS, hv_stats_page, 0, 0, 0, 0, 0, NULL), HC_OK);
	return *(struct hc_hv_stats *)(uintptr_t)hv_stats_page;
}

static struct hc_vm_stats vm_stats_now(uint64_t vm)
{
	if (!vm_stats_page)
		vm_stats_page = prim_page();
	assert_int_equal(C(HC_VM_STATS, vm, vm_stats_page, 0, 0, 0, 0, NULL), HC_OK);
	return *(struct hc_vm_stats *)(uintptr_t)vm_stats_page;
}

// hv_boot.arch_call for the next setup: the hosted recorder, or none (as arm64).
static int (*boot_arch_call)(uint32_t, const uint64_t *, uint64_t *) = host_hv_arch_call;

static int setup_ram(uint64_t size)
{
	ram_size = size;
	ram = aligned_alloc(2 << 20, RAM_SIZE);
	assert_non_null(ram);
	slat_mem = ram + RAM_SIZE - SLAT_SIZE;
	ram_pa = (uint64_t)(uintptr_t)ram;
	next_free = ram_pa;
	hv_stats_page = vm_stats_page = run_page = 0;
	const uint64_t r[1][2] = {{ram_pa, RAM_SIZE}};
	const uint64_t s[1][2] = {{(uint64_t)(uintptr_t)slat_mem, SLAT_SIZE}};
	struct hv_boot b = {r, 1, s, 1, HC_ABI_X86, 4, boot_arch_call};
	host_hv_guest = NULL;
	host_hv_nranges = 0;
	host_hv_primary_fail = 0;
	assert_int_equal(hv_init(&b), 0);
	return 0;
}

static int setup(void **state)
{
	return setup_ram(RAM_SMALL);
}

static int setup_big(void **state)
{
	return setup_ram(RAM_BIG);
}

static int setup_no_arch_calls(void **state)
{
	boot_arch_call = NULL;
	int r = setup_ram(RAM_SMALL);
	boot_arch_call = host_hv_arch_call;
	return r;
}

// Withdraws everything and checks the pool is empty and every page came back.
static int teardown(void **state)
{
	uint64_t list = prim_page(), got;

	do {
		assert_int_equal(C(HC_WITHDRAW, list, HC_LIST_MAX, 0, 0, 0, 0, &got), HC_OK);
		for (uint64_t i = 0; i < got; i++) {
			enum own_state st;
			uint32_t vm;
			uint64_t pfn = ((uint64_t *)(uintptr_t)list)[i];
			assert_int_equal(own_get(&hv.own, pfn, &st, &vm), 0);
			assert_int_equal(st, OWN_PRIMARY);
			assert_false(host_hv_primary_unmapped(pfn << 12)); // mapped back
			for (unsigned k = 0; k < PG / 8; k++)		   // zeroed
				assert_int_equal(((uint64_t *)(uintptr_t)(pfn << 12))[k], 0);
		}
	} while (got);
	// Every page the primary ever had is in its map again.
	for (uint64_t pa = ram_pa; pa < next_free; pa += PG)
		assert_false(host_hv_primary_unmapped(pa));
	struct hc_hv_stats s = hv_stats_now();
	assert_int_equal(s.deposited, s.withdrawn);
	assert_int_equal(s.free, 0);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.own_nodes, 0);
	free(ram);
	return 0;
}

static uint64_t deposit(uint64_t pages)
{
	uint64_t pa = next_free;
	next_free += pages * PG;
	assert_int_equal(C(HC_DEPOSIT, pa, pages, 0, 0, 0, 0, NULL), HC_OK);
	return pa;
}

static uint64_t vm_new(uint32_t vcpus)
{
	uint64_t id;
	assert_int_equal(C(HC_VM_CREATE, 0, vcpus, 0, 0, 0, 0, &id), HC_OK);
	return id;
}

// A list page naming `n` frames: `first` + i, or scattered when `stride` > 1.
static uint64_t frames(uint64_t first, uint64_t n, uint64_t stride)
{
	uint64_t list = prim_page();
	for (uint64_t i = 0; i < n; i++)
		((uint64_t *)(uintptr_t)list)[i] = (first >> 12) + i * stride;
	return list;
}

static enum own_state owner(uint64_t pa, uint32_t *vm)
{
	enum own_state st;
	uint32_t dummy;
	assert_int_equal(own_get(&hv.own, pa >> 12, &st, vm ? vm : &dummy), 0);
	return st;
}

// ---- a hosted guest: touches the gpas it is given, exits MMIO on a hole ----
static const uint64_t *guest_gpas;
static unsigned guest_n;
static bool guest_reads; // the guest's accesses are reads (else writes)

// Each access goes through the loaded root as hardware would: a mapped gpa
// takes no exit; anything else is a SLAT fault handled by core.
static int touch_guest(struct vcpu *v, struct hc_run *run)
{
	for (unsigned i = 0; i < guest_n; i++) {
		struct hv_entry e;
		struct s2_xlate x;
		int r = hv_vcpu_enter(v, &e);
		if (r)
			return r;
		s2_translate(v->vm->hv.s2, v->hv.root, guest_gpas[i], &x);
		hv_vcpu_exited(v);
		if (x.mapped && (guest_reads || (x.prot & S2_PROT_W)))
			continue;
		r = hv_vcpu_fault(v, guest_gpas[i], !guest_reads, false);
		if (r == HC_E_NOMEM)
			return r;
		if (r == S2_FAULT_MMIO) {
			run->reason = HC_EXIT_MMIO;
			run->u.mmio.gpa = guest_gpas[i];
			return HC_OK;
		}
		if (r == S2_FAULT_ABSENT && hv_vcpu_memfault(v, guest_gpas[i], true, run))
			return HC_OK;
		assert_int_equal(r, S2_FAULT_MAPPED);
	}
	run->reason = HC_EXIT_HALT;
	return HC_OK;
}

static uint64_t run_touch(uint64_t vm, uint32_t vcpu, const uint64_t *gpas, unsigned n)
{
	uint64_t reason;
	if (!run_page)
		run_page = prim_page();
	guest_gpas = gpas;
	guest_n = n;
	host_hv_guest = touch_guest;
	assert_int_equal(C(HC_VCPU_RUN, vm, vcpu, run_page, 0, 0, 0, &reason), HC_OK);
	assert_int_equal(reason, ((struct hc_run *)(uintptr_t)run_page)->reason);
	return reason;
}

static struct s2_xlate xlate(uint64_t vm_id, uint64_t gpa)
{
	struct vm *vm = hv_vm_find((uint32_t)vm_id);
	struct vcpu *v = hv_vcpu_find(vm, 0);
	struct s2_xlate x;
	s2_translate(vm->hv.s2, v->hv.root, gpa, &x);
	return x;
}

// ---- tests -------------------------------------------------------------------------

static void test_deposit_checks(void **state)
{
	uint64_t res[3];
	uint64_t slat_pa = (uint64_t)(uintptr_t)slat_mem;

	assert_int_equal(C(HC_VERSION_FN, 0, 0, 0, 0, 0, 0, res), HC_OK);
	assert_int_equal(res[0], HC_VERSION);
	assert_int_equal(C(HC_DEPOSIT, slat_pa, 2, 0, 0, 0, 0, res), HC_E_SLAT);
	assert_int_equal(res[0], slat_pa);
	// A range running into Slat's region, and one beyond RAM.
	assert_int_equal(C(HC_DEPOSIT, slat_pa - PG, 2, 0, 0, 0, 0, res), HC_E_SLAT);
	assert_int_equal(res[0], slat_pa);
	assert_int_equal(owner(slat_pa - PG, NULL), OWN_PRIMARY);
	assert_int_equal(C(HC_DEPOSIT, ram_pa + RAM_SIZE, 1, 0, 0, 0, 0, res), HC_E_RANGE);
	assert_int_equal(host_hv_nranges, 0); // refusals touch no map
	uint64_t pa = deposit(8);
	assert_int_equal(owner(pa, NULL), OWN_SLAT);
	// Exactly the deposit left the primary's map, once.
	assert_int_equal(host_hv_nranges, 1);
	assert_int_equal(host_hv_ranges[0].unmap, 1);
	assert_int_equal(host_hv_ranges[0].pa, pa);
	assert_int_equal(host_hv_ranges[0].pages, 8);
	assert_true(host_hv_primary_unmapped(pa + 7 * PG));
	assert_false(host_hv_primary_unmapped(pa + 8 * PG));
	// Deposited twice: the pages are Slat's now; nothing changes.
	assert_int_equal(C(HC_DEPOSIT, pa, 1, 0, 0, 0, 0, res), HC_E_SLAT);
	assert_int_equal(host_hv_nranges, 1);
	struct hc_hv_stats s = hv_stats_now();
	assert_int_equal(s.deposited, 8);
	assert_int_equal(s.free + s.used, 8);
	assert_int_equal(s.used, s.own_nodes);
}

static void test_vm_needs_memory(void **state)
{
	uint64_t id;

	assert_int_equal(C(HC_VM_CREATE, 0, 2, 0, 0, 0, 0, &id), HC_E_NOMEM);
	assert_int_equal(hv_stats_now().vms, 0);
	// One page cannot hold the ownership records that claim it: refused,
	// the page stays the primary's.
	assert_int_equal(C(HC_DEPOSIT, next_free, 1, 0, 0, 0, 0, NULL), HC_E_NOMEM);
	assert_int_equal(owner(next_free, NULL), OWN_PRIMARY);
	assert_int_equal(hv_stats_now().deposited, 0);
	// It left the primary's map before the claim wrote into it, and came back.
	assert_int_equal(host_hv_nranges, 2);
	assert_int_equal(host_hv_ranges[0].unmap, 1);
	assert_int_equal(host_hv_ranges[0].pa, next_free);
	assert_int_equal(host_hv_ranges[0].pages, 1);
	assert_int_equal(host_hv_ranges[1].unmap, 0);
	assert_int_equal(host_hv_ranges[1].pa, next_free);
	assert_int_equal(host_hv_ranges[1].pages, 1);
	assert_false(host_hv_primary_unmapped(next_free));
	deposit(4); // the deposit's own ownership records come from it
	while (C(HC_VM_CREATE, 0, 2, 0, 0, 0, 0, &id) == HC_E_NOMEM)
		deposit(1);
	assert_int_equal(id, 1);
	assert_int_equal(C(HC_VM_CREATE, HC_VM_FLAG_DONATE, 2, 0, 0, 0, 0, &id), HC_E_INVAL);
	assert_int_equal(C(HC_VCPU_CREATE, 1, 2, 0, 0, 0, 0, NULL), HC_E_BAD_VCPU);
	assert_int_equal(C(HC_VCPU_CREATE, 7, 0, 0, 0, 0, 0, NULL), HC_E_BAD_VM);
	int r;
	while ((r = C(HC_VCPU_CREATE, 1, 0, 0, 0, 0, 0, NULL)) == HC_E_NOMEM)
		deposit(1);
	assert_int_equal(r, HC_OK);
	assert_int_equal(C(HC_VCPU_CREATE, 1, 0, 0, 0, 0, 0, NULL), HC_E_EXISTS);
	assert_int_equal(vm_stats_now(1).vcpus, 1);
	assert_int_equal(C(HC_VM_DESTROY, 1, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_VM_DESTROY, 1, 0, 0, 0, 0, 0, NULL), HC_E_BAD_VM);
	struct hc_hv_stats s = hv_stats_now();
	assert_int_equal(s.vms, 0);
	assert_int_equal(s.used, s.own_nodes); // the VM's pages are all back
}

static void test_slot_ownership(void **state)
{
	uint64_t res[3];

	deposit(64);
	uint64_t a = vm_new(1), b = vm_new(1);
	assert_int_equal(C(HC_VCPU_CREATE, a, 0, 0, 0, 0, 0, NULL), HC_OK);
	uint64_t mem = next_free;
	next_free += 64 * PG;
	// A frame of Slat's in the middle: refused with its index, nothing shared.
	uint64_t l = frames(mem, 16, 1);
	((uint64_t *)(uintptr_t)l)[9] = (uint64_t)(uintptr_t)slat_mem >> 12;
	uint64_t used0 = hv_stats_now().used;
	assert_int_equal(C(HC_SLOT_SET, a, 1, HC_SLOT_ADD, 0x100000, l, 16, res), HC_E_SLAT);
	assert_int_equal(res[0], 9);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	assert_int_equal(hv_stats_now().used, used0);
	// Beyond RAM, and a list page that is not the primary's.
	((uint64_t *)(uintptr_t)l)[9] = (ram_pa + RAM_SIZE) >> 12;
	assert_int_equal(C(HC_SLOT_SET, a, 1, HC_SLOT_ADD, 0x100000, l, 16, res), HC_E_RANGE);
	assert_int_equal(
	    C(HC_SLOT_SET, a, 1, HC_SLOT_ADD, 0x100000, (uint64_t)(uintptr_t)slat_mem, 16, res),
	    HC_E_SLAT);
	// Good slot; the same frames for VM b are another VM's.
	l = frames(mem, 16, 1);
	assert_int_equal(C(HC_SLOT_SET, a, 1, HC_SLOT_ADD, 0x100000, l, 16, NULL), HC_OK);
	uint32_t who;
	assert_int_equal(owner(mem + 5 * PG, &who), OWN_SHARED);
	assert_int_equal(who, a);
	uint64_t l2 = frames(mem + 15 * PG, 4, 1); // overlaps a's last frame
	assert_int_equal(C(HC_SLOT_SET, b, 1, HC_SLOT_ADD, 0, l2, 4, res), HC_E_OTHER_VM);
	assert_int_equal(res[0], 0);
	assert_int_equal(owner(mem + 16 * PG, NULL), OWN_PRIMARY); // not left half-shared
	// The same frame again for a: already shared with a.
	assert_int_equal(C(HC_SLOT_SET, a, 2, HC_SLOT_ADD, 0x900000, l2, 4, res),
			 HC_E_ALREADY_SHARED);
	// Overlapping gpa, duplicate id, unknown slot.
	uint64_t l3 = frames(mem + 32 * PG, 4, 1);
	assert_int_equal(C(HC_SLOT_SET, a, 2, HC_SLOT_ADD, 0x10f000, l3, 4, NULL), HC_E_EXISTS);
	assert_int_equal(owner(mem + 32 * PG, NULL), OWN_PRIMARY);
	assert_int_equal(C(HC_SLOT_SET, a, 1, HC_SLOT_ADD, 0x800000, l3, 4, NULL), HC_E_EXISTS);
	assert_int_equal(C(HC_SLOT_SET, a, 5, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_E_BAD_SLOT);
	assert_int_equal(C(HC_SLOT_SET, a, 5, HC_SLOT_MOVE, 0x800000, 0, 0, NULL), HC_E_BAD_SLOT);
	struct hc_vm_stats vs = vm_stats_now(a);
	assert_int_equal(vs.slots, 1);
	assert_int_equal(vs.slot_pages, 16);
	// Destroy gives the frames back.
	assert_int_equal(C(HC_VM_DESTROY, a, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(owner(mem + 5 * PG, NULL), OWN_PRIMARY);
	assert_int_equal(C(HC_VM_DESTROY, b, 0, 0, 0, 0, 0, NULL), HC_OK);
}

// 2M-aligned contiguous frames give one 2M leaf; scattered ones 4K leaves; a
// delete zaps exactly the slot's leaves and gives its frames back; a move
// keeps the frames; the other slot's mappings are not touched.
static void test_slot_fault_delete_move(void **state)
{
	deposit(128);
	uint64_t vm = vm_new(1);
	assert_int_equal(C(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	next_free = (next_free + (2 << 20) - 1) & ~((2ull << 20) - 1);
	uint64_t big = next_free;
	next_free += 2 << 20;
	uint64_t scat = next_free;
	next_free += 64 * PG;
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD, 0x200000, frames(big, 512, 1), 512, NULL), HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 2, HC_SLOT_ADD, 0x1000000, frames(scat, 8, 3), 8, NULL),
			 HC_OK);
	const uint64_t g1[] = {0x200000 + 0x1234, 0x3ff000, 0x1000000, 0x1003000, 0x1007008};
	assert_int_equal(run_touch(vm, 0, g1, 5), HC_EXIT_HALT);
	struct hc_vm_stats s = vm_stats_now(vm);
	assert_int_equal(s.leaves_mapped[1], 1);
	assert_int_equal(s.leaves_mapped[0], 3);
	assert_int_equal(xlate(vm, 0x1003010).hpa, scat + 3 * 3 * PG + 0x10);
	assert_int_equal(xlate(vm, 0x3ff008).hpa, big + 0x1ff008);
	// A hole is an MMIO exit.
	const uint64_t hole[] = {0x5000000};
	assert_int_equal(run_touch(vm, 0, hole, 1), HC_EXIT_MMIO);
	// Delete slot 2: its 3 leaves zapped, nothing else; frames back.
	assert_int_equal(C(HC_SLOT_SET, vm, 2, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_OK);
	struct hc_vm_stats d = vm_stats_now(vm);
	assert_int_equal(d.leaves_zapped - s.leaves_zapped, 3);
	assert_false(xlate(vm, 0x1003000).mapped);
	assert_true(xlate(vm, 0x3ff000).mapped);
	assert_int_equal(owner(scat + 3 * PG, NULL), OWN_PRIMARY);
	assert_int_equal(d.slots, 1);
	// Re-touching slot 1 takes no fault: it was not disturbed.
	const uint64_t g2[] = {0x200000, 0x3ff000, 0x2ab000};
	uint64_t f0 = vm_stats_now(vm).faults;
	assert_int_equal(run_touch(vm, 0, g2, 3), HC_EXIT_HALT);
	assert_int_equal(vm_stats_now(vm).faults, f0);
	// Move slot 1: same frames at the new gpa, the old range unmapped.
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_MOVE, 0x40000000, 0, 0, NULL), HC_OK);
	assert_false(xlate(vm, 0x200000).mapped);
	const uint64_t g3[] = {0x40000000 + 0x5008};
	assert_int_equal(run_touch(vm, 0, g3, 1), HC_EXIT_HALT);
	assert_int_equal(xlate(vm, 0x40005008).hpa, big + 0x5008);
	assert_int_equal(vm_stats_now(vm).faults, f0 + 1);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(owner(big, NULL), OWN_PRIMARY);
}

// Lazy slots (1.1): ADD_EMPTY shares nothing; a touch of a page without a
// frame is a MEMFAULT exit naming the slot and page; FILL gives frames (each
// refusal with its code and index, nothing changed), the touch then maps
// them; DROP zaps exactly the dropped pages' leaves and gives their frames
// back; DELETE of a half-filled slot gives back exactly the frames it had.
static void test_lazy_slot(void **state)
{
	deposit(64);
	uint64_t vm = vm_new(1), other = vm_new(1), got;
	assert_int_equal(C(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	uint64_t mem = next_free, taken = mem + 64 * PG;
	next_free += 80 * PG;
	assert_int_equal(C(HC_SLOT_SET, other, 1, HC_SLOT_ADD, 0, frames(taken, 1, 1), 1, NULL),
			 HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_ADD_EMPTY, 0x100000, 0, 64, NULL), HC_OK);
	struct hc_vm_stats s0 = vm_stats_now(vm);
	assert_int_equal(s0.slots, 1);
	assert_int_equal(s0.slot_pages, 0);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	const uint64_t t5[] = {0x100000 + 5 * PG + 0x18};
	assert_int_equal(run_touch(vm, 0, t5, 1), HC_EXIT_MEMFAULT);
	struct hc_run *run = (struct hc_run *)(uintptr_t)run_page;
	assert_int_equal(run->u.memfault.gpa, t5[0]);
	assert_int_equal(run->u.memfault.slot, 3);
	assert_int_equal(run->u.memfault.index, 5);
	assert_int_equal(run->u.memfault.is_write, 1);
	assert_false(xlate(vm, t5[0]).mapped);
	// Refusals: each names the list index, and nothing changes.
	uint64_t l = frames(mem, 4, 1);
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_FILL, 62, l, 4, &got), HC_E_RANGE);
	assert_int_equal(C(HC_SLOT_SET, vm, 4, HC_SLOT_FILL, 0, l, 4, &got), HC_E_BAD_SLOT);
	((uint64_t *)(uintptr_t)l)[2] = taken >> 12;
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_FILL, 4, l, 4, &got), HC_E_OTHER_VM);
	assert_int_equal(got, 2);
	((uint64_t *)(uintptr_t)l)[2] = (uint64_t)(uintptr_t)slat_mem >> 12;
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_FILL, 4, l, 4, &got), HC_E_SLAT);
	assert_int_equal(got, 2);
	((uint64_t *)(uintptr_t)l)[2] = mem >> 12; // the same frame as index 0
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_FILL, 4, l, 4, &got), HC_E_ALREADY_SHARED);
	assert_int_equal(got, 2);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	assert_int_equal(vm_stats_now(vm).slot_pages, 0);
	// Pages 4..7 get frames mem+0..3; a second FILL of page 5 is EXISTS.
	l = frames(mem, 4, 1);
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_FILL, 4, l, 4, &got), HC_OK);
	uint32_t o;
	assert_int_equal(owner(mem + 3 * PG, &o), OWN_SHARED);
	assert_int_equal(o, vm);
	assert_int_equal(vm_stats_now(vm).slot_pages, 4);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 3, HC_SLOT_FILL, 5, frames(mem + 10 * PG, 1, 1), 1, &got),
	    HC_E_EXISTS);
	assert_int_equal(got, 0);
	assert_int_equal(owner(mem + 10 * PG, NULL), OWN_PRIMARY);
	const uint64_t t47[] = {0x100000 + 4 * PG, t5[0], 0x100000 + 7 * PG + 8};
	assert_int_equal(run_touch(vm, 0, t47, 3), HC_EXIT_HALT);
	assert_int_equal(xlate(vm, t5[0]).hpa, mem + PG + 0x18);
	assert_int_equal(xlate(vm, 0x100000 + 7 * PG + 8).hpa, mem + 3 * PG + 8);
	// DROP pages 5..9: two frames had pages mapped, two leaves go, page 4's stays.
	struct hc_vm_stats s1 = vm_stats_now(vm);
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_DROP, 5, 0, 5, &got), HC_OK);
	assert_int_equal(got, 3); // pages 5, 6, 7 had frames
	struct hc_vm_stats s2 = vm_stats_now(vm);
	assert_int_equal(s2.leaves_zapped - s1.leaves_zapped, 2); // 5 and 7 were mapped
	assert_int_equal(s2.slot_pages, 1);
	assert_false(xlate(vm, t5[0]).mapped);
	assert_true(xlate(vm, 0x100000 + 4 * PG).mapped);
	for (unsigned i = 1; i < 4; i++)
		assert_int_equal(owner(mem + i * PG, NULL), OWN_PRIMARY);
	assert_int_equal(owner(mem, NULL), OWN_SHARED);
	assert_int_equal(run_touch(vm, 0, t5, 1), HC_EXIT_MEMFAULT); // absent again
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_DROP, 20, 0, 10, &got), HC_OK);
	assert_int_equal(got, 0);
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_DROP, 60, 0, 5, &got), HC_E_RANGE);
	// DELETE with one page filled gives back exactly that frame.
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	assert_int_equal(vm_stats_now(vm).slot_pages, 0);
	assert_int_equal(hv_stats_now().shared_frames, 1); // the other VM's frame
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_VM_DESTROY, other, 0, 0, 0, 0, 0, NULL), HC_OK);
}

// Read-only slots (1.2): HC_SLOT_F_READONLY with ADD or ADD_EMPTY maps the
// slot's frames for reads only; a write is an MMIO exit at its gpa and maps
// nothing writable; a writable slot beside it maps writes (two-sided). The
// flag with another op, and unknown flag bits, are refused with nothing done.
static void test_readonly_slot(void **state)
{
	deposit(64);
	uint64_t vm = vm_new(1), mem = next_free, got;
	next_free += 8 * PG;
	assert_int_equal(C(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD | HC_SLOT_F_READONLY, 0x100000,
			   frames(mem, 4, 1), 4, NULL),
			 HC_OK);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 2, HC_SLOT_ADD_EMPTY | HC_SLOT_F_READONLY, 0x200000, 0, 4, NULL),
	    HC_OK);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 3, HC_SLOT_ADD, 0x300000, frames(mem + 4 * PG, 2, 1), 2, NULL),
	    HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 4, HC_SLOT_ADD | (1ull << 10), 0x400000,
			   frames(mem + 6 * PG, 1, 1), 1, NULL),
			 HC_E_INVAL);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE | HC_SLOT_F_READONLY, 0, 0, 0, NULL),
			 HC_E_INVAL);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_MOVE | HC_SLOT_F_READONLY, 0x500000, 0, 0, NULL),
	    HC_E_INVAL);
	assert_int_equal(C(HC_SLOT_SET, vm, 2, HC_SLOT_FILL | HC_SLOT_F_READONLY, 0,
			   frames(mem + 6 * PG, 1, 1), 1, &got),
			 HC_E_INVAL);
	struct hc_vm_stats s0 = vm_stats_now(vm);
	assert_int_equal(s0.slots, 3);
	assert_int_equal(s0.slot_pages, 6);
	assert_int_equal(owner(mem + 6 * PG, NULL), OWN_PRIMARY);
	// A read maps the frame without write permission.
	const uint64_t rd[] = {0x100000 + PG + 8};
	guest_reads = true;
	assert_int_equal(run_touch(vm, 0, rd, 1), HC_EXIT_HALT);
	struct s2_xlate x = xlate(vm, rd[0]);
	assert_true(x.mapped);
	assert_int_equal(x.hpa, mem + PG + 8);
	assert_int_equal(x.prot & S2_PROT_W, 0);
	assert_true(x.prot & S2_PROT_R);
	// A write, mapped or not yet, is an MMIO exit at its address.
	guest_reads = false;
	struct hc_run *run = (struct hc_run *)(uintptr_t)run_page;
	assert_int_equal(run_touch(vm, 0, rd, 1), HC_EXIT_MMIO);
	assert_int_equal(run->u.mmio.gpa, rd[0]);
	const uint64_t wr2[] = {0x100000 + 3 * PG};
	assert_int_equal(run_touch(vm, 0, wr2, 1), HC_EXIT_MMIO);
	assert_false(xlate(vm, wr2[0]).mapped);
	assert_int_equal(xlate(vm, rd[0]).prot & S2_PROT_W, 0);
	// The lazy read-only slot: a write never needs the frame (an MMIO exit
	// as KVM's), a read of a page without one exits MEMFAULT; filled, the
	// read maps it and a write is still an MMIO exit.
	const uint64_t lz[] = {0x200000 + 2 * PG};
	assert_int_equal(run_touch(vm, 0, lz, 1), HC_EXIT_MMIO);
	guest_reads = true;
	assert_int_equal(run_touch(vm, 0, lz, 1), HC_EXIT_MEMFAULT);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 2, HC_SLOT_FILL, 2, frames(mem + 6 * PG, 1, 1), 1, &got), HC_OK);
	assert_int_equal(run_touch(vm, 0, lz, 1), HC_EXIT_HALT);
	assert_int_equal(xlate(vm, lz[0]).hpa, mem + 6 * PG);
	guest_reads = false;
	assert_int_equal(run_touch(vm, 0, lz, 1), HC_EXIT_MMIO);
	// The writable slot maps a write.
	guest_reads = false;
	const uint64_t w3[] = {0x300000 + PG};
	assert_int_equal(run_touch(vm, 0, w3, 1), HC_EXIT_HALT);
	assert_true(xlate(vm, w3[0]).prot & S2_PROT_W);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
}

// FILL takes one scratch page from the pool before changing anything: with
// none, NOMEM and nothing changed; after a deposit, done. DROP takes none
// (the primary's MMU notifier calls it): it works on an empty pool.
// Dirty logging (1.9): a slot added with HC_SLOT_F_DIRTY_LOG reports the
// pages the guest wrote (DIRTY_GET leaves the log, DIRTY_TAKE clears it and
// write-protects), DIRTY_CLEAR clears what its mask names; LOG turns it off
// and on; the page must be the primary's; bad ranges are refused.
static void test_dirty_log_slot(void **state)
{
	deposit(64);
	uint64_t vm = vm_new(1), mem = next_free;
	next_free += 8 * PG;
	uint64_t page = prim_page();
	uint64_t *bits = (uint64_t *)(uintptr_t)page;
	uint64_t slat_pa = (uint64_t)(uintptr_t)slat_mem;
	const uint64_t w[] = {0x100000 + 1 * PG, 0x100000 + 3 * PG + 8};
	const uint64_t r[] = {0x100000 + 2 * PG};

	assert_int_equal(C(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD | HC_SLOT_F_DIRTY_LOG, 0x100000,
			   frames(mem, 8, 1), 8, NULL),
			 HC_OK);
	assert_int_equal(run_touch(vm, 0, w, 2), HC_EXIT_HALT);
	guest_reads = true;
	assert_int_equal(run_touch(vm, 0, r, 1), HC_EXIT_HALT);
	guest_reads = false;
	assert_false(xlate(vm, r[0]).prot & S2_PROT_W); // read: read-only
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, 8, NULL), HC_OK);
	assert_int_equal(bits[0], 0xa); // pages 1 and 3
	assert_true(xlate(vm, w[0]).prot & S2_PROT_W);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_TAKE, 0, page, 8, NULL), HC_OK);
	assert_int_equal(bits[0], 0xa);
	assert_false(xlate(vm, w[0]).prot & S2_PROT_W);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, 8, NULL), HC_OK);
	assert_int_equal(bits[0], 0);
	// CLEAR: page 1 written again, the mask names pages 1 and 2.
	assert_int_equal(run_touch(vm, 0, w, 1), HC_EXIT_HALT);
	bits[0] = 0x6;
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_CLEAR, 0, page, 8, NULL), HC_OK);
	assert_int_equal(bits[0], 0x2);
	assert_false(xlate(vm, w[0]).prot & S2_PROT_W);
	// Refused: not the primary's page, a range outside the slot or not
	// aligned to 64 pages, a LOG argument other than 0 or 1, an unknown flag.
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, slat_pa, 8, NULL), HC_E_SLAT);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, 9, NULL), HC_E_RANGE);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 1, page, 7, NULL), HC_E_INVAL);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, 0, NULL), HC_E_INVAL);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, HC_DIRTY_MAX_PAGES + 64, NULL),
	    HC_E_TOO_MANY);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_LOG, 2, 0, 0, NULL), HC_E_INVAL);
	assert_int_equal(C(HC_SLOT_SET, vm, 2, HC_SLOT_DIRTY_GET, 0, page, 8, NULL), HC_E_BAD_SLOT);
	// LOG 0: no log any more, and writes map writable without one.
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_LOG, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, 8, NULL), HC_E_INVAL);
	assert_false(xlate(vm, 0x100000 + 3 * PG).mapped); // the flag change zapped it
	// LOG 1 again: an empty log.
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_LOG, 1, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, 0, page, 8, NULL), HC_OK);
	assert_int_equal(bits[0], 0);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
}

// Lazy slots above 1 GiB (1.10): the frame list is a directory of
// directories. A slot of `n` pages at `gpa` logging dirty pages: its pages
// 262144 and above (past what two list levels hold) are filled, mapped by a
// fault, reported dirty, dropped and given back; the list's deposited pages
// are exactly `list` (taken all at ADD, all back at DELETE); an ADD the pool
// cannot hold is refused before it takes anything.
static void big_lazy_slot(uint64_t n, uint64_t gpa, uint64_t list)
{
	deposit(64);
	uint64_t vm = vm_new(1), got, mem = next_free;
	next_free += 4 * PG;
	uint64_t page = prim_page(), back = prim_page();
	uint64_t *bits = (uint64_t *)(uintptr_t)page;
	const uint64_t hi = HC_SLOT_PINNED_MAX_PAGES; // the first page a 2-level list lacks
	const uint64_t last = n - 1;

	assert_int_equal(C(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	// A one-page slot first: the VM's slot tables exist, so the big one's
	// ADD takes list pages only (and the engine's bitmap directory).
	assert_int_equal(C(HC_SLOT_SET, vm, 2, HC_SLOT_ADD_EMPTY, 0, 0, 1, NULL), HC_OK);
	assert_int_equal(C(HC_WITHDRAW, back, HC_LIST_MAX, 0, 0, 0, 0, &got), HC_OK);
	uint64_t meta0 = vm_stats_now(vm).meta_pages;
	// The pool is empty: refused, nothing taken or changed.
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD_EMPTY | HC_SLOT_F_DIRTY_LOG, gpa, 0, n, NULL),
	    HC_E_NOMEM);
	assert_int_equal(vm_stats_now(vm).meta_pages, meta0);
	assert_int_equal(vm_stats_now(vm).slots, 1);
	// One page short of the list (the ownership table takes some of a
	// deposit's pages for its own nodes): still refused, nothing kept.
	for (uint64_t f = 0; f < list - 1; f = hv_stats_now().free)
		deposit(list - 1 - f);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD_EMPTY | HC_SLOT_F_DIRTY_LOG, gpa, 0, n, NULL),
	    HC_E_NOMEM);
	assert_int_equal(vm_stats_now(vm).meta_pages, meta0);
	assert_int_equal(hv_stats_now().free, list - 1);
	const uint64_t bitmap = 1 + (n + 32767) / 32768; // the engine's: a directory and
							 // a page per 32768 pages
	deposit(64 + bitmap);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD_EMPTY | HC_SLOT_F_DIRTY_LOG, gpa, 0, n, NULL), HC_OK);
	uint64_t meta1 = vm_stats_now(vm).meta_pages;
	assert_int_equal(meta1 - meta0, list + bitmap);
	// FILL pages hi and last (never a 2-level list's); the page between them
	// stays absent.
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_FILL, hi, frames(mem, 1, 1), 1, &got),
			 HC_OK);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_FILL, last, frames(mem + PG, 1, 1), 1, &got),
			 HC_OK);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_FILL, n, frames(mem + 2 * PG, 1, 1), 1, &got),
	    HC_E_RANGE);
	assert_int_equal(owner(mem + 2 * PG, NULL), OWN_PRIMARY);
	assert_int_equal(vm_stats_now(vm).slot_pages, 2);
	const uint64_t w[] = {gpa + hi * PG + 8, gpa + last * PG + 0x10};
	assert_int_equal(run_touch(vm, 0, w, 2), HC_EXIT_HALT);
	assert_int_equal(xlate(vm, w[0]).hpa, mem + 8);
	assert_int_equal(xlate(vm, w[1]).hpa, mem + PG + 0x10);
	const uint64_t t[] = {gpa + (hi + 1) * PG};
	assert_int_equal(run_touch(vm, 0, t, 1), HC_EXIT_MEMFAULT);
	assert_int_equal(((struct hc_run *)(uintptr_t)run_page)->u.memfault.index, hi + 1);
	assert_int_equal(((struct hc_run *)(uintptr_t)run_page)->u.memfault.slot, 1);
	// The log: pages hi and last, each from its 64-page group (the same
	// group when the slot ends within 64 pages of hi).
	uint64_t g = last & ~63ull, hn = n - hi < 64 ? n - hi : 64;
	uint64_t hi_bits = 1 | (last - hi < 64 ? 1ull << (last - hi) : 0);
	uint64_t g_bits = 1ull << (last - g) | (g == hi ? 1 : 0);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, hi, page, hn, NULL), HC_OK);
	assert_int_equal(bits[0], hi_bits);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_TAKE, g, page, n - g, NULL), HC_OK);
	assert_int_equal(bits[0], g_bits);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_TAKE, hi, page, hn, NULL), HC_OK);
	assert_int_equal(bits[0], g == hi ? 0 : 1);
	assert_false(xlate(vm, w[0]).prot & S2_PROT_W);
	assert_false(xlate(vm, w[1]).prot & S2_PROT_W);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, g, page, n - g, NULL), HC_OK);
	assert_int_equal(bits[0], 0);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DIRTY_GET, hi, page, hn, NULL), HC_OK);
	assert_int_equal(bits[0], 0);
	// DROP of pages hi..last: both frames back, their leaves zapped.
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DROP, hi, 0, n - hi, &got), HC_OK);
	assert_int_equal(got, 2);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	assert_int_equal(owner(mem + PG, NULL), OWN_PRIMARY);
	assert_false(xlate(vm, w[1]).mapped);
	assert_int_equal(vm_stats_now(vm).slot_pages, 0);
	// DELETE: every list page back (the engine keeps its table pages).
	uint64_t tables = vm_stats_now(vm).meta_pages - meta1;
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(vm_stats_now(vm).meta_pages, meta0 + tables);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
}

// dirty_log_test's slot: 1 GiB and 3 pages, 513 list pages, 2 directories
// and the directory over them.
static void test_lazy_slot_over_1g(void **state)
{
	big_lazy_slot(HC_SLOT_PINNED_MAX_PAGES + 3, 1ull << 32, 513 + 2 + 1);
}

// The largest lazy slot, 64 GiB: 32768 list pages, 64 directories, 1 top
// page. One page more is refused, whatever the pool holds.
static void test_lazy_slot_max(void **state)
{
	uint64_t n = HC_SLOT_LAZY_MAX_PAGES;

	deposit(64);
	uint64_t vm = vm_new(1);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD_EMPTY, 0, 0, n + 1, NULL),
			 HC_E_TOO_MANY);
	assert_int_equal(
	    C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD, 0, prim_page(), HC_SLOT_PINNED_MAX_PAGES + 1, NULL),
	    HC_E_TOO_MANY);
	assert_int_equal(vm_stats_now(vm).slots, 0);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	big_lazy_slot(n, 1ull << 36, 32768 + 64 + 1);
}

static void test_lazy_slot_nomem(void **state)
{
	deposit(16);
	uint64_t vm = vm_new(1), got, mem = next_free;
	next_free += 4 * PG;
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD_EMPTY, 0, 0, 4, NULL), HC_OK);
	uint64_t l = frames(mem, 2, 1), back = prim_page();
	// The pool's free pages go back to the primary: it is empty now.
	assert_int_equal(C(HC_WITHDRAW, back, HC_LIST_MAX, 0, 0, 0, 0, &got), HC_OK);
	assert_int_equal(hv_stats_now().free, 0);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_FILL, 0, l, 2, &got), HC_E_NOMEM);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	assert_int_equal(vm_stats_now(vm).slot_pages, 0);
	deposit(1);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_FILL, 0, l, 2, &got), HC_OK);
	assert_int_equal(owner(mem + PG, NULL), OWN_SHARED);
	assert_int_equal(C(HC_WITHDRAW, back, HC_LIST_MAX, 0, 0, 0, 0, &got), HC_OK);
	assert_int_equal(hv_stats_now().free, 0);
	assert_int_equal(C(HC_SLOT_SET, vm, 1, HC_SLOT_DROP, 1, 0, 1, &got), HC_OK);
	assert_int_equal(got, 1);
	assert_int_equal(owner(mem + PG, NULL), OWN_PRIMARY);
	assert_int_equal(owner(mem, NULL), OWN_SHARED);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(owner(mem + PG, NULL), OWN_PRIMARY);
}

// A VM made with ZAP_ALL (the old way, for benchmarks): a delete zaps every
// slot's leaves, so the untouched slot refaults; the default VM above did not.
static void test_zap_all_vm(void **state)
{
	uint64_t id;

	deposit(64);
	assert_int_equal(C(HC_VM_CREATE, HC_VM_FLAG_ZAP_ALL, 1, 0, 0, 0, 0, &id), HC_OK);
	assert_int_equal(C(HC_VCPU_CREATE, id, 0, 0, 0, 0, 0, NULL), HC_OK);
	uint64_t m = next_free;
	next_free += 8 * PG;
	assert_int_equal(C(HC_SLOT_SET, id, 1, HC_SLOT_ADD, 0, frames(m, 4, 1), 4, NULL), HC_OK);
	assert_int_equal(
	    C(HC_SLOT_SET, id, 2, HC_SLOT_ADD, 0x100000, frames(m + 4 * PG, 4, 1), 4, NULL), HC_OK);
	const uint64_t g[] = {0, 0x1000, 0x100000};
	assert_int_equal(run_touch(id, 0, g, 3), HC_EXIT_HALT);
	uint64_t f0 = vm_stats_now(id).faults;
	assert_int_equal(C(HC_SLOT_SET, id, 2, HC_SLOT_DELETE, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(vm_stats_now(id).zap_all, 1);
	assert_int_equal(run_touch(id, 0, g, 2), HC_EXIT_HALT);
	assert_int_equal(vm_stats_now(id).faults, f0 + 2); // slot 1 refaulted
	assert_int_equal(C(HC_VM_DESTROY, id, 0, 0, 0, 0, 0, NULL), HC_OK);
}

// A slot larger than one list page goes through a directory of list pages.
static void test_slot_directory(void **state)
{
	deposit(64);
	uint64_t vm = vm_new(1);
	uint64_t mem = next_free;
	next_free += 700 * PG;
	uint64_t dir = prim_page();
	((uint64_t *)(uintptr_t)dir)[0] = frames(mem, 512, 1) >> 12;
	((uint64_t *)(uintptr_t)dir)[1] = frames(mem + 512 * PG, 188, 1) >> 12;
	uint64_t res[3];
	// A list page of Slat's in the directory: refused with its index.
	uint64_t keep = ((uint64_t *)(uintptr_t)dir)[1];
	((uint64_t *)(uintptr_t)dir)[1] = (uint64_t)(uintptr_t)slat_mem >> 12;
	assert_int_equal(C(HC_SLOT_SET, vm, 3, HC_SLOT_ADD, 0, dir, 700, res), HC_E_SLAT);
	assert_int_equal(res[0], 1);
	assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
	((uint64_t *)(uintptr_t)dir)[1] = keep;
	int r;
	while ((r = C(HC_SLOT_SET, vm, 3, HC_SLOT_ADD, 0, dir, 700, NULL)) == HC_E_NOMEM)
		deposit(1);
	assert_int_equal(r, HC_OK);
	assert_int_equal(owner(mem + 699 * PG, NULL), OWN_SHARED);
	assert_int_equal(owner(mem + 700 * PG, NULL), OWN_PRIMARY);
	assert_int_equal(vm_stats_now(vm).slot_pages, 700);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(owner(mem + 699 * PG, NULL), OWN_PRIMARY);
}

// Allocation failure at every point of a slot add leaves nothing changed.
static void test_slot_nomem_all_or_nothing(void **state)
{
	deposit(8);
	uint64_t vm = vm_new(1);
	uint64_t dir = prim_page();
	// The two list pages' frames lie 8 MiB apart, in different leaves of the
	// ownership table: the second share can run out after the first one.
	uint64_t mem = next_free, far = next_free + (8ull << 20);
	next_free = far + (8ull << 20); // deposits come from elsewhere again
	((uint64_t *)(uintptr_t)dir)[0] = frames(mem, 512, 1) >> 12;
	((uint64_t *)(uintptr_t)dir)[1] = frames(far, 88, 1) >> 12;
	unsigned nomem = 0;
	int r;
	for (;;) {
		uint64_t used = hv_stats_now().used, meta = vm_stats_now(vm).meta_pages;
		r = C(HC_SLOT_SET, vm, 1, HC_SLOT_ADD, 0, dir, 600, NULL);
		if (r != HC_E_NOMEM)
			break;
		nomem++;
		assert_int_equal(owner(mem, NULL), OWN_PRIMARY);
		assert_int_equal(owner(mem + 511 * PG, NULL), OWN_PRIMARY);
		assert_int_equal(owner(far + 87 * PG, NULL), OWN_PRIMARY);
		assert_int_equal(vm_stats_now(vm).meta_pages, meta);
		assert_int_equal(vm_stats_now(vm).slots, 0);
		(void)used;
		deposit(1);
	}
	assert_int_equal(r, HC_OK);
	assert_true(nomem >= 2); // each page the add takes ran out once
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
}

static void test_run_checks(void **state)
{
	uint64_t reason;

	deposit(32);
	uint64_t vm = vm_new(2);
	assert_int_equal(C(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	uint64_t run = prim_page();
	assert_int_equal(C(HC_VCPU_RUN, vm, 1, run, 0, 0, 0, &reason), HC_E_BAD_VCPU);
	assert_int_equal(C(HC_VCPU_RUN, vm + 1, 0, run, 0, 0, 0, &reason), HC_E_BAD_VM);
	assert_int_equal(C(HC_VCPU_RUN, vm, 0, (uint64_t)(uintptr_t)slat_mem, 0, 0, 0, &reason),
			 HC_E_SLAT);
	host_hv_guest = NULL;
	assert_int_equal(C(HC_VCPU_RUN, vm, 0, run, 0, 0, 0, &reason), HC_OK);
	assert_int_equal(reason, HC_EXIT_HALT);
	// A vCPU claimed by another CPU: BUSY for RUN, REGS and the VM's destroy.
	struct vcpu *v = hv_vcpu_find(hv_vm_find((uint32_t)vm), 0);
	struct vm *hvm = hv_vm_find((uint32_t)vm);
	v->hv.running_on = 2;
	hvm->hv.runs = 1;
	assert_int_equal(C(HC_VCPU_RUN, vm, 0, run, 0, 0, 0, &reason), HC_E_BUSY);
	assert_int_equal(C(HC_VCPU_GET_REGS, vm, 0, run, 0, 0, 0, NULL), HC_E_BUSY);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_E_BUSY);
	v->hv.running_on = 0;
	hvm->hv.runs = 0;
	// Registers: an EL2 pstate is refused and changes nothing.
	uint64_t regs = prim_page();
	struct hc_regs_arm64 *ra = (struct hc_regs_arm64 *)(uintptr_t)regs;
	ra->pc = 0x1000;
	ra->pstate = 0x3c5;
	assert_int_equal(C(HC_VCPU_SET_REGS, vm, 0, regs, 0, 0, 0, NULL), HC_OK);
	ra->pc = 0x2000;
	ra->pstate = 0x3c9; // EL2h
	assert_int_equal(C(HC_VCPU_SET_REGS, vm, 0, regs, 0, 0, 0, NULL), HC_E_INVAL);
	memset(ra, 0, sizeof(*ra));
	assert_int_equal(C(HC_VCPU_GET_REGS, vm, 0, regs, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(ra->pc, 0x1000);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(C(HC_VCPU_RUN, vm, 0, run, 0, 0, 0, &reason), HC_E_BAD_VM);
}

// ---- fuzz ------------------------------------------------------------------------------
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

// 10^5 calls with random and hostile arguments (Slat's pages, the victim's
// frames, pages of the pool, huge counts, bad ids) in random order with
// valid ones; afterwards the victim's slot is mapped as before, its frames
// are still shared with it, and the accounting holds.
static void test_fuzz_calls(void **state)
{
	deposit(256);
	uint64_t victim = vm_new(1);
	assert_int_equal(C(HC_VCPU_CREATE, victim, 0, 0, 0, 0, 0, NULL), HC_OK);
	uint64_t vmem = next_free;
	next_free += 16 * PG;
	for (unsigned i = 0; i < 16; i++)
		memset((void *)(uintptr_t)(vmem + i * PG), 0x5a ^ i, PG);
	assert_int_equal(
	    C(HC_SLOT_SET, victim, 7, HC_SLOT_ADD, 0x100000, frames(vmem, 16, 1), 16, NULL), HC_OK);
	const uint64_t gv[] = {0x100000, 0x10f000};
	assert_int_equal(run_touch(victim, 0, gv, 2), HC_EXIT_HALT);
	uint64_t pool = (uint64_t)(uintptr_t)hv.vms; // a page of Slat's deposit pool
	uint64_t lists[4];
	for (unsigned i = 0; i < 4; i++)
		lists[i] = frames(vmem, 16, 1); // naming the victim's frames
	uint64_t arena = next_free;
	next_free += 256 * PG;
	uint64_t good = frames(arena + 128 * PG, 64, 1); // frames free for the taking
	const uint64_t hostile[] = {0,
				    (uint64_t)(uintptr_t)slat_mem,
				    pool,
				    vmem,
				    vmem + 5 * PG,
				    lists[0],
				    arena,
				    good,
				    arena + 17 * PG,
				    ram_pa + RAM_SIZE,
				    ~0ull,
				    1ull << 52,
				    0xfff,
				    victim,
				    1,
				    2,
				    3,
				    HC_MAX_SLOTS,
				    HC_MAX_SLOTS - 1,
				    HC_LIST_MAX + 1,
				    HC_DEPOSIT_MAX,
				    1ull << 40};
	const unsigned nh = sizeof(hostile) / sizeof(hostile[0]);
	unsigned ok = 0, by_fn[HC_FN_COUNT] = {0}, slot_codes[17] = {0};
	host_hv_guest = NULL;
	for (unsigned n = 0; n < 100000; n++) {
		// The generic calls (the architecture's range: test_arch_calls and,
		// for x86's decoder, test_hcall_args).
		static const unsigned nargs[HC_HV_STATS + 1] = {0, 2, 2, 2, 1, 2, 6, 3, 3, 3, 2, 1};
		uint64_t fn = rnd() % (HC_HV_STATS + 1), a[6];
		if (fn == HC_WITHDRAW && rnd() % 16) // keep the pool from running dry
			fn = HC_SLOT_SET;
		for (unsigned i = 0; i < 6; i++)
			a[i] = rnd() % 3 ? hostile[rnd() % nh] : (rnd() % 4 ? rnd() % 64 : rnd());
		for (unsigned i = nargs[fn]; i < 6; i++) // mostly well-formed: unused zero
			if (rnd() % 8)
				a[i] = 0;
		if (fn == HC_VM_DESTROY && a[0] == victim)
			a[0] = victim + 1; // the victim must survive; its id is tried below
		if (fn == HC_WITHDRAW)
			a[0] = arena + (rnd() % 8) * PG; // (withdrawn pages go back: fine)
		if (fn == HC_DEPOSIT && a[0] >= ram_pa && a[0] < ram_pa + RAM_SIZE)
			a[1] = a[1] % 4 + 1; // keep the test's own later pages the primary's
		if (fn == HC_SLOT_SET && rnd() % 2) { // reach the ownership checks often
			a[0] = rnd() % 2 ? victim : rnd() % 8 + 1;
			a[1] = rnd() % 16;
			a[2] = rnd() % 4;
			a[4] = rnd() % 2 ? good : lists[rnd() % 4];
			a[5] = rnd() % 16 + 1;
		}
		if (fn == HC_SLOT_SET && a[0] == victim && a[1] == 7)
			a[1] = 8; // the victim's own slot stays
		int64_t r = call(fn, a[0], a[1], a[2], a[3], a[4], a[5], NULL);
		assert_true(r <= 0 && r >= -16);
		if (fn == HC_SLOT_SET)
			slot_codes[-r]++;
		if (!r) {
			ok++;
			by_fn[fn]++;
		}
	}
	print_message("fuzz: %u of 100000 calls accepted (deposit %u, vm_create %u, slot %u, "
		      "withdraw %u, vcpu %u, stats %u)\n",
		      ok, by_fn[HC_DEPOSIT], by_fn[HC_VM_CREATE], by_fn[HC_SLOT_SET],
		      by_fn[HC_WITHDRAW], by_fn[HC_VCPU_CREATE], by_fn[HC_HV_STATS]);
	// The ownership checks were reached with each refusal, and accept paths too.
	assert_true(slot_codes[0] && slot_codes[-HC_E_SLAT] && slot_codes[-HC_E_OTHER_VM] &&
		    slot_codes[-HC_E_ALREADY_SHARED] && slot_codes[-HC_E_RANGE]);
	const enum hc_fn must[] = {HC_VERSION_FN,  HC_DEPOSIT,	HC_WITHDRAW, HC_VM_CREATE,
				   HC_VCPU_CREATE, HC_SLOT_SET, HC_HV_STATS};
	for (unsigned i = 0; i < sizeof(must) / sizeof(must[0]); i++)
		assert_true(by_fn[must[i]] > 0);
	// The victim: mapped as before, frames shared with it, contents intact.
	uint32_t who;
	assert_int_equal(owner(vmem + 3 * PG, &who), OWN_SHARED);
	assert_int_equal(who, victim);
	assert_int_equal(xlate(victim, 0x10f008).hpa, vmem + 15 * PG + 8);
	for (unsigned i = 0; i < 16; i++)
		assert_int_equal(((uint8_t *)(uintptr_t)(vmem + i * PG))[100], 0x5a ^ i);
	// Accounting: everything deposited is free, used or withdrawn.
	struct hc_hv_stats s = hv_stats_now();
	assert_int_equal(s.deposited - s.withdrawn, s.free + s.used);
	// Destroy every VM the fuzz made, then the victim.
	for (struct vm *v = hv.vms; v; v = hv.vms)
		assert_int_equal(C(HC_VM_DESTROY, v->id, 0, 0, 0, 0, 0, NULL), HC_OK);
	assert_int_equal(hv_stats_now().vms, 0);
	assert_int_equal(owner(vmem, NULL), OWN_PRIMARY);
}

// An architecture without calls (arm64) gives hv_init no arch_call: core
// answers each number of the range HC_E_UNKNOWN itself, counted as refused.
static void test_no_arch_calls(void **state)
{
	uint64_t res[3] = {1, 1, 1};

	host_hv_arch_fn = 0;
	for (uint32_t fn = HC_FN_ARCH_FIRST; fn < HC_FN_ARCH_END; fn++) {
		uint64_t before = hv.calls_failed;
		assert_int_equal(C(fn, 1, 2, 3, 4, 5, fn, res), HC_E_UNKNOWN);
		assert_true(!res[0] && !res[1] && !res[2]);
		assert_int_equal(hv.calls_failed, before + 1);
	}
	assert_int_equal(host_hv_arch_fn, 0); // the recorder was never called
}

// The architecture's range goes to hv_boot.arch_call with its raw registers
// (the hosted recorder answers HC_E_UNKNOWN); the lookup core offers its
// handlers checks the page, the VM, the vCPU and a RUN in that order.
static void test_arch_calls(void **state)
{
	uint64_t res[3] = {1, 1, 1};

	for (uint32_t fn = HC_FN_ARCH_FIRST; fn < HC_FN_ARCH_END; fn++) {
		uint64_t before = hv.calls_failed;
		assert_int_equal(C(fn, 1, 2, 3, 4, 5, fn, res), HC_E_UNKNOWN);
		assert_int_equal(host_hv_arch_fn, fn);
		assert_int_equal(host_hv_arch_args[0], 1);
		assert_int_equal(host_hv_arch_args[5], fn);
		assert_true(!res[0] && !res[1] && !res[2]);
		assert_int_equal(hv.calls_failed, before + 1);
	}
	host_hv_arch_fn = 0;
	assert_int_equal(C(HC_FN_END, 0, 0, 0, 0, 0, 0, NULL), HC_E_UNKNOWN);
	assert_int_equal(host_hv_arch_fn, 0); // beyond every call: core's refusal
	assert_int_not_equal(C(HC_LOG_READ, 0, 0, 0, 0, 0, 0, NULL), HC_E_UNKNOWN);
	assert_int_equal(host_hv_arch_fn, 0); // LOG_READ (1.14) is core's, after the range
	deposit(32);
	uint64_t vm = vm_new(2), page = prim_page(), slat = (uint64_t)(uintptr_t)slat_mem;
	struct vcpu *v = NULL;
	void *p = NULL;
	assert_int_equal(C(HC_VCPU_CREATE, vm, 1, 0, 0, 0, 0, NULL), HC_OK);
	mm_spin_lock(&hv.lock);
	assert_int_equal(hv_stopped_vcpu(vm + 1, 5, slat, &p, &v), HC_E_SLAT);
	assert_int_equal(hv_stopped_vcpu(vm + 1, 5, page, &p, &v), HC_E_BAD_VM);
	assert_int_equal(hv_stopped_vcpu(vm, 0, page, &p, &v), HC_E_BAD_VCPU);
	assert_null(v);
	assert_int_equal(hv_stopped_vcpu(vm, 1, page, &p, &v), HC_OK);
	assert_int_equal(v->index, 1);
	assert_ptr_equal(p, (void *)(uintptr_t)page);
	v->hv.running_on = 1;
	assert_int_equal(hv_stopped_vcpu(vm, 1, page, &p, &v), HC_E_BUSY);
	v->hv.running_on = 0;
	mm_spin_unlock(&hv.lock);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
}

// The primary's table pool runs dry: DEPOSIT and WITHDRAW answer NOMEM and
// change nothing (ownership, pool, the primary's map).
static void test_primary_map_nomem(void **state)
{
	uint64_t got, list = prim_page();

	host_hv_primary_fail = 1;
	assert_int_equal(C(HC_DEPOSIT, next_free, 8, 0, 0, 0, 0, NULL), HC_E_NOMEM);
	assert_int_equal(owner(next_free, NULL), OWN_PRIMARY);
	assert_int_equal(hv_stats_now().deposited, 0);
	assert_int_equal(host_hv_nranges, 0);
	uint64_t pa = deposit(8);
	struct hc_hv_stats before = hv_stats_now();
	host_hv_primary_fail = 1;
	assert_int_equal(C(HC_WITHDRAW, list, 2, 0, 0, 0, 0, &got), HC_E_NOMEM);
	struct hc_hv_stats after = hv_stats_now();
	assert_int_equal(after.free, before.free);
	assert_int_equal(after.withdrawn, 0);
	for (uint64_t i = 0; i < 8; i++) {
		assert_int_equal(owner(pa + i * PG, NULL), OWN_SLAT);
		assert_true(host_hv_primary_unmapped(pa + i * PG));
	}
	// Then it works: two pages back, mapped before they are released.
	assert_int_equal(C(HC_WITHDRAW, list, 2, 0, 0, 0, 0, &got), HC_OK);
	assert_int_equal(got, 2);
	for (uint64_t i = 0; i < got; i++) {
		uint64_t p = ((uint64_t *)(uintptr_t)list)[i] << 12;
		assert_int_equal(owner(p, NULL), OWN_PRIMARY);
		assert_false(host_hv_primary_unmapped(p));
	}
}

// A primary fault on its own SLAT: retried (a concurrent break-before-make)
// exactly HV_FAULT_RETRIES times in a row on a frame the primary owns; never
// on a deposited frame, Slat's region or beyond RAM; the count restarts on
// another frame.
static void test_primary_fault_retry(void **state)
{
	struct vcpu v = {0};
	uint64_t own = prim_page(), own2 = prim_page(), dep = deposit(8);
	unsigned n = 0;

	while (hv_primary_fault_retry(&v, own + 0x18))
		assert_true(++n <= HV_FAULT_RETRIES);
	assert_int_equal(n, HV_FAULT_RETRIES);
	assert_true(hv_primary_fault_retry(&v, own2)); // another frame: counted anew
	assert_true(hv_primary_fault_retry(&v, own));
	assert_false(hv_primary_fault_retry(&v, dep));		// deposited: Slat's
	assert_false(hv_primary_fault_retry(&v, dep + 7 * PG)); // the last one too
	assert_false(hv_primary_fault_retry(&v, (uint64_t)(uintptr_t)slat_mem)); // Slat's region
	assert_false(hv_primary_fault_retry(&v, ram_pa + RAM_SIZE));		 // beyond RAM
	assert_false(hv_primary_fault_retry(&v, 0));				 // not RAM
}

// LOG_READ (1.14): a window of Slat's log ring into a primary page, through
// the dispatcher: the bytes log_ring_read gives, the positions, a page of
// Slat's or another VM's refused, a position past the end refused.
static void test_log_read(void **state)
{
	uint64_t res[3], page = prim_page(), slat = (uint64_t)(uintptr_t)slat_mem;
	uint64_t first, end;
	char want[HC_LOG_READ_MAX];

	log_info("test_log_read: a line for the primary\n");
	long n = log_ring_read(0, want, sizeof(want), &first, &end);
	assert_true(n > 0 && end >= 38);
	assert_int_equal(C(HC_LOG_READ, page, end - 38, 0, 0, 0, 0, res), HC_OK);
	assert_true(res[0] == 38 && res[1] == end - 38 && res[2] == end);
	assert_memory_equal((void *)(uintptr_t)page, "test_log_read: a line for the primary\n", 38);
	assert_int_equal(C(HC_LOG_READ, page, 0, 0, 0, 0, 0, res), HC_OK);
	assert_true(res[0] == (uint64_t)n && res[1] == first && res[2] == end);
	assert_memory_equal((void *)(uintptr_t)page, want, (size_t)n);
	assert_int_equal(C(HC_LOG_READ, page, end, 0, 0, 0, 0, res), HC_OK);
	assert_int_equal(res[0], 0);
	assert_int_equal(C(HC_LOG_READ, page, end + 1, 0, 0, 0, 0, res), HC_E_INVAL);
	assert_int_equal(C(HC_LOG_READ, page, ~0ull, 0, 0, 0, 0, res), HC_E_INVAL);
	assert_int_equal(C(HC_LOG_READ, slat, 0, 0, 0, 0, 0, res), HC_E_SLAT);
	assert_int_equal(C(HC_LOG_READ, page + 8, 0, 0, 0, 0, 0, res), HC_E_ALIGN);
	assert_int_equal(C(HC_LOG_READ, page, 0, 1, 0, 0, 0, res), HC_E_INVAL);
	// A page shared with a VM is not the primary's to be written.
	deposit(32);
	uint64_t vm = vm_new(1), list = prim_page(), frame = prim_page();
	*(uint64_t *)(uintptr_t)list = frame >> 12;
	assert_int_equal(C(HC_SLOT_SET, vm, 0, HC_SLOT_ADD, 0, list, 1, NULL), HC_OK);
	memset((void *)(uintptr_t)frame, 0x5a, PG);
	assert_int_equal(C(HC_LOG_READ, frame, 0, 0, 0, 0, 0, res), HC_E_OTHER_VM);
	assert_int_equal(((uint8_t *)(uintptr_t)frame)[0], 0x5a);
	assert_int_equal(C(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0, NULL), HC_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_deposit_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vm_needs_memory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slot_ownership, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slot_fault_delete_move, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_zap_all_vm, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slot_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slot_nomem_all_or_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_run_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_arch_calls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_arch_calls, setup_no_arch_calls, teardown),
	    cmocka_unit_test_setup_teardown(test_fuzz_calls, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_primary_map_nomem, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_primary_fault_retry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lazy_slot, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_readonly_slot, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_slot, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lazy_slot_nomem, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lazy_slot_over_1g, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lazy_slot_max, setup_big, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
