// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/arm64/hv.c - a mini-VMM for Slat's secondary VMs on arm64
 * (core/hcall_abi.h, docs/secondary-vms-arm64.md). Runs only as Slat's
 * loader (at EL1 in the primary VM; tests/boot/t_hv_arm64.sh), talks to Slat
 * with raw HVCs and checks every answer: discovery (UID on HVC and SMC,
 * VERSION), DEPOSIT of its own pages, a VM with two vCPUs whose memory is
 * its own pages, a tiny guest that writes a pattern and reports through MMIO,
 * a hypercall and WFI, every exit of the run, the pattern read back, a slot
 * moved and deleted, hostile calls, and the teardown down to zero pages held.
 *
 * IRQs stay unmasked (TPL_APPLICATION): a physical interrupt ends a run with
 * HC_EXIT_PREEMPTED and the firmware takes it; the runs are retried, bounded.
 */
#include "tests/arch/arm64/lib/a64.h"
#include "tests/arch/lib/ta_efi.h"

#include "core/hcall_abi.h"

#define PAGE 4096ull

/* Guest physical layout. */
#define G_CODE	 0x0ull	       /* slot 0: one page of code (vectors at +0x200) */
#define G_DATA	 0x100000ull   /* slot 1: two pages the guest fills */
#define G_DATA2	 0x200000ull   /* slot 1 after MOVE */
#define G_MMIO	 0x10000000ull /* no slot: the guest's "device" */
#define G_CPUIF	 0x20000000ull /* no slot: its GICv2 CPU interface (ABI 1.7) */
#define DATA_PGS 2
#define PATTERN	 0x5a17c0de00ff1234ull
#define RUN_MAX	 100000u /* RUN calls per expected exit (PREEMPTED retries) */

/* ---- the guest (copied into the code page; position independent) ------------ */
/* x0 pattern, x1 data gpa, x2 mmio gpa, x3 words, x8 moved data gpa. */
__asm__(".arch_extension fp\n"
	".arch_extension simd\n"
	".section .rodata\n"
	".balign 16\n"
	"g_main:\n"
	"1:	str	x0, [x1], #8\n"
	"	subs	x3, x3, #1\n"
	"	b.ne	1b\n"
	"	str	x0, [x2]\n"	/* MMIO write: the pattern */
	"	ldr	x4, [x2, #8]\n" /* MMIO read: the VMM answers */
	"	mov	x0, x4\n"
	"	hvc	#0\n"		    /* hypercall nr = what was read */
	"	str	x0, [x2, #16]\n"    /* MMIO write: the hypercall's ret[0] */
	"	mrs	x9, cntp_ctl_el0\n" /* the primary's physical timer: UNDEF */
	"	wfi\n"			    /* HALT */
	"g_phase2:\n"
	"	ldr	x6, [x1]\n" /* the slot's old gpa: MMIO read now */
	"	ldr	x7, [x8]\n" /* its new gpa: the pattern */
	"	str	x7, [x2]\n" /* MMIO write: what it read */
	"	wfi\n"
	"g_phase3:\n"
	"	ldr	x7, [x8]\n"	 /* deleted slot: MMIO read */
	"	ldp	x9, x10, [x2]\n" /* no syndrome (ISV=0): INTERNAL */
	"	movz	w0, #0x0008\n"
	"	movk	w0, #0x8400, lsl #16\n"
	"	smc	#0\n" /* PSCI SYSTEM_OFF: SHUTDOWN */
	"	b	.\n"
	"g_race:\n"
	"	mov	w11, #1\n"
	"	str	w11, [x12]\n" /* tell CPU 1 the guest runs */
	"3:	ldr	x7, [x8]\n"   /* until the slot goes away: MMIO read */
	"	b	3b\n"
	"g_spin:\n" /* long enough for timer ticks */
	"	fmov	d0, x0\n"
	"2:	subs	x5, x5, #1\n"
	"	b.ne	2b\n"
	"	fmov	x7, d0\n"
	"	str	x7, [x2]\n" /* MMIO write: V0 survived the preemptions */
	"g_halt:\n"
	"	wfi\n"
	"	b	g_halt\n"
	/* The virtual GIC (ABI 1.6), IRQs masked: acknowledge and end what the
	 * VMM put in a list register, send an SGI, then the emulated registers. */
	"g_vgic:\n"
	"	mrs	x9, S3_0_C12_C12_5\n" /* ICC_SRE_EL1 */
	"	str	x9, [x2]\n"
	"	mov	x9, #0xff\n"
	"	msr	S3_0_C4_C6_0, x9\n" /* ICC_PMR_EL1 */
	"	mov	x9, #1\n"
	"	msr	S3_0_C12_C12_7, x9\n" /* ICC_IGRPEN1_EL1 */
	"	isb\n"
	"	mrs	x9, S3_0_C12_C12_0\n" /* ICC_IAR1_EL1 */
	"	str	x9, [x2, #8]\n"
	"	msr	S3_0_C12_C12_1, x9\n" /* ICC_EOIR1_EL1: drop and deactivate */
	"	isb\n"
	"	mrs	x9, S3_0_C12_C12_0\n" /* nothing left: 1023 */
	"	str	x9, [x2, #16]\n"
	"	movz	x9, #0x0001\n"
	"	movk	x9, #0x0500, lsl #16\n"
	"	msr	S3_0_C12_C11_5, x9\n" /* ICC_SGI1R_EL1: SGI 5 to Aff0 0 */
	"	mov	x9, #3\n"
	"	msr	cntv_ctl_el0, x9\n" /* enabled and masked: reported at exits */
	"	mov	x9, #0x1000\n"
	"	msr	mdscr_el1, x9\n"
	"	mrs	x9, mdscr_el1\n"
	"	str	x9, [x2, #32]\n"
	"	mrs	x9, pmcr_el0\n"
	"	str	x9, [x2, #40]\n"
	"	wfi\n"
	"	b	g_halt\n"
	/* The same on GICv2 (ABI 1.7): the CPU interface at G_CPUIF, which Slat
	 * serves on GICV without exits: priority mask, group 0 on, then two
	 * acknowledge/end pairs (an SPI, then an SGI with its source) and an
	 * empty acknowledge. */
	"g_vgic2:\n"
	"	movz	x13, #0x2000, lsl #16\n" /* G_CPUIF */
	"	mov	w9, #0xff\n"
	"	str	w9, [x13, #4]\n" /* GICC_PMR */
	"	mov	w9, #1\n"
	"	str	w9, [x13]\n" /* GICC_CTLR: EnableGrp0 */
	"	ldr	w9, [x13]\n"
	"	str	x9, [x2]\n"
	"	ldr	w9, [x13, #0xc]\n" /* GICC_IAR */
	"	str	x9, [x2, #8]\n"
	"	str	w9, [x13, #0x10]\n" /* GICC_EOIR */
	"	ldr	w9, [x13, #0xc]\n"
	"	str	x9, [x2, #8]\n"
	"	str	w9, [x13, #0x10]\n"
	"	ldr	w9, [x13, #0xc]\n" /* nothing left: 1023 */
	"	str	x9, [x2, #16]\n"
	"	ldrb	w9, [x13, #4]\n" /* not a word: reads as zero */
	"	str	x9, [x2, #16]\n"
	"	wfi\n"
	"	b	g_halt\n"
	"g_main_end:\n"
	/* Current-EL SPx sync vector (VBAR_EL1 = 0, offset 0x200): report ESR_EL1
	 * with an MMIO write and step over the faulting instruction. */
	"g_vec:\n"
	"	mrs	x10, esr_el1\n"
	"	str	x10, [x2, #24]\n"
	"	mrs	x11, elr_el1\n"
	"	add	x11, x11, #4\n"
	"	msr	elr_el1, x11\n"
	"	eret\n"
	"g_vec_end:\n"
	".text\n");
