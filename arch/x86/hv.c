// SPDX-License-Identifier: Apache-2.0
//
// core/hv.h's arch_hv_* on x86, shared by the back ends (hv.h): the entry
// loop of VCPU_RUN and the calls that only forward to the back end. Until a
// back end installs its operations (x86_hv_start, which starts hv_init) core never
// calls in here: hv_init was not called and every hypercall answers
// HC_E_UNKNOWN.
#include "arch/x86/cpu.h"
#include "arch/x86/fmt_x86.h"
#include "arch/x86/hv.h"
#include "arch/x86/hv_cpuid.h"
#include "arch/x86/slat.h"
#include "core/log.h"
#include "core/plan.h"
#include "core/mem.h"

static const struct x86_hv_ops *hv_ops;
static uint64_t primary_fpu_pa; // X86_MAX_CPUS pages: each CPU's primary vCPU's extended state

static int x86_hv_call(uint32_t fn, const uint64_t *a, uint64_t *res);

bool x86_hv_start(const struct x86_hv_ops *ops, const struct slat_plan *plan)
{
	static uint64_t ram[PLAN_MAX_RANGES][2], slat[1][2];
	unsigned n = 0;

	for (unsigned i = 0; i < plan->n_ranges; i++) {
		if (plan->ranges[i].kind != PLAN_MEM_NORMAL)
			continue;
		ram[n][0] = plan->ranges[i].base;
		ram[n][1] = plan->ranges[i].size;
		n++;
	}
	slat[0][0] = plan->region.base;
	slat[0][1] = plan->region.size;
	hv_ops = ops;
	const struct hv_boot b = {.ram = ram,
				  .nram = n,
				  .slat = slat,
				  .nslat = 1,
				  .abi = HC_ABI_X86,
				  .ncpus = X86_MAX_CPUS,
				  .arch_call = x86_hv_call};
	return hv_init(&b) == 0;
}

// Through the engine's own walk of the vCPU's current SLAT root (a lockless
// reader: the tables it passes outlive it), as the CPU would translate.
static bool secondary_gpa_to_hpa(struct vcpu *v, uint64_t gpa, uint64_t *hpa)
{
	struct s2_xlate x;

	if (!v->hv.root)
		return false;
	s2_translate(v->vm->hv.s2, v->hv.root, gpa, &x);
	*hpa = x.hpa;
	return x.mapped;
}

bool x86_hv_read_phys(struct vcpu *v, uint64_t gpa, void *buf, unsigned len)
{
	uint8_t *dst = buf;

	while (len) {
		unsigned chunk = 4096 - (unsigned)(gpa & 0xfff);
		uint64_t hpa;
		if (chunk > len)
			chunk = len;
		if (!secondary_gpa_to_hpa(v, gpa, &hpa) ||
		    region_overlaps(&x86_primary.hidden, hpa, chunk) ||
		    hpa + chunk > x86_primary.arch.host_map_top)
			return false;
		memcpy(dst, (const void *)(uintptr_t)hpa, chunk);
		gpa += chunk, dst += chunk, len -= chunk;
	}
	return true;
}

const struct x86_hv_ops *x86_hv_ops_of(void)
{
	return hv_ops;
}

void arch_hv_s2_config(struct s2_vm_config *cfg)
{
	cfg->fmt = hv_ops->fmt;
	cfg->ia_bits = 0; // the format's (48 bits)
	cfg->caps = S2_CAP_AD | S2_CAP_MMIO_MARKER;
}

int arch_hv_vcpu_create(struct vcpu *v)
{
	memset(&v->arch, 0, sizeof(v->arch));
	v->arch.ops = hv_ops->vcpu_ops;
	return hv_ops->vcpu_create(v);
}

void arch_hv_vcpu_destroy(struct vcpu *v)
{
	hv_ops->vcpu_destroy(v);
	if (v->arch.hv.cpuid_pa)
		hv_page_free(v->vm, v->arch.hv.cpuid_pa);
	v->arch.hv.cpuid_pa = 0;
	v->arch.hv.cpuid_n = 0;
}

_Static_assert(HC_CPUID_MAX * sizeof(struct hc_cpuid_entry) <= 4096, "a table is one page");
_Static_assert(HC_MSR_MAX * sizeof(struct hc_msr_entry) <= 4096, "a list is one page");

