// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/x86/smp.c - multiprocessor start-up and IPIs (run with 2 CPUs).
 *
 * The BSP finds the other processor's APIC ID in the ACPI MADT, puts a
 * real-mode trampoline (lib/smp_ap_entry.S) in a page below 1 MiB and starts
 * the AP there 20 times with the architectural sequence: INIT (assert),
 * 10 ms, INIT de-assert, STARTUP, 200 us, STARTUP, each wait bounded. Each
 * start-up must be counted exactly once by the AP, with no exception taken.
 * The AP checks what INIT did to its local APIC (a snapshot, and an
 * interrupt window in which nothing may arrive), then leaves the APIC
 * enabled with a periodic timer running for the next INIT to reset.
 * Then 100 NMI IPIs BSP -> AP, one at a time, each taken exactly once by the
 * parked AP within a bounded time (round trips in ARCHINFO). At the end the
 * AP gets an INIT and waits for a STARTUP, a state the firmware's MP services
 * start from; the payload powers off.
 */
#include "tests/arch/lib/ta_efi.h"
#include "tests/arch/x86/lib/smp.h"
#include "tests/arch/x86/lib/x86.h"

#define STARTUPS 20
#define NMI_IPIS 100

static void stall_us(unsigned us)
{
	ta_bs()->Stall(us);
}

/* Waits up to `us` microseconds for *p to reach `want`. */
static bool wait_count(volatile uint32_t *p, uint32_t want, unsigned us)
{
	for (unsigned t = 0; t < us; t += 10) {
		if (*p >= want)
			return true;
		stall_us(10);
	}
	return *p >= want;
}

static bool send_init(uint32_t ap)
{
	return smp_send_ipi(ap, ICR_INIT | ICR_LEVEL | ICR_ASSERT) &&
	       (stall_us(10000), smp_send_ipi(ap, ICR_INIT | ICR_LEVEL));
}

/* One INIT-SIPI-SIPI round; returns NULL when the AP started once, else what went wrong. */
static const char *start_once(uint32_t ap, uint8_t vector, struct smp_tramp_data *d)
{
	uint32_t before = d->starts;

	if (!send_init(ap))
		return "INIT not accepted by the APIC";
	if (!smp_send_ipi(ap, ICR_STARTUP | vector))
		return "first STARTUP not accepted by the APIC";
	stall_us(200);
	if (!smp_send_ipi(ap, ICR_STARTUP | vector))
		return "second STARTUP not accepted by the APIC";
	if (!wait_count(&d->starts, before + 1, 200000))
		return d->faults ? "exception before the count" : "timeout (AP did not count)";
	stall_us(2000); /* a second start would show up by now */
	if (d->starts != before + 1)
		return "the AP started more than once";
	if (d->faults)
		return "exception after the start";
	return NULL;
}

static void snap_verdict(const char *check, const volatile struct smp_apic_snap *a)
{
	ta_verdict(check,
		   "SVR 0x%x TPR 0x%x LDR 0x%x DFR 0x%x LVT timer 0x%x LINT0 0x%x LINT1 0x%x "
		   "error 0x%x timer count 0x%x divide 0x%x ISR %s IRR %s",
		   a->svr, a->tpr, a->ldr, a->dfr, a->lvt_timer, a->lvt_lint0, a->lvt_lint1,
		   a->lvt_error, a->timer_initial, a->timer_divide, a->isr_any ? "set" : "empty",
		   a->irr_any ? "set" : "empty");
}

static void startups(uint32_t ap, uint8_t vector, struct smp_tramp_data *d)
{
	unsigned ok = 0;

	for (unsigned i = 0; i < STARTUPS; i++) {
		const char *why = start_once(ap, vector, d);
		if (!why) {
			ok++;
			if (i == 0 ||
			    i == STARTUPS - 1) /* as the firmware left it; as this payload did */
				snap_verdict(i ? "smp-apic-after-init-last"
					       : "smp-apic-after-init-first",
					     &d->snap);
			continue;
		}
		ta_verdict("smp-startup-failure",
			   "round %u: %s (starts %u, exceptions %u, vector %u)", i + 1, why,
			   d->starts, d->faults, d->fault_vec);
		if (d->faults)
			break; /* the AP stopped: later rounds would only repeat it */
	}
	ta_verdict("smp-startups", "completed %u of %u", ok, STARTUPS);
}

/* How long one NMI may take to be handled by the parked AP, in ms of TSC
 * time: far above the worst round trip seen (about 1.3 s, with QEMU busy). */
#define NMI_WAIT_MS 10000

/* Waits until the AP has finished `n` NMI handlers, up to `limit` TSC cycles. */
static bool wait_nmi_exits(const struct smp_tramp_data *d, uint32_t n, uint64_t limit)
{
	uint64_t t0 = rdtsc();

	while (d->nmi_exits < n)
		if (rdtsc() - t0 > limit)
			return d->nmi_exits >= n;
	return true;
}

/* NMI round trips, in TSC cycles (ARCHINFO). */
struct nmi_times {
	uint64_t write, trip, best, worst;
};

static void nmi_time(struct nmi_times *t, uint64_t t0, uint64_t t1, uint64_t t2)
{
	t->write += t1 - t0;
	t->trip += t2 - t0;
	t->best = t2 - t0 < t->best ? t2 - t0 : t->best;
	t->worst = t2 - t0 > t->worst ? t2 - t0 : t->worst;
}

/*
 * NMIs to the parked AP, one at a time: the next is sent only after the AP
 * counted the previous one's handler as finished, so at most one is ever
 * outstanding and none can merge with another (a second NMI while one is
 * pending or in service before IRET is latched as one). Each wait is bounded
 * in time; the first NMI that is not taken, or taken twice, ends the phase
 * with a verdict that says which.
 */