extern const char g_main[], g_phase2[], g_phase3[], g_race[], g_spin[], g_vgic[], g_vgic2[],
    g_main_end[], g_vec[], g_vec_end[];
#define SPIN_LOOPS 30000000ull

/* ---- CPU 1: deletes a slot while CPU 0 runs the guest (MMU off, no stack) ---- */
struct cpu1_box {
	uint64_t flag_pa; /* 0: the guest's "running" flag (a word of its code page) */
	uint64_t vm;	  /* 8 */
	int64_t result;	  /* 16: SLOT_SET DELETE's status */
	uint32_t done;	  /* 24 */
	uint32_t pad;
};
__asm__(".text\n"
	".balign 4\n"
	"cpu1_entry:\n"
	"	mov	x19, x0\n"
	"	movz	x20, #0x800, lsl #16\n" /* bounded wait: 2^27 rounds */
	"1:	ldr	x1, [x19, #0]\n"
	"	ldr	w2, [x1]\n"
	"	cbnz	w2, 2f\n"
	"	subs	x20, x20, #1\n"
	"	b.ne	1b\n"
	"	mov	x0, #-100\n" /* gave up */
	"	b	3f\n"
	"2:	movz	x0, #0x0006\n"
	"	movk	x0, #0xc600, lsl #16\n" /* HC_FN(HC_SLOT_SET) */
	"	ldr	x1, [x19, #8]\n"
	"	mov	x2, #2\n" /* slot 2 */
	"	mov	x3, #2\n" /* HC_SLOT_DELETE */
	"	mov	x4, xzr\n"
	"	mov	x5, xzr\n"
	"	mov	x6, xzr\n"
	"	hvc	#0\n"
	"3:	str	x0, [x19, #16]\n"
	"	mov	w1, #1\n"
	"	str	w1, [x19, #24]\n"
	"	dsb	sy\n"
	"	movz	x0, #0x8400, lsl #16\n"
	"	movk	x0, #0x0002\n" /* PSCI CPU_OFF (SMC: the conduit under Slat) */
	"	smc	#0\n"
	"4:	wfe\n"
	"	b	4b\n");
extern const char cpu1_entry[];
static struct cpu1_box box1 __attribute__((aligned(64)));

/* ---- raw calls ---------------------------------------------------------------- */
struct ret4 {
	int64_t st;
	uint64_t r[3];
};

static struct ret4 hvc(uint64_t fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		       uint64_t a5)
{
	register uint64_t x0 __asm__("x0") = fn;
	register uint64_t x1 __asm__("x1") = a0;
	register uint64_t x2 __asm__("x2") = a1;
	register uint64_t x3 __asm__("x3") = a2;
	register uint64_t x4 __asm__("x4") = a3;
	register uint64_t x5 __asm__("x5") = a4;
	register uint64_t x6 __asm__("x6") = a5;
	__asm__ volatile("hvc #0"
			 : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)
			 : "r"(x4), "r"(x5), "r"(x6)
			 : "memory");
	return (struct ret4){(int64_t)x0, {x1, x2, x3}};
}