// VCPU_SET_CPUID (0 entries: Slat's policy again). Prepare, check, commit:
// the table goes to a new page and is checked there (the primary cannot
// change it any more), so a refused or failed call keeps the old table.
static int hv_set_cpuid(struct vcpu *v, const void *page, uint32_t count)
{
	struct x86_hv_vcpu *h = &v->arch.hv;
	uint64_t pa = 0;
	unsigned bad;

	if (count) {
		pa = hv_page_alloc(v->vm);
		if (!pa)
			return HC_E_NOMEM;
		memcpy((void *)(uintptr_t)pa, page, count * sizeof(struct hc_cpuid_entry));
		if (!x86_cpuid_table_ok(x86_hv_supported,
					(const struct hc_cpuid_entry *)(uintptr_t)pa, count,
					&bad)) {
			hv_page_free(v->vm, pa);
			return HC_E_INVAL;
		}
	}
	if (h->cpuid_pa)
		hv_page_free(v->vm, h->cpuid_pa);
	h->cpuid_pa = pa;
	h->cpuid_n = count;
	return HC_OK;
}

// VCPU_MSRS: up to the first MSR Slat does not keep or illegal value. Each
// entry is read once and its data written back once (reads).
static int hv_msrs(struct vcpu *v, void *page, uint32_t count, bool write, uint64_t *done)
{
	struct hc_msr_entry *list = page;
	uint32_t i;

	for (i = 0; i < count; i++) {
		struct hc_msr_entry e;
		memcpy(&e, &list[i], sizeof(e));
		if (e.pad || !x86_hv_msr_stopped(v, e.index, write, &e.data))
			break;
		if (!write)
			memcpy(&list[i].data, &e.data, sizeof(e.data));
	}
	*done = i;
	return HC_OK;
}

// The architecture's calls (hv_boot.arch_call): ABI 1.3's CPUID and MSR calls.
static int x86_hv_call(uint32_t fn, const uint64_t *a, uint64_t *res)
{
	struct hc_call c;
	struct vcpu *v;
	void *page;
	int r = x86_hv_call_decode(fn, a, &c);

	if (r)
		return r;
	if (c.fn == HC_CPUID_SUPPORTED) { // Slat's table into the page
		if ((r = hv_primary_page(c.pa, &page)) == HC_OK)
			res[0] = x86_cpuid_enumerate(x86_hv_supported, page, HC_CPUID_MAX);
		return r;
	}
	if ((r = hv_stopped_vcpu(c.vm, c.vcpu, c.pa, &page, &v)))
		return r;
	if (c.fn == HC_VCPU_SET_CPUID)
		return hv_set_cpuid(v, page, (uint32_t)c.count);
	if (c.fn == HC_VCPU_FPU)
		return x86_hv_fpu_access(v->arch.hv.fpu_pa, page, c.flags);
	return hv_msrs(v, page, (uint32_t)c.count, c.flags, &res[0]);
}

// ---- ABI 1.11: the event state in the register page ---------------------------------
// v->arch.hv.intinfo keeps an interrupted delivery in the EXITINTINFO layout
// (both back ends: the error code in bits 63:32), which is the page's event
// with its error code apart. QEMU's TCG reports an external interrupt's
// interrupted delivery as an exception with its vector (svm/hv.c,
// intinfo_is_irq); no exception has a vector above 31, so the page calls it
// what it is.
static void hv_get_events(struct vcpu *v, struct hc_regs_x86 *r)
{
	uint64_t ii = v->arch.hv.intinfo;

	// The back end's get_state may copy a page the VMM set (VT-x keeps one).
	r->event = r->event_error = 0;
	r->shadow = 0;
	memset(r->pad_events, 0, sizeof(r->pad_events));
	r->flags = HC_REGS_X86_EVENTS;
	r->nmi =
	    (v->arch.nmi.pending ? HC_NMI_HELD : 0) | (v->arch.nmi.blocked ? HC_NMI_BLOCKED : 0);
	if (ii & HC_EVENT_VALID) {
		r->event =
		    (uint32_t)ii & (HC_EVENT_VALID | HC_EVENT_TYPE_MASK | HC_EVENT_ERR | 0xffu);
		r->event_error = (r->event & HC_EVENT_ERR) ? (uint32_t)(ii >> 32) : 0;
	}
	hv_ops->get_events(v, r);
	if ((r->event & HC_EVENT_TYPE_MASK) == HC_EVENT_EXC && (r->event & 0xffu) >= 32)
		r->event = (r->event & ~(HC_EVENT_TYPE_MASK | HC_EVENT_ERR)) | HC_EVENT_EXTINT;
}