static void nmi_ipis(uint32_t ap, struct smp_tramp_data *d, uint64_t tsc_ms)
{
	struct nmi_times t = {0, 0, ~0ull, 0};
	uint32_t base = d->nmi_exits;
	unsigned ok = 0;

	for (unsigned i = 0; i < NMI_IPIS; i++) {
		uint32_t want = base + i + 1;
		smp_apic_write(APIC_ICR_HI, ap << 24);
		uint64_t t0 = rdtsc();
		smp_apic_write(APIC_ICR_LO, ICR_NMI | ICR_ASSERT);
		uint64_t t1 = rdtsc();
		bool done = wait_nmi_exits(d, want, NMI_WAIT_MS * tsc_ms);
		uint64_t t2 = rdtsc();
		if (!done || d->nmis != want || d->nmi_exits != want) {
			ta_verdict("smp-nmi-ipi-failure",
				   "NMI %u: %s within %u ms (handler entered %u, finished %u times "
				   "for %u sent)",
				   i + 1, done ? "taken more than once" : "not taken", NMI_WAIT_MS,
				   d->nmis - base, d->nmi_exits - base, i + 1);
			break;
		}
		ok++;
		nmi_time(&t, t0, t1, t2);
	}
	ta_verdict("smp-nmi-ipi", "%u of %u taken by the AP, exceptions %u", ok, NMI_IPIS,
		   d->faults);
	if (ok)
		ta_info("smp: NMI IPI BSP->AP: ICR write %llu TSC cycles, round trip %llu TSC "
			"cycles (mean of %u), least %llu, most %llu",
			(unsigned long long)(t.write / ok), (unsigned long long)(t.trip / ok), ok,
			(unsigned long long)t.best, (unsigned long long)t.worst);
}

/* The cost of single operations that exit under Slat, in TSC cycles (mean
 * of 200): the exits this payload's topic adds (APIC writes, port 0xCF8). */
static void op_icr_self(void)
{
	smp_apic_write(APIC_ICR_LO,
		       ICR_INIT | ICR_LEVEL | (1u << 18)); /* de-assert to self: no-op */
}

static void op_tpr(void)
{
	smp_apic_write(0x080, smp_apic_read(0x080)); /* TPR: an ordinary APIC write */
}

static void op_cf8_out(void)
{
	outl(0xcf8, 0x80000000u); /* PCI config address, 32-bit: overlaps reset port 0xCF9 */
}

static void op_cpuid(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
}

/* Least mean over 8 batches of 25: the machine is shared, the minimum is the
 * cost without the noise of other work. */
static uint64_t op_cycles(void (*op)(void))
{
	uint64_t best = ~0ull;

	for (unsigned b = 0; b < 8; b++) {
		uint64_t t0 = rdtsc();
		for (unsigned i = 0; i < 25; i++)
			op();
		uint64_t t = (rdtsc() - t0) / 25;
		best = t < best ? t : best;
	}
	return best;
}

static void exit_costs(void)
{
	uint32_t cf8 = inl(0xcf8);

	ta_info("smp: cycles per op: ICR write (INIT de-assert to self) %llu, TPR write %llu, "
		"outl 0xCF8 %llu, CPUID %llu",
		(unsigned long long)op_cycles(op_icr_self), (unsigned long long)op_cycles(op_tpr),
		(unsigned long long)op_cycles(op_cf8_out), (unsigned long long)op_cycles(op_cpuid));
	outl(0xcf8, cf8);
}

static uint64_t tsc_per_ms(void)
{
	uint64_t t0 = rdtsc();
	stall_us(10000);
	return (rdtsc() - t0) / 10;
}

void ta_main(void)
{
	uint32_t r[4], ids[16], ap = 0xffffffff;

	cpuid(1, 0, r);
	uint64_t tsc_ms = tsc_per_ms();
	ta_info("smp: CPUID 1 ECX x2APIC %u; TSC %llu cycles per ms", (r[2] >> 21) & 1,
		(unsigned long long)tsc_ms);
	uint32_t bsp = smp_apic_read(APIC_ID) >> 24;
	unsigned x2 = 0, n = smp_madt_apic_ids(ids, 16, &x2);
	ta_info("smp: IA32_APIC_BASE 0x%llx (x2APIC mode %u); MADT local x2APIC entries %u",
		(unsigned long long)rdmsr(0x1b), (unsigned)(rdmsr(0x1b) >> 10) & 1, x2);
	for (unsigned i = 0; i < n; i++)
		if (ids[i] != bsp && ap == 0xffffffff)
			ap = ids[i];
	ta_verdict("smp-madt", "%u enabled processors, BSP is one: %s", n,
		   n && ap != 0xffffffff ? "yes" : "no");
	if (ap == 0xffffffff)
		return;
	ta_info("smp: BSP APIC ID %u, AP APIC ID %u", bsp, ap);

	EFI_PHYSICAL_ADDRESS page = 0xfffff;
	if (EFI_ERROR(ta_bs()->AllocatePages(AllocateMaxAddress, EfiLoaderData, 1, &page)))
		ta_abort("no page below 1 MiB for the trampoline");
	struct smp_tramp_data *d = smp_tramp_install((uint32_t)page);
	ta_info("smp: trampoline at 0x%llx", (unsigned long long)page);

	startups(ap, (uint8_t)(page >> 12), d);
	if (d->starts && !d->faults)
		nmi_ipis(ap, d, tsc_ms);
	exit_costs();
	ta_verdict("smp-final-init", "%s", send_init(ap) ? "accepted" : "not accepted");
}