static struct ret4 smc_uid(void)
{
	register uint64_t x0 __asm__("x0") = HC_SMCCC_UID_FN;
	register uint64_t x1 __asm__("x1") = 0;
	register uint64_t x2 __asm__("x2") = 0;
	register uint64_t x3 __asm__("x3") = 0;
	__asm__ volatile("smc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3)::"memory");
	return (struct ret4){(int64_t)x0, {x1, x2, x3}};
}

/* VERSION with x7..x12 holding known values: are they preserved? */
static bool hvc_keeps_registers(void)
{
	register uint64_t x0 __asm__("x0") = HC_FN(HC_VERSION_FN);
	register uint64_t x7 __asm__("x7") = 0x7777;
	register uint64_t x8 __asm__("x8") = 0x8888;
	register uint64_t x9 __asm__("x9") = 0x9999;
	register uint64_t x12 __asm__("x12") = 0xcccc;
	register uint64_t x17 __asm__("x17") = 0x1717;
	__asm__ volatile("mov x1, xzr; mov x2, xzr; mov x3, xzr; mov x4, xzr; mov x5, xzr;"
			 "mov x6, xzr; hvc #0"
			 : "+r"(x0), "+r"(x7), "+r"(x8), "+r"(x9), "+r"(x12), "+r"(x17)
			 :
			 : "x1", "x2", "x3", "x4", "x5", "x6", "memory");
	return x7 == 0x7777 && x8 == 0x8888 && x9 == 0x9999 && x12 == 0xcccc && x17 == 0x1717;
}

#define CALL(fn, ...) hvc(HC_FN(fn), __VA_ARGS__)

static const char *err_name(int64_t e)
{
	static const char *const n[] = {
	    "OK",      "E_UNKNOWN",  "E_NOT_OWNED", "E_SLAT",  "E_OTHER_VM", "E_ALREADY_SHARED",
	    "E_RANGE", "E_ALIGN",    "E_TOO_MANY",  "E_NOMEM", "E_BAD_VM",   "-11",
	    "E_INVAL", "E_BAD_SLOT", "E_BAD_VCPU",  "E_BUSY",  "E_EXISTS",
	};
	return e <= 0 && e > -17 ? n[-e] : "(other)";
}

static const char *exit_name(uint32_t r)
{
	static const char *const n[] = {
	    "?",	  "MMIO",     "IO",	  "HYPERCALL",	"HALT", "SHUTDOWN", "PREEMPTED",
	    "FAIL_ENTRY", "INTERNAL", "MEMFAULT", "IRQ_WINDOW", "MSR",	"SYSREG"};
	return r < sizeof(n) / sizeof(n[0]) ? n[r] : "?";
}

/* ---- memory --------------------------------------------------------------------- */
static uint64_t alloc_pages(unsigned n)
{
	EFI_PHYSICAL_ADDRESS pa = 0;

	if (ta_bs()->AllocatePages(AllocateAnyPages, EfiLoaderData, n, &pa) != EFI_SUCCESS)
		ta_abort("AllocatePages failed");
	ta_memset((void *)(uintptr_t)pa, 0, n * PAGE);
	return pa;
}

static void cache_clean(uint64_t pa, uint64_t len)
{
	for (uint64_t a = pa; a < pa + len; a += 64)
		__asm__ volatile("dc civac, %0; ic ivau, %0" ::"r"(a) : "memory");
	__asm__ volatile("dsb ish; isb" ::: "memory");
}

/* The largest EfiReservedMemoryType range (Slat's region), 0 if none. */
static uint64_t slat_region_guess(void)
{
	static uint8_t map[16384];
	UINTN size = sizeof(map), key, dsize;
	UINT32 dver;
	uint64_t best = 0, best_pages = 0;

	if (ta_bs()->GetMemoryMap(&size, (EFI_MEMORY_DESCRIPTOR *)map, &key, &dsize, &dver) !=
	    EFI_SUCCESS)
		return 0;
	for (UINTN off = 0; off + dsize <= size; off += dsize) {
		const EFI_MEMORY_DESCRIPTOR *d = (const void *)(map + off);
		if (d->Type == EfiReservedMemoryType && d->NumberOfPages > best_pages) {
			best = d->PhysicalStart;
			best_pages = d->NumberOfPages;
		}
	}
	ta_info("reserved range 0x%llx, %llu pages", (unsigned long long)best,
		(unsigned long long)best_pages);
	return best;
}

/* ---- the VMM ------------------------------------------------------------------------ */
static uint64_t run_pg, regs_pg, list_pg, stats_pg, code_pg, data_pg, pool_pg;
static unsigned preempted;
static bool disarm_cntp; /* the preemption test's own timer: off after it fired */

#define POOL_PAGES 64

static struct hc_run *run_page(void)
{
	return (struct hc_run *)(uintptr_t)run_pg;
}

static void expect_st(const char *check, struct ret4 r, int64_t want)
{
	ta_verdict(check, "%s%s", err_name(r.st), r.st == want ? "" : " (UNEXPECTED)");
}

/* RUN until something other than PREEMPTED; returns the exit reason. */
static uint32_t run_vcpu(uint64_t vm, uint64_t vcpu)
{
	for (unsigned i = 0; i < RUN_MAX; i++) {
		struct ret4 r = CALL(HC_VCPU_RUN, vm, vcpu, run_pg, 0, 0, 0);
		if (r.st != HC_OK) {
			ta_verdict("run", "refused: %s", err_name(r.st));
			return 0;
		}
		if (r.r[0] != run_page()->reason)
			ta_verdict("run", "r0 %llu != run page reason %u",
				   (unsigned long long)r.r[0], run_page()->reason);
		if (run_page()->reason != HC_EXIT_PREEMPTED)
			return run_page()->reason;
		preempted++;
		if (disarm_cntp)
			a64_msr("cntp_ctl_el0", 0);
		/* The primary's FP/SIMD registers are its own between runs. */
		__asm__ volatile(".arch_extension fp\n.arch_extension simd\nmovi v0.2d, #0" ::
				     : "v0");
	}
	ta_abort("the guest never left PREEMPTED");
}

static void verdict_exit(const char *check, uint32_t reason)
{
	struct hc_run *rp = run_page();

	switch (reason) {
	case HC_EXIT_MMIO:
		ta_verdict(check, "MMIO gpa 0x%llx len %u %s data 0x%llx",
			   (unsigned long long)rp->u.mmio.gpa, rp->u.mmio.len,
			   rp->u.mmio.is_write ? "write" : "read",
			   (unsigned long long)rp->u.mmio.data);
		break;
	case HC_EXIT_HYPERCALL:
		ta_verdict(check, "HYPERCALL nr 0x%llx a0 0x%llx",
			   (unsigned long long)rp->u.hcall.nr,
			   (unsigned long long)rp->u.hcall.args[0]);
		break;
	case HC_EXIT_INTERNAL:
		ta_verdict(check, "INTERNAL hw 0x%llx info 0x%llx 0x%llx",
			   (unsigned long long)rp->u.fail.hw_reason,
			   (unsigned long long)rp->u.fail.info[0],
			   (unsigned long long)rp->u.fail.info[1]);
		break;
	case HC_EXIT_SHUTDOWN:
		ta_verdict(check, "SHUTDOWN fn 0x%llx", (unsigned long long)rp->u.fail.hw_reason);
		break;
	default:
		ta_verdict(check, "%s", exit_name(reason));
	}
}

static struct hc_regs_arm64 *regs(void)
{
	return (struct hc_regs_arm64 *)(uintptr_t)regs_pg;
}

static void set_list(const uint64_t *pa, unsigned n)
{
	uint64_t *l = (uint64_t *)(uintptr_t)list_pg;

	ta_memset(l, 0, PAGE);
	for (unsigned i = 0; i < n; i++)
		l[i] = pa[i] >> 12;
}

static void discovery(void)
{
	struct ret4 u = hvc(HC_SMCCC_UID_FN, 0, 0, 0, 0, 0, 0);

	ta_verdict("uid-hvc", "%08x %08x %08x %08x", (unsigned)u.st, (unsigned)u.r[0],
		   (unsigned)u.r[1], (unsigned)u.r[2]);
	u = smc_uid();
	ta_verdict("uid-smc", "%08x %08x %08x %08x", (unsigned)u.st, (unsigned)u.r[0],
		   (unsigned)u.r[1], (unsigned)u.r[2]);
	struct ret4 v = CALL(HC_VERSION_FN, 0, 0, 0, 0, 0, 0);
	ta_verdict("version", "%s 0x%llx", err_name(v.st), (unsigned long long)v.r[0]);
	ta_verdict("hvc-keeps-x7-x17", "%s", hvc_keeps_registers() ? "yes" : "no");
	ta_verdict("unknown-vendor-fn", "%s", err_name(hvc(HC_FN(0x7fff), 0, 0, 0, 0, 0, 0).st));
}

/* One read or write of a primary page through the payload's own stage-1 and
 * Slat's stage-2, with the payload's vectors catching what it takes. */
static void probe(const char *check, uint64_t pa, bool write)
{
	volatile uint64_t *p = (volatile uint64_t *)(uintptr_t)pa;
	uint64_t v = 0;

	a64_vectors_install();
	a64_exc_arm();
	if (write)
		*p = 0x5eed0000u + (uint32_t)(pa >> 12);
	else
		v = *p;
	unsigned n = a64_exc.count;
	uint64_t esr = a64_exc.esr, far = a64_exc.far;
	a64_vectors_restore();
	if (!n) {
		ta_verdict(check, "%s ok%s", write ? "write" : "read",
			   write && *p != 0x5eed0000u + (uint32_t)(pa >> 12) ? " (value lost)"
									     : "");
		return;
	}
	(void)v;
	ta_verdict(check, "abort EC 0x%02x FSC 0x%02x WnR %u far %s", a64_ec(esr),
		   (unsigned)(esr & 0x3f), (unsigned)((esr >> 6) & 1),
		   far == pa ? "the page" : "elsewhere");
}

/* Deposited pages are Slat's: the primary's stage-2 no longer maps them, so
 * an access takes the synchronous external abort Slat gives for its own
 * region (a first and a last page of the pool, holding Slat's records now). */
static void probe_deposited(bool deposited)
{
	static const char *const name[2][4] = {
	    {"withdrawn-first-read", "withdrawn-first-write", "withdrawn-last-read",
	     "withdrawn-last-write"},
	    {"deposited-first-read", "deposited-first-write", "deposited-last-read",
	     "deposited-last-write"},
	};

	for (unsigned i = 0; i < 4; i++)
		probe(name[deposited][i], pool_pg + (i / 2) * (POOL_PAGES - 1) * PAGE, i & 1);
}

static uint64_t make_vm(void)
{
	expect_st("vm-create-before-deposit", CALL(HC_VM_CREATE, 0, 2, 0, 0, 0, 0), HC_E_NOMEM);
	expect_st("deposit", CALL(HC_DEPOSIT, pool_pg, POOL_PAGES, 0, 0, 0, 0), HC_OK);
	struct ret4 c = CALL(HC_VM_CREATE, 0, 2, 0, 0, 0, 0);
	expect_st("vm-create", c, HC_OK);
	uint64_t vm = c.r[0];
	expect_st("vcpu-create-0", CALL(HC_VCPU_CREATE, vm, 0, 0, 0, 0, 0), HC_OK);
	expect_st("vcpu-create-1", CALL(HC_VCPU_CREATE, vm, 1, 0, 0, 0, 0), HC_OK);
	expect_st("vcpu-create-again", CALL(HC_VCPU_CREATE, vm, 1, 0, 0, 0, 0), HC_E_EXISTS);
	expect_st("vcpu-create-over-limit", CALL(HC_VCPU_CREATE, vm, 2, 0, 0, 0, 0), HC_E_BAD_VCPU);
	probe_deposited(true);
	struct ret4 st = CALL(HC_HV_STATS, stats_pg, 0, 0, 0, 0, 0);
	ta_verdict(
	    "primary-tables", "%s %llu", err_name(st.st),
	    (unsigned long long)((const struct hc_hv_stats *)(uintptr_t)stats_pg)->primary_tables);
	return vm;
}

static void load_guest(uint64_t vm)
{
	uint64_t data[DATA_PGS] = {data_pg, data_pg + PAGE};

	ta_memcpy((void *)(uintptr_t)code_pg, g_main, (size_t)(g_main_end - g_main));
	ta_memcpy((void *)(uintptr_t)(code_pg + 0x200), g_vec, (size_t)(g_vec_end - g_vec));
	cache_clean(code_pg, PAGE);
	ta_memset((void *)(uintptr_t)data_pg, 0, DATA_PGS * PAGE);
	cache_clean(data_pg, DATA_PGS * PAGE);
	set_list(&code_pg, 1);
	expect_st("slot-add-code", CALL(HC_SLOT_SET, vm, 0, HC_SLOT_ADD, G_CODE, list_pg, 1),
		  HC_OK);
	set_list(data, DATA_PGS);
	expect_st("slot-add-data", CALL(HC_SLOT_SET, vm, 1, HC_SLOT_ADD, G_DATA, list_pg, DATA_PGS),
		  HC_OK);
}

static void check_reset_state(uint64_t vm)
{
	expect_st("get-regs-1", CALL(HC_VCPU_GET_REGS, vm, 1, regs_pg, 0, 0, 0), HC_OK);
	ta_verdict("reset-state-1", "pc 0x%llx pstate 0x%llx mpidr 0x%llx sctlr.M %u",
		   (unsigned long long)regs()->pc, (unsigned long long)regs()->pstate,
		   (unsigned long long)regs()->mpidr_el1, (unsigned)(regs()->sctlr_el1 & 1));
}

static void hostile_pstate(uint64_t vm)
{
	static const uint64_t bad[] = {0x3c9 /* EL2h */, 0x3c8 /* EL2t */, 0x10 /* AArch32 */,
				       0x3c5 | (1ull << 21) /* SS */,
				       0x3c5 | (1ull << 20) /* IL */};
	unsigned refused = 0;

	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		regs()->pstate = bad[i];
		refused += CALL(HC_VCPU_SET_REGS, vm, 0, regs_pg, 0, 0, 0).st == HC_E_INVAL;
	}
	ta_verdict("set-regs-bad-pstate", "%u of %u refused with E_INVAL", refused,
		   (unsigned)(sizeof(bad) / sizeof(bad[0])));
	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	ta_verdict("bad-pstate-left-state", "pstate 0x%llx", (unsigned long long)regs()->pstate);
}