// After set_state (which dropped the control block's queued event and shadow).
static void hv_set_events(struct vcpu *v, const struct hc_regs_x86 *r)
{
	uint64_t ev = r->event & HC_EVENT_VALID ? r->event : 0;

	if (ev & HC_EVENT_ERR)
		ev |= (uint64_t)r->event_error << 32;
	v->arch.hv.intinfo = ev; // delivered again at the next entry, as an exit's
	v->arch.hv.intinfo_len = 0; // the page has no instruction length
	v->arch.nmi.pending = r->nmi & HC_NMI_HELD;
	v->arch.nmi.blocked = r->nmi & HC_NMI_BLOCKED;
	v->arch.nmi.iret_seen = false;
	hv_ops->set_events(v, r);
}

int arch_hv_set_regs(struct vcpu *v, const void *page)
{
	struct hc_regs_x86 r;

	memcpy(&r, page, sizeof(r)); // one read of the primary's page: checked = used
	bool events = r.flags & HC_REGS_X86_EVENTS;
	// KVM's rule: the completion waits for the next RUN unless RIP moved.
	bool keep = (r.flags & HC_REGS_X86_KEEP_PENDING) && r.rip == v->arch.rip;
	if (r.flags & ~(HC_REGS_X86_EVENTS | HC_REGS_X86_KEEP_PENDING))
		return HC_E_INVAL;
	if (!x86_hv_regs_ok(v, &r) || (events && !x86_hv_events_ok(&r, hv_ops->nmi_ok())))
		return HC_E_INVAL;
	hv_ops->set_state(v, &r);
	// A state the VMM sets replaces whatever an exit was waiting for (unless
	// kept); the event state is the page's (1.11), or none (an older page).
	if (!keep)
		v->arch.hv.pending = X86_HV_PEND_NONE;
	v->arch.hv.intinfo = 0;
	v->arch.hv.intinfo_len = 0;
	if (events)
		hv_set_events(v, &r);
	return HC_OK;
}

void arch_hv_get_regs(struct vcpu *v, void *page)
{
	struct hc_regs_x86 r;

	memset(&r, 0, sizeof(r));
	hv_ops->get_state(v, &r);
	hv_get_events(v, &r);
	memcpy(page, &r, sizeof(r));
}

// ABI 1.4's interrupt injection (KVM's model without an in-kernel irqchip):
// the VMM's vector, held for this RUN, goes in at the first entry where the
// guest can take it; until then the back end exits when the window opens. A
// window the VMM asked for ends the RUN once it is open with nothing pending,
// after at least one entry (as KVM, so that a VMM asking again and again still
// lets the guest run). True: the RUN ends here with HC_EXIT_IRQ_WINDOW.
struct x86_hv_irq {
	uint32_t irq;	   // HC_IRQ_VALID | vector, 0 once delivered
	uint32_t injected; // irq as it went into the last entry, until it is known taken
	bool want_window;
	bool entered; // the guest ran in this RUN
};

static bool irq_before_entry(struct vcpu *v, struct x86_hv_irq *q, struct hc_run *run)
{
	bool open = hv_ops->irq_open(v), pending = q->irq & HC_IRQ_VALID;

	if (pending && open) {
		hv_ops->irq_window(v, false);
		hv_ops->irq_inject(v, (uint8_t)q->irq);
		q->injected = q->irq;
		q->irq = 0;
		return false;
	}
	if (!pending && q->want_window && open && q->entered) {
		hv_ops->irq_window(v, false);
		run->reason = HC_EXIT_IRQ_WINDOW;
		return true;
	}
	hv_ops->irq_window(v, !open && (pending || q->want_window));
	return false;
}

// What the VMM sees of the interrupt state at the end of a RUN.
static void irq_after_run(struct vcpu *v, const struct x86_hv_irq *q, struct hc_run *run)
{
	run->irq = q->irq;
	run->if_flag = !!(v->arch.ops->read_rflags(v) & RFLAGS_IF);
	run->irq_ready = !(q->irq & HC_IRQ_VALID) && hv_ops->irq_open(v);
	run->nmi_state =
	    (v->arch.nmi.pending ? HC_NMI_HELD : 0) | (v->arch.nmi.blocked ? HC_NMI_BLOCKED : 0);
}

