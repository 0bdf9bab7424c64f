// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/hv.c - a mini-VMM on Slat's hypercalls (core/hcall_abi.h):
 * started by Slat as its loader, at CPL 0 in the primary VM, it creates a
 * secondary VM from pages it allocated, runs a tiny 32-bit guest and checks
 * every answer, the hostile ones included. Not differential (bare, VMMCALL
 * is #UD): tests/boot/t_hv_x86_svm.sh asserts the verdict lines.
 *
 * Guest-physical layout of the VM: slot 0 = 2 pages at 0 (code at 0x1000,
 * a pattern area at 0x1800), slot 1 = 1 data page at 0x10000 (later moved
 * to 0x20000, then deleted: the guest's accesses to 0x10000 then come back
 * as MMIO exits).
 */
#include <stdbool.h>

#include "core/hcall_abi.h"
#include "tests/arch/lib/ta.h"
#include "tests/arch/lib/ta_efi.h"
#include "tests/arch/x86/lib/exc.h"
#include "tests/arch/x86/lib/x86.h"

#define PAGE	    4096ull
#define POOL_PAGES  48
#define TEST_PORT   0x1234
#define GUEST_DATA  0x10000ull
#define GUEST_MOVED 0x20000ull
#define MAX_RUNS    64

/* The guest, 32-bit code at gpa 0x1000. vcpu0 from guest_a: writes 16 words
 * 0xC0DE0000 + i at 0x1800, OUT 16 to TEST_PORT, HLT. vcpu1 from guest_b:
 * reads 0x10000, OUTs it, stores 0xBEEF at 0x10004, HLT. */
extern const uint8_t guest_a[], guest_b[], guest_fpu[], guest_cpuid[], guest_call[], guest_in[],
    guest_msr[], guest_gs[], guest_call_vmx[], guest_spin[], guest_nmi[], guest_nmi_at[],
    guest_nmi_handler[], guest_end[];
__asm__(".section .rdata,\"dr\"\n"
	".code32\n"
	"guest_a:\n"
	"  mov $0x1800, %edi\n"
	"  mov $0xC0DE0000, %eax\n"
	"  mov $16, %ecx\n"
	"1: mov %eax, (%edi)\n"
	"  add $4, %edi\n"
	"  inc %eax\n"
	"  loop 1b\n"
	"  mov $16, %eax\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	"guest_b:\n"
	"  mov 0x10000, %eax\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  movl $0xBEEF, 0x10004\n"
	"  hlt\n"
	/* reports its XMM0 (never the primary's), then clobbers it */
	"guest_fpu:\n"
	"  movd %xmm0, %eax\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  pcmpeqd %xmm0, %xmm0\n"
	"  hlt\n"
	/* reports CPUID.1:ECX and CPUID.80000001:ECX */
	"guest_cpuid:\n"
	"  mov $1, %eax\n"
	"  cpuid\n"
	"  mov %ecx, %eax\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  mov $0x80000001, %eax\n"
	"  cpuid\n"
	"  mov %ecx, %eax\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	/* a hypercall to the VMM; reports RAX and RBX after it */
	"guest_call:\n"
	"  mov $0x42, %eax\n"
	"  mov $7, %ebx\n"
	"  mov $8, %ecx\n"
	"  vmmcall\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  mov %ebx, %eax\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	/* port input echoed back */
	"guest_in:\n"
	"  mov $0x1234, %dx\n"
	"  in %dx, %eax\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	/* an MSR nobody emulates: #GP without an IDT -> shutdown */
	"guest_msr:\n"
	"  mov $0x12345, %ecx\n"
	"  rdmsr\n"
	"  hlt\n"
	/* sets its GS base through WRMSR (Slat keeps it in the VMCB) */
	"guest_gs:\n"
	"  mov $0xc0000101, %ecx\n"
	"  mov $0x5000, %eax\n"
	"  xor %edx, %edx\n"
	"  wrmsr\n"
	"  mov $0xc0000102, %ecx\n" /* KernelGSBase: reported back */
	"  mov $0x6000, %eax\n"
	"  wrmsr\n"
	"  xor %eax, %eax\n"
	"  rdmsr\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	/* guest_call on VT-x: VMCALL (VMMCALL is #UD there) */
	"guest_call_vmx:\n"
	"  mov $0x42, %eax\n"
	"  mov $7, %ebx\n"
	"  mov $8, %ecx\n"
	"  vmcall\n"
	"  mov $0x1234, %dx\n"
	"  out %eax, %dx\n"
	"  mov %ebx, %eax\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	/* reads the data slot forever: only Slat's kick or a fault stops it */
	"guest_spin:\n"
	"1: mov 0x10000, %eax\n"
	"  jmp 1b\n"
	/* NMIs (ABI 1.8): the VMM raises them at the first OUT; its handler
	 * (IDT vector 2) reports the EIP it interrupted and returns */
	"guest_nmi:\n"
	"  mov $0x1234, %dx\n"
	"  mov $1, %eax\n"
	"  out %eax, %dx\n"
	"guest_nmi_at:\n"
	"  nop\n"
	"  mov $2, %eax\n"
	"  out %eax, %dx\n"
	"  hlt\n"
	"guest_nmi_handler:\n"
	"  mov (%esp), %eax\n"
	"  out %eax, %dx\n"
	"  iret\n"
	"guest_end:\n"
	".code64\n"
	".text\n");

struct hc_res {
	int64_t st;
	uint64_t r0, r1, r2;
};

static int amd;

static struct hc_res hc(uint32_t n, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
			uint64_t a5)
{
	uint64_t rax = HC_FN(n), rbx = a0, rcx = a1, rdx = a2;
	register uint64_t r8 __asm__("r8") = a5;

	if (amd)
		__asm__ volatile("vmmcall"
				 : "+a"(rax), "+b"(rbx), "+c"(rcx), "+d"(rdx)
				 : "S"(a3), "D"(a4), "r"(r8)
				 : "memory");
	else
		__asm__ volatile("vmcall"
				 : "+a"(rax), "+b"(rbx), "+c"(rcx), "+d"(rdx)
				 : "S"(a3), "D"(a4), "r"(r8)
				 : "memory");
	return (struct hc_res){(int64_t)rax, rbx, rcx, rdx};
}

#define HC0(n)			 hc(n, 0, 0, 0, 0, 0, 0)
#define HC1(n, a)		 hc(n, a, 0, 0, 0, 0, 0)
#define HC2(n, a, b)		 hc(n, a, b, 0, 0, 0, 0)
#define HC3(n, a, b, c)		 hc(n, a, b, c, 0, 0, 0)
#define HC6(n, a, b, c, d, e, f) hc(n, a, b, c, d, e, f)

static uint64_t alloc_pages(unsigned n)
{
	EFI_PHYSICAL_ADDRESS pa = 0xffffffffull;

	if (EFI_ERROR(ta_bs()->AllocatePages(AllocateMaxAddress, EfiLoaderData, n, &pa)))
		ta_abort("AllocatePages failed");
	ta_memset((void *)(uintptr_t)pa, 0, n * PAGE);
	return pa;
}

static uint64_t *page_u64(uint64_t pa)
{
	return (uint64_t *)(uintptr_t)pa;
}

static uint64_t list_pa, run_pa, regs_pa, stats_pa;
static uint64_t vm;
static uint64_t deposited_by_me; /* pages this VMM deposited (DEPOSIT answered 0) */

static int64_t slot_add(uint64_t vmid, unsigned slot, uint64_t gpa, const uint64_t *pas, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		page_u64(list_pa)[i] = pas[i] >> 12;
	return HC6(HC_SLOT_SET, vmid, slot, HC_SLOT_ADD, gpa, list_pa, n).st;
}

static void seg(struct hc_x86_seg *s, uint16_t sel, uint16_t attr, uint32_t limit)
{
	*s = (struct hc_x86_seg){.base = 0, .limit = limit, .sel = sel, .attr = attr};
}

/* 32-bit flat protected mode, paging off, at `rip`. */
static void flat32(struct hc_regs_x86 *r, uint64_t rip)
{
	ta_memset(r, 0, sizeof(*r));
	r->rip = rip;
	r->rflags = 2;
	r->cr0 = 0x11; /* PE, ET */
	seg(&r->cs, 0x08, 0xc9b, 0xffffffff);
	seg(&r->ds, 0x10, 0xc93, 0xffffffff);
	r->es = r->ss = r->fs = r->gs = r->ds;
	seg(&r->ldtr, 0, 0x82, 0xffff);
	seg(&r->tr, 0x18, 0x8b, 0xffff);
	r->gdt_limit = 0xffff;
	r->idt_limit = 0xffff;
}

static int64_t set_regs(unsigned vcpu, const struct hc_regs_x86 *r)
{
	ta_memcpy((void *)(uintptr_t)regs_pa, r, sizeof(*r));
	return HC3(HC_VCPU_SET_REGS, vm, vcpu, regs_pa).st;
}

static struct hc_run *run_page(void)
{
	return (struct hc_run *)(uintptr_t)run_pa;
}

/* One RUN, skipping PREEMPTED (bounded). Returns the status; *reason the exit. */
static int64_t run1(unsigned vcpu, uint32_t *reason)
{
	for (unsigned i = 0; i < MAX_RUNS; i++) {
		struct hc_res r = HC3(HC_VCPU_RUN, vm, vcpu, run_pa);
		if (r.st || r.r0 != HC_EXIT_PREEMPTED) {
			*reason = (uint32_t)r.r0;
			if (!r.st && r.r0 != run_page()->reason)
				ta_abort("RUN: r0 and run->reason differ");
			return r.st;
		}
	}
	ta_abort("RUN: preempted MAX_RUNS times in a row");
}

static const char *exit_name(int64_t st, uint32_t reason)
{
	static const char *names[] = {"?",	  "mmio",      "io",	     "hypercall", "halt",
				      "shutdown", "preempted", "fail-entry", "internal"};
	if (st)
		return "error";
	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "?";
}

static void verdict_exit(const char *check, unsigned vcpu)
{
	uint32_t reason = 0;
	int64_t st = run1(vcpu, &reason);
	struct hc_run *rp = run_page();

	if (!st && reason == HC_EXIT_IO)
		ta_verdict(check, "io port 0x%x size %u out %u data 0x%llx", rp->u.io.port,
			   rp->u.io.size, rp->u.io.is_out, (unsigned long long)rp->u.io.data);
	else if (!st && reason == HC_EXIT_MMIO)
		ta_verdict(check, "mmio gpa 0x%llx len %u write %u data 0x%llx",
			   (unsigned long long)rp->u.mmio.gpa, rp->u.mmio.len, rp->u.mmio.is_write,
			   (unsigned long long)rp->u.mmio.data);
	else if (!st && (reason == HC_EXIT_INTERNAL || reason == HC_EXIT_FAIL_ENTRY))
		ta_verdict(check, "%s hw 0x%llx info 0x%llx 0x%llx", exit_name(st, reason),
			   (unsigned long long)rp->u.fail.hw_reason,
			   (unsigned long long)rp->u.fail.info[0],
			   (unsigned long long)rp->u.fail.info[1]);
	else
		ta_verdict(check, "%s %lld", exit_name(st, reason), (long long)st);
}

static void stats(const char *check)
{
	struct hc_hv_stats *s = (struct hc_hv_stats *)(uintptr_t)stats_pa;
	int64_t st = HC1(HC_HV_STATS, stats_pa).st;

	/* deposited - withdrawn == free + used; used == VMs' pages + ownership nodes */
	ta_info("%s: deposited %llu withdrawn %llu free %llu used %llu own_nodes %llu", check,
		(unsigned long long)s->deposited, (unsigned long long)s->withdrawn,
		(unsigned long long)s->free, (unsigned long long)s->used,
		(unsigned long long)s->own_nodes);
	ta_verdict(check,
		   "st %lld deposited-as-counted %u held-beyond-own_nodes %llu free %llu "
		   "used-by-vms %llu vms %llu balanced %u",
		   (long long)st, s->deposited == deposited_by_me,
		   (unsigned long long)(s->deposited - s->withdrawn - s->own_nodes),
		   (unsigned long long)s->free, (unsigned long long)(s->used - s->own_nodes),
		   (unsigned long long)s->vms, s->deposited - s->withdrawn == s->free + s->used);
}

/* A frame of an EfiReservedMemoryType range that Slat calls its own: the
 * number of such ranges whose first frame SLOT_SET refuses with HC_E_SLAT. */
static unsigned reserved_ranges_slat(uint64_t vmid)
{
	EFI_BOOT_SERVICES *bs = ta_bs();
	UINTN size = 0, key, dsize;
	UINT32 ver;
	EFI_MEMORY_DESCRIPTOR *map = NULL;
	unsigned n = 0;

	if (bs->GetMemoryMap(&size, NULL, &key, &dsize, &ver) != EFI_BUFFER_TOO_SMALL)
		return 0;
	size += 16 * dsize;
	if (EFI_ERROR(bs->AllocatePool(EfiLoaderData, size, (void **)&map)))
		return 0;
	if (EFI_ERROR(bs->GetMemoryMap(&size, map, &key, &dsize, &ver))) {
		bs->FreePool(map);
		return 0;
	}
	for (UINTN off = 0; off + dsize <= size; off += dsize) {
		const EFI_MEMORY_DESCRIPTOR *d = (const void *)((const uint8_t *)map + off);
		if (d->Type != EfiReservedMemoryType)
			continue;
		uint64_t pa = d->PhysicalStart;
		int64_t st = slot_add(vmid, 9, 0x400000, &pa, 1);
		ta_info("reserved 0x%llx (%llu pages): SLOT ADD %lld",
			(unsigned long long)d->PhysicalStart, (unsigned long long)d->NumberOfPages,
			(long long)st);
		n += st == HC_E_SLAT;
		if (st == HC_OK) /* not expected: undo */
			HC3(HC_SLOT_SET, vmid, 9, HC_SLOT_DELETE);
	}
	bs->FreePool(map);
	return n;
}

/* A RUN that needs pages (a SLAT root, table pages for the first faults)
 * when none are left answers HC_E_NOMEM and changes nothing; after the VMM
 * deposits, the same RUN goes on. A fresh VM with its own code pages. */
static void nomem_run(void)
{
	uint64_t code3 = alloc_pages(2), got[POOL_PAGES], n = 0;
	struct hc_res r = HC2(HC_VM_CREATE, 0, 1);
	uint64_t vm3 = r.r0, vm1 = vm;
	uint32_t reason = 0;

	ta_memcpy((void *)(uintptr_t)(code3 + PAGE), guest_a, (size_t)(guest_end - guest_a));
	uint64_t pas[2] = {code3, code3 + PAGE};
	int64_t st = HC2(HC_VCPU_CREATE, vm3, 0).st;
	st = st ? st : slot_add(vm3, 0, 0, pas, 2);
	ta_verdict("hv-nomem-setup", "vm %lld vcpu+slot %lld", (long long)r.st, (long long)st);
	/* Take every free page back. */
	while (n < POOL_PAGES) {
		r = HC2(HC_WITHDRAW, list_pa, 1);
		if (r.st || r.r0 != 1)
			break;
		got[n++] = page_u64(list_pa)[0] << 12;
	}
	vm = vm3;
	struct hc_regs_x86 regs;
	flat32(&regs, 0x1000);
	set_regs(0, &regs);
	ta_verdict("hv-nomem-run", "%lld", (long long)run1(0, &reason));
	/* Give the pages back one at a time, RUN after each: every RUN before
	 * the one that gets through answers NOMEM (the root first, then the
	 * tables of the first fault), never an exit. */
	char steps[128];
	unsigned len = 0, dep_ok = 0;
	uint64_t i = 0;
	for (; i < n && len + 16 < sizeof(steps); i++) {
		dep_ok += HC2(HC_DEPOSIT, got[i], 1).st == 0;
		st = run1(0, &reason);
		const char *w = st == HC_E_NOMEM ? "-9" : exit_name(st, reason);
		while (*w)
			steps[len++] = *w++;
		steps[len++] = ' ';
		if (st != HC_E_NOMEM)
			break;
	}
	steps[len ? len - 1 : 0] = 0;
	ta_verdict("hv-nomem-steps", "%s", steps);
	ta_verdict("hv-nomem-exit1", "io data 0x%llx", (unsigned long long)run_page()->u.io.data);
	for (i++; i < n; i++)
		dep_ok += HC2(HC_DEPOSIT, got[i], 1).st == 0;
	deposited_by_me += dep_ok;
	ta_verdict("hv-nomem-redeposit", "%s", dep_ok == n && n > 0 ? "all" : "not all");
	verdict_exit("hv-nomem-exit2", 0);
	const uint32_t *pat = (const uint32_t *)(uintptr_t)(code3 + PAGE + 0x800);
	unsigned good = 0;
	for (unsigned k = 0; k < 16; k++)
		good += pat[k] == 0xC0DE0000u + k;
	ta_verdict("hv-nomem-pattern", "%u of 16 words", good);
	ta_verdict("hv-nomem-destroy", "%lld", (long long)HC1(HC_VM_DESTROY, vm3).st);
	vm = vm1;
}

static void hostile(uint64_t pool, uint64_t code_pa)
{
	uint64_t vm2;
	struct hc_res r = HC2(HC_VM_CREATE, 0, 1);

	vm2 = r.r0;
	ta_verdict("hv-vm2-create", "st %lld", (long long)r.st);
	uint64_t frame = pool; /* deposited: Slat's */
	ta_verdict("hv-slot-deposited-frame", "%lld", (long long)slot_add(vm2, 0, 0, &frame, 1));
	ta_verdict("hv-slot-slat-region", "%u range(s)", reserved_ranges_slat(vm2));
	frame = code_pa; /* in vm's slot 0 */
	ta_verdict("hv-slot-other-vm-frame", "%lld", (long long)slot_add(vm2, 0, 0, &frame, 1));
	ta_verdict("hv-vcpu-create-bad-vm", "%lld", (long long)HC2(HC_VCPU_CREATE, 4242, 0).st);
	ta_verdict("hv-vcpu-create-dup", "%lld", (long long)HC2(HC_VCPU_CREATE, vm, 0).st);
	ta_verdict("hv-run-bad-vcpu", "%lld", (long long)HC3(HC_VCPU_RUN, vm, 7, run_pa).st);
	ta_verdict("hv-run-bad-vm", "%lld", (long long)HC3(HC_VCPU_RUN, 4242, 0, run_pa).st);
	ta_verdict("hv-unknown-fn", "%lld", (long long)hc(0x7777, 0, 0, 0, 0, 0, 0).st);
	ta_verdict("hv-vcpu2-create", "%lld", (long long)HC2(HC_VCPU_CREATE, vm2, 0).st);
	ta_verdict("hv-vm2-destroy", "%lld", (long long)HC1(HC_VM_DESTROY, vm2).st);
	ta_verdict("hv-run-destroyed-vm", "%lld", (long long)HC3(HC_VCPU_RUN, vm2, 0, run_pa).st);
}

/* SET_REGS refusals: the state VMRUN would reject. */
static void bad_regs(void)
{
	struct hc_regs_x86 r;

	flat32(&r, 0x1000);
	r.cr0 = 0x80000010; /* PG without PE */
	ta_verdict("hv-regs-pg-without-pe", "%lld", (long long)set_regs(0, &r));
	flat32(&r, 0x1000);
	r.efer = 1ull << 12; /* SVME */
	ta_verdict("hv-regs-svme", "%lld", (long long)set_regs(0, &r));
	flat32(&r, 0x1000);
	r.efer = (1ull << 8) | (1ull << 10); /* LME, LMA */
	r.cr0 = 0x80000011;		     /* long mode without CR4.PAE */
	ta_verdict("hv-regs-long-no-pae", "%lld", (long long)set_regs(0, &r));
	flat32(&r, 0x1000);
	r.rflags = 2 | (1ull << 40);
	ta_verdict("hv-regs-rflags-reserved", "%lld", (long long)set_regs(0, &r));
	flat32(&r, 0x1000);
	r.cr0 = 0x20000011; /* NW without CD */
	ta_verdict("hv-regs-nw-without-cd", "%lld", (long long)set_regs(0, &r));
}

static uint64_t guest_rip(const uint8_t *label)
{
	return 0x1000 + (uint64_t)(label - guest_a);
}

static void run_from(const uint8_t *label, uint64_t cr4)
{
	struct hc_regs_x86 r;

	flat32(&r, guest_rip(label));
	r.cr4 = cr4;
	if (set_regs(0, &r))
		ta_abort("SET_REGS of a valid state failed");
}

/* The extended state is the vCPU's own: the guest sees its init state, not
 * the primary's XMM0, and its writes do not reach the primary. */
static void fpu_isolation(void)
{
	uint64_t mine = 0x13579bdf2468ace0ull, after;

	run_from(guest_fpu, 0x200); /* CR4.OSFXSR */
	__asm__ volatile("movq %0, %%xmm0" ::"r"(mine) : "xmm0");
	verdict_exit("hv-fpu-guest-xmm0", 0);
	verdict_exit("hv-fpu-exit2", 0);
	__asm__ volatile("movq %%xmm0, %0" : "=r"(after));
	ta_verdict("hv-fpu-primary-xmm0", "%s", after == mine ? "kept" : "clobbered");
}

/* The hidden state VMLOAD/VMSAVE move (FS, GS, TR, LDTR, the SYSCALL MSRs,
 * KernelGSBase) is the vCPU's own: the guest's GS base is in GET_REGS, and
 * the primary's stays its own after the RUN. */
static void hidden_state(void)
{
	uint64_t saved = rdmsr(0xc0000101), mark = 0x7e57000ull;
	uint64_t saved_k = rdmsr(0xc0000102), mark_k = 0x7e58000ull;

	run_from(guest_gs, 0);
	wrmsr(0xc0000101, mark);
	wrmsr(0xc0000102, mark_k);
	verdict_exit("hv-gs-guest-kgsbase", 0);
	verdict_exit("hv-gs-exit", 0);
	uint64_t after = rdmsr(0xc0000101), after_k = rdmsr(0xc0000102);
	wrmsr(0xc0000101, saved);
	wrmsr(0xc0000102, saved_k);
	ta_verdict("hv-gs-primary", "%s", after == mark ? "kept" : "changed");
	ta_verdict("hv-kgsbase-primary", "%s", after_k == mark_k ? "kept" : "changed");
	int64_t st = HC3(HC_VCPU_GET_REGS, vm, 0, regs_pa).st;
	ta_verdict("hv-gs-guest", "st %lld base 0x%llx", (long long)st,
		   (unsigned long long)((struct hc_regs_x86 *)(uintptr_t)regs_pa)->gs.base);
}

static void more_exits(void)
{
	struct hc_run *rp = run_page();
	uint32_t reason = 0;

	fpu_isolation();
	hidden_state();
	run_from(guest_cpuid, 0);
	int64_t st = run1(0, &reason);
	uint32_t ecx1 = (uint32_t)rp->u.io.data;
	ta_verdict("hv-cpuid-1", "st %lld hypervisor %u vmx %u xsave %u", (long long)st, ecx1 >> 31,
		   (ecx1 >> 5) & 1, (ecx1 >> 26) & 1);
	st = run1(0, &reason);
	ta_verdict("hv-cpuid-80000001", "st %lld svm %u", (long long)st,
		   (unsigned)(rp->u.io.data >> 2) & 1);
	verdict_exit("hv-cpuid-exit3", 0);

	run_from(amd ? guest_call : guest_call_vmx, 0);
	st = run1(0, &reason);
	ta_verdict("hv-guest-hypercall", "%s nr 0x%llx a0 %llu a1 %llu", exit_name(st, reason),
		   (unsigned long long)rp->u.hcall.nr, (unsigned long long)rp->u.hcall.args[0],
		   (unsigned long long)rp->u.hcall.args[1]);
	rp->u.hcall.ret[0] = 0x99;
	rp->u.hcall.ret[1] = 0x98;
	verdict_exit("hv-guest-hypercall-ret0", 0);
	verdict_exit("hv-guest-hypercall-ret1", 0);
	verdict_exit("hv-guest-hypercall-exit4", 0);

	run_from(guest_in, 0);
	verdict_exit("hv-in-exit1", 0);
	rp->u.io.data = 0xfeedface;
	verdict_exit("hv-in-exit2", 0);
	verdict_exit("hv-in-exit3", 0);

	run_from(guest_msr, 0);
	verdict_exit("hv-msr-unknown", 0);
}

/* ---- NMIs (ABI 1.8) ---------------------------------------------------------
 * guest_nmi with a GDT at gpa 0 and an IDT at 0x100 (vector 2: its handler)
 * in slot 0's first page. One NMI is taken before the NOP; a second one,
 * raised while its handler runs, waits for the handler's IRET and is taken
 * at the same NOP (delivered inside the handler it would report the IRET's
 * EIP); nmi_state says blocked while a handler runs. */
#define NMI_IDT	  0x100u
#define NMI_STACK 0x1f00u

static void nmi_tables(uint64_t page0)
{
	uint64_t *gdt = (uint64_t *)(uintptr_t)page0, h = guest_rip(guest_nmi_handler);
	uint64_t *gate = (uint64_t *)(uintptr_t)(page0 + NMI_IDT + 8 * 2);

	gdt[0] = 0;
	gdt[1] = 0x00cf9b000000ffffull; /* 0x08: flat 32-bit code */
	gdt[2] = 0x00cf93000000ffffull; /* 0x10: flat data */
	*gate = (h & 0xffff) | 0x08ull << 16 | 0x8eull << 40 | (h >> 16) << 48;
}

static void nmi_state_verdict(const char *check)
{
	struct hc_run *rp = run_page();

	ta_verdict(check, "io data 0x%llx, nmi %u state %u", (unsigned long long)rp->u.io.data,
		   rp->nmi, rp->nmi_state);
}

static void nmi_test(uint64_t page0)
{
	struct hc_run *rp = run_page();
	struct hc_regs_x86 r;
	uint32_t reason = 0;

	nmi_tables(page0);
	flat32(&r, guest_rip(guest_nmi));
	r.gdt_limit = 0x17;
	r.idt_base = NMI_IDT;
	r.idt_limit = 8 * 3 - 1;
	r.gpr[4] = NMI_STACK; /* ESP */
	if (set_regs(0, &r))
		ta_abort("SET_REGS of a valid state failed");
	run1(0, &reason);
	nmi_state_verdict("hv-nmi-exit1");
	rp->nmi = 2;
	ta_verdict("hv-nmi-bad-value", "%lld", (long long)HC3(HC_VCPU_RUN, vm, 0, run_pa).st);
	rp->nmi = 1;
	run1(0, &reason);
	nmi_state_verdict("hv-nmi-1-taken"); /* at the NOP */
	ta_verdict("hv-nmi-at", "%s", rp->u.io.data == guest_rip(guest_nmi_at) ? "nop" : "ELSEWHERE");
	rp->nmi = 1; /* while the first handler runs */
	run1(0, &reason);
	nmi_state_verdict("hv-nmi-2-after-iret");
	ta_verdict("hv-nmi-2-at", "%s",
		   rp->u.io.data == guest_rip(guest_nmi_at) ? "nop" : "ELSEWHERE");
	run1(0, &reason);
	nmi_state_verdict("hv-nmi-done");
	verdict_exit("hv-nmi-halt", 0);
}

/* ---- a vCPU on the other CPU while this one changes its VM ----------------
 * EFI_MP_SERVICES_PROTOCOL (UEFI PI vol. 2, 13.4), the calls used here. */
typedef void(EFIAPI *mp_proc)(void *arg);
struct mp_services {
	EFI_STATUS(EFIAPI *get_number_of_processors)(struct mp_services *, UINTN *, UINTN *);
	void *get_processor_info, *startup_all_aps;
	EFI_STATUS(EFIAPI *startup_this_ap)
	(struct mp_services *, mp_proc, UINTN cpu, EFI_EVENT wait, UINTN timeout_us, void *arg,
	 BOOLEAN *finished);
};

static volatile unsigned ap_state; /* 1: running the vCPU, 2: its RUN returned */
static volatile int64_t ap_st;
static volatile uint32_t ap_reason;
static volatile uint64_t ap_gpa, ap_preempted;
static uint64_t ap_run_pa, ap_rflags;

static void EFIAPI ap_proc(void *arg)
{
	struct hc_res r = {0};

	ap_rflags = read_rflags();
	ap_state = 1;
	for (unsigned i = 0; i < 100000; i++) {
		r = HC3(HC_VCPU_RUN, vm, 1, ap_run_pa);
		if (r.st || r.r0 != HC_EXIT_PREEMPTED)
			break;
		ap_preempted++;
	}
	ap_st = r.st;
	ap_reason = (uint32_t)r.r0;
	ap_gpa = ((struct hc_run *)(uintptr_t)ap_run_pa)->u.mmio.gpa;
	__atomic_store_n(&ap_state, 2, __ATOMIC_RELEASE);
}

/* vCPU 1 spins on the data slot on the AP; the BSP deletes the slot. The AP
 * never exits by itself (no interrupts there), so the DELETE returns only if
 * Slat's kick made it leave guest mode and flush; its next access is MMIO. */
static void smp_kick(uint64_t data_pa)
{
	EFI_GUID guid = {
	    0x3fdda605, 0xa76e, 0x4f46, {0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08}};
	struct mp_services *mp = NULL;
	UINTN n = 1, enabled = 1;
	EFI_EVENT ev;

	if (EFI_ERROR(ta_bs()->LocateProtocol(&guid, NULL, (void **)&mp)) ||
	    EFI_ERROR(mp->get_number_of_processors(mp, &n, &enabled)) || enabled < 2) {
		ta_verdict("hv-smp", "1 CPU, skipped");
		return;
	}
	ta_verdict("hv-smp", "%u CPUs", (unsigned)enabled);
	ap_run_pa = alloc_pages(1);
	ta_verdict("hv-smp-slot-add", "%lld", (long long)slot_add(vm, 1, GUEST_DATA, &data_pa, 1));
	struct hc_regs_x86 regs;
	flat32(&regs, guest_rip(guest_spin));
	ta_verdict("hv-smp-regs", "%lld", (long long)set_regs(1, &regs));
	if (EFI_ERROR(ta_bs()->CreateEvent(0, 0, NULL, NULL, &ev)) ||
	    EFI_ERROR(mp->startup_this_ap(mp, ap_proc, 1, ev, 0, NULL, NULL))) {
		ta_verdict("hv-smp-start", "failed");
		return;
	}
	for (unsigned i = 0; i < 5000 && ap_state != 1; i++)
		ta_bs()->Stall(1000);
	ta_bs()->Stall(100000); /* the guest is spinning by now */
	ta_verdict("hv-smp-ap-running", "%s", ap_state == 1 ? "yes" : "no");
	ta_verdict("hv-smp-delete", "%lld", (long long)HC3(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE).st);
	for (unsigned i = 0; i < 10000 && __atomic_load_n(&ap_state, __ATOMIC_ACQUIRE) != 2; i++)
		ta_bs()->Stall(1000);
	ta_verdict("hv-smp-ap-exit", "%s gpa 0x%llx",
		   ap_state == 2 ? exit_name(ap_st, ap_reason) : "none",
		   (unsigned long long)ap_gpa);
	ta_info("AP RUN calls preempted: %llu, AP RFLAGS 0x%llx", (unsigned long long)ap_preempted,
		(unsigned long long)ap_rflags);
	ta_bs()->CloseEvent(ev);
}

static void complete_mmio_read(uint64_t data)
{
	run_page()->u.mmio.data = data;
}

/* Deposited pages are Slat's: the primary's SLAT no longer maps them, so a
 * read or write takes the #GP(0) Slat gives for its own region; withdrawn,
 * they read and write as before. The first and last page of the pool. */
static void probe_pool(uint64_t pool, bool deposited)
{
	static const char *const name[2][4] = {
	    {"hv-withdrawn-first-read", "hv-withdrawn-first-write", "hv-withdrawn-last-read",
	     "hv-withdrawn-last-write"},
	    {"hv-deposited-first-read", "hv-deposited-first-write", "hv-deposited-last-read",
	     "hv-deposited-last-write"},
	};
	struct exc_record r;
	char buf[32];

	exc_install();
	for (unsigned i = 0; i < 4; i++) {
		uint64_t pa = pool + (i / 2) * (POOL_PAGES - 1) * PAGE;
		if (i & 1)
			EXC_TRY("movq %0, %%rbx", "movq %%rbx, (%%rbx)", &r, "r"(pa));
		else
			EXC_TRY("movq %0, %%rbx", "movq (%%rbx), %%rax", &r, "r"(pa));
		bool kept = !(i & 1) || r.count || page_u64(pa)[0] == pa;
		ta_verdict(name[deposited][i], "%s rip+%llu%s", exc_name(&r, buf, sizeof(buf)),
			   r.count ? (unsigned long long)r.rip : 0ull, kept ? "" : " (value lost)");
	}
	exc_restore();
}

void ta_main(void)
{
	uint32_t id[4];

	cpuid(0, 0, id);
	amd = id[1] == 0x68747541; /* "Auth" */
	cpuid(0x40000000u, 0, id);
	ta_verdict("hv-cpuid-signature", "%s",
		   id[1] == 0x74616c53 && id[2] == 0x74616c53 && id[3] == 0x74616c53 ? "Slat"
										     : "none");
	list_pa = alloc_pages(1);
	run_pa = alloc_pages(1);
	regs_pa = alloc_pages(1);
	stats_pa = alloc_pages(1);
	uint64_t pool = alloc_pages(POOL_PAGES);
	uint64_t code_pa = alloc_pages(2), data_pa = alloc_pages(1);

	struct hc_res r = HC0(HC_VERSION_FN);
	ta_verdict("hv-version", "st %lld version 0x%llx", (long long)r.st,
		   (unsigned long long)r.r0);
	stats("hv-stats-boot");
	r = HC2(HC_VM_CREATE, 0, 2);
	ta_verdict("hv-vm-create-empty-pool", "%lld", (long long)r.st);
	r = HC2(HC_DEPOSIT, pool, POOL_PAGES);
	ta_verdict("hv-deposit", "%lld", (long long)r.st);
	deposited_by_me += r.st == 0 ? POOL_PAGES : 0;
	r = HC2(HC_DEPOSIT, pool, 1);
	ta_verdict("hv-deposit-again", "%lld", (long long)r.st);
	r = HC2(HC_VM_CREATE, 0, 2);
	vm = r.r0;
	ta_verdict("hv-vm-create", "st %lld id-nonzero %u", (long long)r.st, vm != 0);
	ta_verdict("hv-vcpu0-create", "%lld", (long long)HC2(HC_VCPU_CREATE, vm, 0).st);
	ta_verdict("hv-vcpu1-create", "%lld", (long long)HC2(HC_VCPU_CREATE, vm, 1).st);
	probe_pool(pool, true);
	ta_verdict("hv-primary-tables", "st %lld %llu", (long long)HC1(HC_HV_STATS, stats_pa).st,
		   (unsigned long long)((struct hc_hv_stats *)(uintptr_t)stats_pa)->primary_tables);

	/* Guest code at gpa 0x1000 (the second page of slot 0). */
	ta_memcpy((void *)(uintptr_t)(code_pa + PAGE), guest_a, (size_t)(guest_end - guest_a));
	uint64_t code_pas[2] = {code_pa, code_pa + PAGE};
	ta_verdict("hv-slot0-add", "%lld", (long long)slot_add(vm, 0, 0, code_pas, 2));
	page_u64(data_pa)[0] = 0x11223344;
	ta_verdict("hv-slot1-add", "%lld", (long long)slot_add(vm, 1, GUEST_DATA, &data_pa, 1));

	bad_regs();
	struct hc_regs_x86 regs;
	flat32(&regs, 0x1000);
	ta_verdict("hv-regs-vcpu0", "%lld", (long long)set_regs(0, &regs));
	verdict_exit("hv-vcpu0-exit1", 0);
	verdict_exit("hv-vcpu0-exit2", 0);
	unsigned good = 0;
	const uint32_t *pat = (const uint32_t *)(uintptr_t)(code_pa + PAGE + 0x800);
	for (unsigned i = 0; i < 16; i++)
		good += pat[i] == 0xC0DE0000u + i;
	ta_verdict("hv-pattern", "%u of 16 words", good);
	ta_verdict("hv-get-regs", "st %lld", (long long)HC3(HC_VCPU_GET_REGS, vm, 0, regs_pa).st);
	struct hc_regs_x86 *got = (struct hc_regs_x86 *)(uintptr_t)regs_pa;
	ta_verdict("hv-get-regs-state", "rip-after-hlt %u edi 0x%llx eax 0x%llx",
		   got->rip == 0x1000 + (uint64_t)(guest_b - guest_a),
		   (unsigned long long)got->gpr[7], (unsigned long long)got->gpr[0]);

	/* vcpu1: the data slot in place, moved, deleted. */
	uint64_t b = 0x1000 + (uint64_t)(guest_b - guest_a);
	flat32(&regs, b);
	ta_verdict("hv-regs-vcpu1", "%lld", (long long)set_regs(1, &regs));
	verdict_exit("hv-vcpu1-slot-exit1", 1);
	verdict_exit("hv-vcpu1-slot-exit2", 1);
	ta_verdict("hv-vcpu1-slot-store", "0x%llx",
		   (unsigned long long)(page_u64(data_pa)[0] >> 32));

	ta_verdict("hv-slot1-move", "%lld",
		   (long long)HC6(HC_SLOT_SET, vm, 1, HC_SLOT_MOVE, GUEST_MOVED, 0, 0).st);
	set_regs(1, &regs);
	verdict_exit("hv-moved-exit1", 1);
	complete_mmio_read(0x55667788);
	verdict_exit("hv-moved-exit2", 1);
	verdict_exit("hv-moved-exit3", 1);
	verdict_exit("hv-moved-exit4", 1);

	ta_verdict("hv-slot1-delete", "%lld",
		   (long long)HC3(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE).st);
	set_regs(1, &regs);
	verdict_exit("hv-deleted-exit1", 1);
	complete_mmio_read(0x99aabbcc);
	verdict_exit("hv-deleted-exit2", 1);

	more_exits();
	nmi_test(code_pa);
	nomem_run();
	hostile(pool, code_pa);

	smp_kick(data_pa);
	ta_verdict("hv-vm-destroy", "%lld", (long long)HC1(HC_VM_DESTROY, vm).st);
	ta_verdict("hv-run-after-destroy", "%lld", (long long)HC3(HC_VCPU_RUN, vm, 0, run_pa).st);
	uint64_t back = 0;
	for (unsigned i = 0; i < 2 * POOL_PAGES; i++) {
		r = HC2(HC_WITHDRAW, list_pa, 512);
		if (r.st || !r.r0)
			break;
		back += r.r0;
	}
	ta_verdict("hv-withdraw", "st %lld pages %llu", (long long)r.st, (unsigned long long)back);
	probe_pool(pool, false);
	stats("hv-stats-end");
}