static void set_entry(uint64_t vm, uint64_t vcpu, const char *label)
{
	CALL(HC_VCPU_GET_REGS, vm, vcpu, regs_pg, 0, 0, 0);
	regs()->pc = G_CODE + (uint64_t)(label - g_main);
	regs()->pstate = 0x3c5;
	regs()->x[0] = PATTERN;
	regs()->x[1] = G_DATA;
	regs()->x[2] = G_MMIO;
	regs()->x[3] = DATA_PGS * PAGE / 8;
	regs()->x[8] = G_DATA2;
	regs()->vbar_el1 = 0;
	ta_verdict("set-regs", "%s",
		   err_name(CALL(HC_VCPU_SET_REGS, vm, vcpu, regs_pg, 0, 0, 0).st));
}

static void phase1(uint64_t vm)
{
	set_entry(vm, 0, g_main);
	verdict_exit("p1-exit-1", run_vcpu(vm, 0)); /* MMIO write pattern */
	verdict_exit("p1-exit-2", run_vcpu(vm, 0)); /* MMIO read */
	run_page()->u.mmio.data = 0x1234abcdull;
	verdict_exit("p1-exit-3", run_vcpu(vm, 0)); /* HYPERCALL nr = read data */
	run_page()->u.hcall.ret[0] = 0x77;	    /* x0..x3 of the guest */
	run_page()->u.hcall.ret[1] = G_DATA;
	run_page()->u.hcall.ret[2] = G_MMIO;
	run_page()->u.hcall.ret[3] = 0;
	verdict_exit("p1-exit-4", run_vcpu(vm, 0)); /* MMIO write ret[0] */
	uint32_t r = run_vcpu(vm, 0);		    /* UNDEF: the vector's MMIO write of ESR */
	ta_verdict("p1-exit-5", "%s gpa 0x%llx ESR_EL1.EC 0x%llx", exit_name(r),
		   (unsigned long long)run_page()->u.mmio.gpa,
		   (unsigned long long)(run_page()->u.mmio.data >> 26));
	verdict_exit("p1-exit-6", run_vcpu(vm, 0)); /* HALT */

	cache_clean(data_pg, DATA_PGS * PAGE);
	const uint64_t *d = (const uint64_t *)(uintptr_t)data_pg;
	unsigned good = 0;
	for (unsigned i = 0; i < DATA_PGS * PAGE / 8; i++)
		good += d[i] == PATTERN;
	ta_verdict("pattern", "%u of %u words", good, (unsigned)(DATA_PGS * PAGE / 8));
	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	ta_verdict("regs-after-halt", "pc at +0x%llx x4 0x%llx x0 0x%llx",
		   (unsigned long long)(regs()->pc - G_CODE), (unsigned long long)regs()->x[4],
		   (unsigned long long)regs()->x[0]);
}