// The extended state for a RUN of v (`in`: v's loaded, the caller's kept) and
// after it (the caller's back). The caller is the CPU's primary vCPU.
static void fpu_switch(struct vcpu *caller, struct vcpu *v, bool in)
{
	uint64_t mine = primary_fpu_pa + (uint64_t)caller->index * 4096;

	x86_hv_fpu_save(in ? mine : v->arch.hv.fpu_pa);
	x86_hv_fpu_load(in ? v->arch.hv.fpu_pa : mine);
}

// The entry loop, on the host stack of the caller's exit (interrupts and GIF
// masked): enter, let core see the exit, decide; until an exit is for the VMM
// or for the primary (a physical interrupt or NMI: PREEMPTED).
int arch_hv_run(struct vcpu *caller, struct vcpu *v, struct hc_run *run)
{
	// One read of the primary's page: checked = used.
	uint32_t irq = __atomic_load_n(&run->irq, __ATOMIC_RELAXED);
	uint8_t window = __atomic_load_n(&run->irq_window, __ATOMIC_RELAXED);
	uint8_t nmi = __atomic_load_n(&run->nmi, __ATOMIC_RELAXED);
	uint8_t msr_exits = __atomic_load_n(&run->msr_exits, __ATOMIC_RELAXED);
	struct x86_hv_irq q = {.irq = irq, .want_window = window == 1};
	int rc = HC_OK;

	if ((irq & ~(HC_IRQ_VALID | 0xffu)) || window > 1 || nmi > 1 || msr_exits > 1 ||
	    (nmi && !hv_ops->nmi_ok()))
		return HC_E_INVAL;
	v->arch.hv.msr_exits = msr_exits;
	if (nmi) { // held from here: delivered when the guest is not blocked
		x86_nmi_raise(&v->arch.nmi);
		run->nmi = 0;
	}
	x86_hv_complete(v, run);
	fpu_switch(caller, v, true);
	hv_ops->begin(caller, v);
	for (;;) {
		struct hv_entry en = {0};
		struct x86_exit e;

		rc = hv_vcpu_enter(v, &en);
		if (rc != HC_OK)
			break;
		// Slat completed the instruction that exited (skipped, or finished
		// with the VMM's answer): its STI / MOV SS shadow is over.
		if (v->arch.rip != v->arch.hv.exit_rip)
			v->arch.ops->complete_insn(v, false);
		// After the entry is certain (an injected vector is never lost to a
		// failed one); a window exit leaves guest mode untouched.
		if (irq_before_entry(v, &q, run)) {
			hv_vcpu_exited(v);
			break;
		}
		hv_ops->enter(v, &en, &e);
		// An exit before the guest took the vector (a host interrupt
		// first, say) leaves it pending: the VMM's LAPIC keeps it queued.
		if (q.injected && !hv_ops->irq_taken(v))
			q.irq = q.injected;
		q.injected = 0;
		v->arch.hv.exit_rip = v->arch.rip;
		q.entered = true;
		hv_vcpu_exited(v);
		if (x86_hv_exit(caller, v, &e, run, &rc) == X86_HV_RETURN)
			break;
	}
	irq_after_run(v, &q, run);
	hv_ops->end(caller, v);
	fpu_switch(caller, v, false);
	return rc;
}

// x86 has no broadcast invalidation: every CPU flushes at its next entry
// (hv_entry.flush) after core kicked the ones in guest mode.
bool arch_hv_flush_vm(struct vm *vm)
{
	return false;
}

void arch_hv_kick_pcpu(unsigned pcpu)
{
	hv_ops->kick(pcpu);
}

// The physical CPU is the index of its primary vCPU (one per CPU, claimed in
// the order the CPUs entered guest mode).
unsigned arch_hv_pcpu(void)
{
	struct vcpu *p = vm_vcpu_find(&x86_primary, cpuid(1, 0).ebx >> 24);

	return p ? p->index : 0;
}

void arch_hv_relax(void)
{
	pause();
}