/* The payload's own interrupt window: IRQs masked in the primary and the
 * firmware's tick (its virtual timer) masked, so that the only interrupt is
 * the payload's physical timer (PPI 30). */
static uint64_t quiet_cntv;

static void quiet_begin(void)
{
	a64_irq_mask();
	quiet_cntv = a64_mrs("cntv_ctl_el0");
	a64_msr("cntv_ctl_el0", quiet_cntv | 2); /* IMASK */
	a64_gic_save();
	a64_gic_local_config(30, 0x80, true);
}

static void quiet_end(void)
{
	a64_msr("cntp_ctl_el0", 0);
	a64_gic_restore();
	a64_msr("cntv_ctl_el0", quiet_cntv & 3);
	a64_isb();
	a64_irq_unmask();
}

/* vCPU 1 spins ~40 ms of TCG time with V0 = the pattern while the primary's
 * own EL1 physical timer (PPI 30, not the secondary's) fires 5 ms in: the
 * interrupt must end the run with PREEMPTED (IRQs are masked in the primary,
 * so it stays pending until the payload disarms the timer), and V0 must
 * survive the primary clobbering its own V0 between the runs. */
static void preempt_test(uint64_t vm)
{
	set_entry(vm, 1, g_spin);
	CALL(HC_VCPU_GET_REGS, vm, 1, regs_pg, 0, 0, 0);
	regs()->x[5] = SPIN_LOOPS;
	regs()->cpacr_el1 = 3ull << 20; /* FPEN: FP/SIMD at EL1 */
	CALL(HC_VCPU_SET_REGS, vm, 1, regs_pg, 0, 0, 0);
	if (!a64_gic_init())
		ta_abort("no GIC found");
	quiet_begin();
	unsigned before = preempted;
	uint64_t t0 = a64_cntpct();
	a64_msr("cntp_cval_el0", t0 + a64_mrs("cntfrq_el0") / 200);
	a64_msr("cntp_ctl_el0", 1);
	a64_isb();
	disarm_cntp = true;
	verdict_exit("vcpu1-exit-1", run_vcpu(vm, 1)); /* V0 after the spin */
	disarm_cntp = false;
	quiet_end();
	ta_info("spin: %u PREEMPTED exits in %llu ticks", preempted - before,
		(unsigned long long)(a64_cntpct() - t0));
	ta_verdict("vcpu1-preempted", "%s", preempted > before ? "yes" : "no");
	verdict_exit("vcpu1-exit-2", run_vcpu(vm, 1));

	/* The same spin with nothing armed by the payload: the firmware's own
	 * tick (its virtual timer, swapped out during the run; Slat carries its
	 * deadline on CNTHP) must still end runs. */
	set_entry(vm, 1, g_spin);
	CALL(HC_VCPU_GET_REGS, vm, 1, regs_pg, 0, 0, 0);
	regs()->x[5] = SPIN_LOOPS;
	regs()->cpacr_el1 = 3ull << 20;
	CALL(HC_VCPU_SET_REGS, vm, 1, regs_pg, 0, 0, 0);
	before = preempted;
	t0 = a64_cntpct();
	verdict_exit("vcpu1-tick-exit", run_vcpu(vm, 1));
	ta_info("spin: %u PREEMPTED exits by the firmware's tick in %llu ticks", preempted - before,
		(unsigned long long)(a64_cntpct() - t0));
	ta_verdict("vcpu1-preempted-by-firmware-tick", "%s", preempted > before ? "yes" : "no");
}