// ---- extended state --------------------------------------------------------------
// x87 and SSE with FXSAVE (usable with CR4.OSFXSR whatever XCR0 says, and
// XSAVE saves only what XCR0 enables); the components above SSE (AVX, ...)
// with XSAVE / XRSTOR of XCR0 & ~3 into the same area, standard format, when
// the host has XSAVE. XCR0 is the primary's throughout (a secondary's XSETBV
// is refused), so both sides use the same layout.
#define XSTATE_ABOVE_SSE (~3u)
#define FX_FCW_DEFAULT	 0x037fu
#define FX_MXCSR_OFF	 24
#define FX_MXCSR_DEFAULT 0x1f80u

static bool hv_xsave;

bool x86_hv_fpu_setup(struct region *r, bool xsave)
{
	hv_xsave = xsave;
	// The largest area any XCR0 can need must fit one page.
	if (xsave && cpuid(0xd, 0).ecx > 4096) {
		log_warn("x86: XSAVE area of %u bytes: no secondary VMs\n", cpuid(0xd, 0).ecx);
		return false;
	}
	primary_fpu_pa = region_alloc(r, X86_MAX_CPUS, 4096);
	if (!primary_fpu_pa)
		log_warn("x86: no room in Slat's region for secondary VMs\n");
	return primary_fpu_pa != 0;
}

void x86_hv_fpu_init(uint64_t pa)
{
	// A zeroed XSAVE header is the init state of every component above SSE;
	// FCW and MXCSR get their reset values for FXRSTOR.
	*(uint16_t *)(uintptr_t)pa = FX_FCW_DEFAULT;
	*(uint32_t *)(uintptr_t)(pa + FX_MXCSR_OFF) = FX_MXCSR_DEFAULT;
}

// VCPU_FPU (ABI 1.9): bytes 0..415 of a stopped vCPU's FXSAVE64 image (FCW,
// FSW, FTW, FOP, FIP, FDP, MXCSR, MXCSR_MASK, ST0-7, XMM0-15). A write keeps
// MXCSR_MASK, the reserved tail and the XSAVE header, and refuses an MXCSR
// with a bit outside the CPU's mask: FXRSTOR would fault on it in Slat.
#define FX_IMAGE_BYTES	416u
#define FX_MASK_OFF	28
#define FX_MASK_DEFAULT 0xffbfu // SDM: MXCSR_MASK 0 means this one
int x86_hv_fpu_access(uint64_t fpu_pa, void *page, uint32_t write)
{
	uint8_t *area = (uint8_t *)(uintptr_t)fpu_pa;
	uint8_t img[FX_IMAGE_BYTES];
	uint32_t mxcsr, mask;

	if (!write) {
		memcpy(page, area, FX_IMAGE_BYTES);
		return HC_OK;
	}
	memcpy(img, page, sizeof(img)); // one read of the primary's page: checked = used
	memcpy(&mxcsr, img + FX_MXCSR_OFF, 4);
	memcpy(&mask, area + FX_MASK_OFF, 4);
	if (!mask)
		mask = FX_MASK_DEFAULT;
	if (mxcsr & ~mask)
		return HC_E_INVAL;
	memcpy(img + FX_MASK_OFF, area + FX_MASK_OFF, 4);
	memcpy(area, img, sizeof(img));
	return HC_OK;
}

void x86_hv_fpu_save(uint64_t pa)
{
	__asm__ volatile("fxsave64 (%0)" ::"r"(pa) : "memory");
	if (hv_xsave)
		__asm__ volatile("xsave64 (%0)" ::"r"(pa), "a"(XSTATE_ABOVE_SSE), "d"(~0u)
				 : "memory");
}

void x86_hv_fpu_load(uint64_t pa)
{
	if (hv_xsave)
		__asm__ volatile("xrstor64 (%0)" ::"r"(pa), "a"(XSTATE_ABOVE_SSE), "d"(~0u)
				 : "memory");
	__asm__ volatile("fxrstor64 (%0)" ::"r"(pa) : "memory");
}

// ---- kicks ------------------------------------------------------------------------
// The primary vCPU of physical CPU `pcpu` gets a kick (an NMI, intercepted
// by both back ends); a secondary running there exits and consumes it.
void x86_hv_kick_primary(unsigned pcpu)
{
	if (pcpu >= x86_primary.max_vcpus)
		return;
	struct vcpu *t = &x86_primary.vcpus[pcpu];
	__atomic_store_n(&t->arch.kicks, 1, __ATOMIC_RELEASE);
	x86_kick_nmi(t);
}