static void box1_clean(void)
{
	for (uintptr_t p = (uintptr_t)&box1; p < (uintptr_t)(&box1 + 1); p += 16)
		__asm__ volatile("dc civac, %0" ::"r"(p) : "memory");
	a64_dsb();
}

/* CPU 0 runs a guest that reads slot 2 in a loop; CPU 1 deletes slot 2 once
 * the guest runs. Slat's broadcast invalidation must end the guest's use of
 * the old translation: the next read exits MMIO at once. Without it the
 * guest would loop on a stale TLB entry until the watchdog (the primary's
 * physical timer, 1 s) preempts it; so PREEMPTED here is a failure. */
static void cross_cpu_delete(uint64_t vm)
{
	uint64_t data[DATA_PGS] = {data_pg, data_pg + PAGE};
	volatile uint32_t *flag = (volatile uint32_t *)(uintptr_t)(code_pg + 0x800);

	set_list(data, DATA_PGS);
	expect_st("slot-add-2", CALL(HC_SLOT_SET, vm, 2, HC_SLOT_ADD, G_DATA, list_pg, DATA_PGS),
		  HC_OK);
	set_entry(vm, 0, g_race);
	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	regs()->x[12] = G_CODE + 0x800;
	regs()->x[8] = G_DATA;
	CALL(HC_VCPU_SET_REGS, vm, 0, regs_pg, 0, 0, 0);
	*flag = 0;
	cache_clean(code_pg + 0x800, 64);
	ta_memset(&box1, 0, sizeof(box1));
	box1.flag_pa = code_pg + 0x800;
	box1.vm = vm;
	box1_clean();
	if (!a64_psci_init() || !a64_gic_init())
		ta_abort("no PSCI or GIC");
	int64_t on = a64_psci(PSCI_CPU_ON_64, 1, (uint64_t)(uintptr_t)cpu1_entry,
			      (uint64_t)(uintptr_t)&box1);
	ta_verdict("cpu1-on", "%lld", (long long)on);
	quiet_begin();
	a64_msr("cntp_cval_el0", a64_cntpct() + a64_mrs("cntfrq_el0"));
	a64_msr("cntp_ctl_el0", 1);
	a64_isb();
	unsigned pre = 0;
	uint32_t r = 0;
	for (unsigned i = 0; i < 4; i++) {
		struct ret4 st = CALL(HC_VCPU_RUN, vm, 0, run_pg, 0, 0, 0);
		r = st.st == HC_OK ? run_page()->reason : 0;
		if (r != HC_EXIT_PREEMPTED)
			break;
		pre++;
		a64_msr("cntp_ctl_el0", 0);
	}
	quiet_end();
	ta_verdict("cross-cpu-delete", "%s gpa 0x%llx, %u preempted", exit_name(r),
		   (unsigned long long)run_page()->u.mmio.gpa, pre);
	uint64_t t0 = a64_cntpct();
	do
		box1_clean();
	while (!box1.done && a64_cntpct() - t0 < a64_mrs("cntfrq_el0"));
	ta_verdict("cpu1-slot-delete", "%s", box1.done ? err_name(box1.result) : "never answered");
}

static void phase2_3(uint64_t vm)
{
	expect_st("slot-move", CALL(HC_SLOT_SET, vm, 1, HC_SLOT_MOVE, G_DATA2, 0, 0), HC_OK);
	set_entry(vm, 0, g_phase2);
	verdict_exit("p2-exit-1", run_vcpu(vm, 0)); /* MMIO read at the old gpa */
	run_page()->u.mmio.data = 0;
	verdict_exit("p2-exit-2", run_vcpu(vm, 0)); /* MMIO write of what the new gpa holds */
	verdict_exit("p2-exit-3", run_vcpu(vm, 0)); /* HALT */
	expect_st("slot-delete", CALL(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE, 0, 0, 0), HC_OK);
	expect_st("slot-delete-again", CALL(HC_SLOT_SET, vm, 1, HC_SLOT_DELETE, 0, 0, 0),
		  HC_E_BAD_SLOT);
	set_entry(vm, 0, g_phase3);
	verdict_exit("p3-exit-1", run_vcpu(vm, 0)); /* MMIO read at the deleted slot */
	uint32_t r = run_vcpu(vm, 0);
	ta_verdict("p3-exit-ldp", "%s EC 0x%llx ISV %llu ipa 0x%llx", exit_name(r),
		   (unsigned long long)(run_page()->u.fail.hw_reason >> 26),
		   (unsigned long long)(run_page()->u.fail.hw_reason >> 24 & 1),
		   (unsigned long long)run_page()->u.fail.info[0]);
	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	regs()->pc += 4; /* the VMM skips what it cannot emulate */
	CALL(HC_VCPU_SET_REGS, vm, 0, regs_pg, 0, 0, 0);
	verdict_exit("p3-exit-2", run_vcpu(vm, 0)); /* SYSTEM_OFF */
	preempt_test(vm);
}

/* ---- the virtual GIC (ABI 1.6) ---- */
#define LR_PENDING (1ull << HC_VGIC_LR_STATE_SHIFT)
#define LR_SPI40   (40ull | 0x80ull << HC_VGIC_LR_PRIO_SHIFT | HC_VGIC_LR_GROUP1 | LR_PENDING)

static unsigned lr_state(void)
{
	return (unsigned)(run_page()->vgic.lr[0] >> HC_VGIC_LR_STATE_SHIFT);
}

/* A RUN the vgic fields make illegal: refused before anything runs. */
static void vgic_refused(uint64_t vm, const char *check, uint32_t flags, uint8_t nr, uint64_t lr)
{
	uint64_t pc;

	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	pc = regs()->pc;
	run_page()->vgic.flags = flags;
	run_page()->vgic.nr_lr = nr;
	run_page()->vgic.lr[0] = lr;
	struct ret4 r = CALL(HC_VCPU_RUN, vm, 0, run_pg, 0, 0, 0);
	run_page()->vgic.flags = 0;
	run_page()->vgic.nr_lr = 0;
	CALL(HC_VCPU_GET_REGS, vm, 0, regs_pg, 0, 0, 0);
	ta_verdict(check, "%s, pc %s", err_name(r.st), regs()->pc == pc ? "kept" : "MOVED");
}

static void vgic_hostile(uint64_t vm, unsigned lr_max)
{
	vgic_refused(vm, "vgic-bad-group0", HC_VGIC_ON, 1, LR_SPI40 & ~HC_VGIC_LR_GROUP1);
	vgic_refused(vm, "vgic-bad-intid", HC_VGIC_ON, 1, (LR_SPI40 & ~0xffffffffull) | 1020);
	vgic_refused(vm, "vgic-bad-res0", HC_VGIC_ON, 1, LR_SPI40 | 1ull << 56);
	vgic_refused(vm, "vgic-bad-hw-pintid", HC_VGIC_ON, 1,
		     LR_SPI40 | HC_VGIC_LR_HW | 30ull << HC_VGIC_LR_PINTID_SHIFT);
	vgic_refused(vm, "vgic-bad-count", HC_VGIC_ON, (uint8_t)(lr_max + 1), LR_SPI40);
	vgic_refused(vm, "vgic-bad-flags", HC_VGIC_ON | 8, 0, 0);
	vgic_refused(vm, "vgic-lrs-while-off", 0, 1, LR_SPI40);
	vgic_refused(vm, "vgic-v2-on-v3", HC_VGIC_ON | HC_VGIC_V2, 0, 0);
}

/* ---- GICv2 (ABI 1.7) ---- */
#define LR2_SPI40 (40ull | 0x80ull << HC_VGIC_LR_PRIO_SHIFT | LR_PENDING) /* group 0 */
#define LR2_SGI5_FROM2                                                                             \
	(5ull | 2ull << HC_VGIC_V2_SGI_SRC_SHIFT | 0xa0ull << HC_VGIC_LR_PRIO_SHIFT | LR_PENDING)

static void vgic2_refused(uint64_t vm, const char *check, uint64_t cpuif, uint64_t lr)
{
	run_page()->vgic.cpuif_ipa = cpuif;
	vgic_refused(vm, check, HC_VGIC_ON | HC_VGIC_V2, 1, lr);
}

static void vgic2_hostile(uint64_t vm, unsigned lr_max)
{
	vgic_refused(vm, "vgic2-v3-form", HC_VGIC_ON, 1, LR_SPI40);
	vgic2_refused(vm, "vgic2-cpuif-unaligned", G_CPUIF + 0x800, LR2_SPI40);
	vgic2_refused(vm, "vgic2-cpuif-beyond-ipa", (1ull << 52) - PAGE, LR2_SPI40);
	vgic2_refused(vm, "vgic2-spi-with-source", G_CPUIF, LR2_SPI40 | 1ull << 10);
	vgic2_refused(vm, "vgic2-intid-13-bits", G_CPUIF, LR2_SPI40 | 1ull << 13);
	vgic2_refused(vm, "vgic2-bad-hw-pintid", G_CPUIF,
		      LR2_SPI40 | HC_VGIC_LR_HW | 30ull << HC_VGIC_LR_PINTID_SHIFT);
	run_page()->vgic.cpuif_ipa = G_CPUIF;
	vgic_refused(vm, "vgic2-bad-count", HC_VGIC_ON | HC_VGIC_V2, (uint8_t)(lr_max + 1),
		     LR2_SPI40);
}

static void vgic2_test(uint64_t vm, unsigned lr_max)
{
	struct hc_run *rp = run_page();

	set_entry(vm, 0, g_vgic2);
	vgic2_hostile(vm, lr_max);
	rp->vgic.flags = HC_VGIC_ON | HC_VGIC_V2;
	rp->vgic.cpuif_ipa = G_CPUIF;
	rp->vgic.nr_lr = 2;
	rp->vgic.lr[0] = LR2_SPI40;
	rp->vgic.lr[1] = LR2_SGI5_FROM2;
	verdict_exit("vgic2-ctlr", run_vcpu(vm, 0));
	ta_verdict("vgic2-lrs-before", "states %u %u", lr_state(),
		   (unsigned)(rp->vgic.lr[1] >> HC_VGIC_LR_STATE_SHIFT));
	verdict_exit("vgic2-iar-spi", run_vcpu(vm, 0)); /* the higher priority first */
	ta_verdict("vgic2-lrs-after-spi", "states %u %u", lr_state(),
		   (unsigned)(rp->vgic.lr[1] >> HC_VGIC_LR_STATE_SHIFT));
	verdict_exit("vgic2-iar-sgi", run_vcpu(vm, 0)); /* 5 from CPU 2 */
	verdict_exit("vgic2-iar-empty", run_vcpu(vm, 0));
	ta_verdict("vgic2-lrs-after-eoi", "states %u %u, lr1 0x%llx", lr_state(),
		   (unsigned)(rp->vgic.lr[1] >> HC_VGIC_LR_STATE_SHIFT),
		   (unsigned long long)rp->vgic.lr[1]);
	rp->vgic.nr_lr = 0;
	verdict_exit("vgic2-byte-read", run_vcpu(vm, 0));
	verdict_exit("vgic2-halt", run_vcpu(vm, 0));
	rp->vgic.flags = 0;
}

static void vgic_test(uint64_t vm)
{
	struct hc_run *rp = run_page();
	unsigned lr_max = rp->vgic.lr_max; /* written at every RUN */

	ta_verdict("vgic-lr-max", "%u, GICv%u", lr_max, rp->vgic.gic);
	if (rp->vgic.gic == 2) {
		vgic2_test(vm, lr_max);
		return;
	}
	set_entry(vm, 0, g_vgic);
	if (!lr_max) { /* no virtual interface for secondaries */
		vgic_refused(vm, "vgic-on-without-lrs", HC_VGIC_ON, 0, 0);
		return;
	}
	vgic_hostile(vm, lr_max);
	rp->vgic.flags = HC_VGIC_ON;
	rp->vgic.nr_lr = 1;
	rp->vgic.lr[0] = LR_SPI40;
	verdict_exit("vgic-sre", run_vcpu(vm, 0)); /* ICC_SRE_EL1 */
	ta_verdict("vgic-lr-before-ack", "state %u", lr_state());
	verdict_exit("vgic-iar", run_vcpu(vm, 0)); /* the INTID acknowledged */
	ta_verdict("vgic-lr-after-ack", "state %u", lr_state());
	verdict_exit("vgic-iar-empty", run_vcpu(vm, 0)); /* 1023 after the EOI */
	ta_verdict("vgic-lr-after-eoi", "state %u", lr_state());
	uint32_t r = run_vcpu(vm, 0);
	ta_verdict("vgic-sgi", "%s id 0x%x write %u data 0x%llx", exit_name(r), rp->u.sysreg.id,
		   rp->u.sysreg.is_write, (unsigned long long)rp->u.sysreg.data);
	rp->vgic.nr_lr = 0;
	verdict_exit("vgic-mdscr", run_vcpu(vm, 0));
	verdict_exit("vgic-pmcr", run_vcpu(vm, 0));
	verdict_exit("vgic-halt", run_vcpu(vm, 0));
	ta_verdict("vgic-vtimer-ctl", "0x%llx", (unsigned long long)(rp->vgic.vtimer_ctl & 3));
	rp->vgic.flags = 0;
}

static void hostile(uint64_t vm)
{
	uint64_t slat = slat_region_guess();

	expect_st("deposit-slat-frame", CALL(HC_DEPOSIT, slat + 16 * PAGE, 1, 0, 0, 0, 0),
		  HC_E_SLAT);
	expect_st("run-page-in-slat", CALL(HC_VCPU_RUN, vm, 0, slat + 16 * PAGE, 0, 0, 0),
		  HC_E_SLAT);
	expect_st("deposit-flash", CALL(HC_DEPOSIT, 0, 1, 0, 0, 0, 0), HC_E_RANGE);
	/* The code page is slot 0 of vm: another VM may not have it. */
	struct ret4 c = CALL(HC_VM_CREATE, 0, 1, 0, 0, 0, 0);
	expect_st("vm-create-2", c, HC_OK);
	set_list(&code_pg, 1);
	expect_st("slot-add-other-vms-frame",
		  CALL(HC_SLOT_SET, c.r[0], 0, HC_SLOT_ADD, 0, list_pg, 1), HC_E_OTHER_VM);
	expect_st("deposit-slot-frame", CALL(HC_DEPOSIT, code_pg, 1, 0, 0, 0, 0), HC_E_OTHER_VM);
	expect_st("vm-destroy-2", CALL(HC_VM_DESTROY, c.r[0], 0, 0, 0, 0, 0), HC_OK);
	expect_st("vm-destroy-bad", CALL(HC_VM_DESTROY, 999, 0, 0, 0, 0, 0), HC_E_BAD_VM);
	expect_st("run-bad-vcpu", CALL(HC_VCPU_RUN, vm, 7, run_pg, 0, 0, 0), HC_E_BAD_VCPU);
	expect_st("run-bad-vm", CALL(HC_VCPU_RUN, c.r[0], 0, run_pg, 0, 0, 0), HC_E_BAD_VM);
	expect_st("slot-delete-bad", CALL(HC_SLOT_SET, vm, 77, HC_SLOT_DELETE, 0, 0, 0),
		  HC_E_BAD_SLOT);
	hostile_pstate(vm);
}

/* Takes everything back; returns the pages withdrawn. */
static uint64_t withdraw_all(void)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < 64; i++) {
		struct ret4 w = CALL(HC_WITHDRAW, list_pg, HC_LIST_MAX, 0, 0, 0, 0);
		if (w.st != HC_OK) {
			ta_verdict("withdraw", "%s", err_name(w.st));
			return total;
		}
		if (!w.r[0])
			return total;
		total += w.r[0];
	}
	ta_verdict("withdraw", "did not end after 64 calls");
	return total;
}

static void teardown(uint64_t vm)
{
	expect_st("vm-stats", CALL(HC_VM_STATS, vm, stats_pg, 0, 0, 0, 0), HC_OK);
	const struct hc_vm_stats *vs = (const void *)(uintptr_t)stats_pg;
	ta_verdict("vm-stats-vcpus-slots", "%llu vCPUs, %llu slots, %llu slot pages",
		   (unsigned long long)vs->vcpus, (unsigned long long)vs->slots,
		   (unsigned long long)vs->slot_pages);
	ta_info("vm stats: faults %llu (mmio %llu) meta %llu", (unsigned long long)vs->faults,
		(unsigned long long)vs->faults_mmio, (unsigned long long)vs->meta_pages);
	expect_st("vm-destroy", CALL(HC_VM_DESTROY, vm, 0, 0, 0, 0, 0), HC_OK);
	expect_st("run-after-destroy", CALL(HC_VCPU_RUN, vm, 0, run_pg, 0, 0, 0), HC_E_BAD_VM);
	uint64_t got = withdraw_all();
	ta_verdict("withdrawn", "%llu of %u pages", (unsigned long long)got, POOL_PAGES);
	probe_deposited(false);
	expect_st("hv-stats", CALL(HC_HV_STATS, stats_pg, 0, 0, 0, 0, 0), HC_OK);
	const struct hc_hv_stats *s = (const void *)(uintptr_t)stats_pg;
	ta_verdict("hv-stats",
		   "deposited %llu withdrawn %llu free %llu used %llu own_nodes %llu vms %llu",
		   (unsigned long long)s->deposited, (unsigned long long)s->withdrawn,
		   (unsigned long long)s->free, (unsigned long long)s->used,
		   (unsigned long long)s->own_nodes, (unsigned long long)s->vms);
	ta_verdict("hv-stats-vms", "created %llu destroyed %llu",
		   (unsigned long long)s->vms_created, (unsigned long long)s->vms_destroyed);
}

void ta_main(void)
{
	run_pg = alloc_pages(1);
	regs_pg = alloc_pages(1);
	list_pg = alloc_pages(1);
	stats_pg = alloc_pages(1);
	code_pg = alloc_pages(1);
	data_pg = alloc_pages(DATA_PGS);
	pool_pg = alloc_pages(POOL_PAGES);

	discovery();
	uint64_t vm = make_vm();
	check_reset_state(vm);
	load_guest(vm);
	phase1(vm);
	phase2_3(vm);
	vgic_test(vm);
	cross_cpu_delete(vm);
	hostile(vm);
	teardown(vm);
	ta_info("PREEMPTED exits retried: %u", preempted);
}
