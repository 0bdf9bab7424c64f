// SPDX-License-Identifier: Apache-2.0
//
// The shared x86 exit layer (arch/x86/*.c) against a fake back end: the
// instruction decoder (lengths, operands, prefixes, REX, 32-bit mode, guest
// paging, Slat's region refused), the CPUID and MSR policy, XSETBV's checks,
// and the INIT/SIPI mailbox driven through emulated APIC-page writes. Guest
// "physical" memory is this process's memory (the layer assumes an identity
// second level), so code and page tables are ordinary buffers. x86-64 hosts
// only (the layer executes CPUID).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#if defined(__x86_64__)

#include "arch/x86/apic_mailbox.c"
#include "arch/x86/cpuid.c"
#include "arch/x86/cr.c"
#include "arch/x86/cr_check.c"
#include "arch/x86/decode.c"
#include "arch/x86/exit.c"
#include "arch/x86/handle_exit.c"
#include "arch/x86/l1_write.c"
#include "arch/x86/msr.c"
#include "arch/x86/nmi.c"
#include "arch/x86/svm/exit_decode.c"
#include "arch/x86/vm.c"
#include "arch/x86/vmx/exit_decode.c"

// True when the policy's table (msr.c) handles `msr` for this CPU kind (SVM:
// without the vmx_only entries). The test's own query: Slat looks entries
// up as it handles an exit.
static bool x86_msr_policy_has(uint32_t msr, bool write, bool vmx)
{
	for (unsigned i = 0; i < x86_n_msr_intercepts; i++) {
		const struct x86_msr_intercept *m = &x86_msr_intercepts[i];
		if (msr >= m->first && msr <= m->last && (vmx || !m->vmx_only))
			return write ? m->write : m->read;
	}
	return false;
}

// ---- the secondary-VM layer (core/hv.h), faked: records the call ---------------
static struct hc_regs hv_seen;
static unsigned hv_calls;
void hv_dispatch(struct vcpu *caller, struct hc_regs *r)
{
	hv_seen = *r;
	hv_calls++;
	r->fn = 0x77;
	r->a[0] = 0xa0;
	r->a[1] = 0xa1;
	r->a[2] = 0xa2;
}
void hv_print_summary(void)
{
}
// The ownership answer core gives for a primary SLAT fault (core/hv.c).
static bool hv_retry_answer;
static unsigned hv_retry_calls;
bool hv_primary_fault_retry(struct vcpu *v, uint64_t pa)
{
	hv_retry_calls++;
	return hv_retry_answer;
}

// ---- the shadow engine's emulated update (mm/shadow.h), faked: one word ---------
static struct {
	uint64_t word, gpa;
	unsigned bytes, calls;
	bool compared;
} l1w;
int sh_emulate_update(struct sh_mmu *m, unsigned as, uint64_t gpa, unsigned bytes,
		      const uint64_t *expect, uint64_t val, uint64_t *old)
{
	uint64_t mask = bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1;

	l1w.calls++;
	l1w.gpa = gpa;
	l1w.bytes = bytes;
	l1w.compared = expect != NULL;
	*old = l1w.word & mask;
	if (!expect || *expect == *old)
		l1w.word = (l1w.word & ~mask) | (val & mask);
	return 0;
}

// ---- the fake back end -------------------------------------------------------
struct fake {
	uint64_t cr0, cr3, cr4, efer;
	uint16_t cs_attr, ss_attr;
	uint64_t cs_base, fs_base, cr2;
	unsigned insn_len;
	int injected; // vector + 1, 0 = none
	uint32_t error;
	uint64_t efer_written;
	unsigned kicks;
	unsigned waits, nmis_delivered;
	uint64_t rflags;
	int completed; // complete_insn calls: 1 = no trap, 2 = single-step trap
};
static struct fake fk[X86_MAX_CPUS];

static struct fake *F(struct vcpu *v)
{
	return v->arch.backend;
}
static uint64_t f_read_cr(struct vcpu *v, unsigned n)
{
	return n == 0 ? F(v)->cr0 : n == 3 ? F(v)->cr3 : n == 4 ? F(v)->cr4 : 0;
}
static uint64_t f_read_efer(struct vcpu *v)
{
	return F(v)->efer;
}
static void f_write_efer(struct vcpu *v, uint64_t e)
{
	F(v)->efer_written = e;
}
static uint64_t f_read_rflags(struct vcpu *v)
{
	return F(v)->rflags | 2;
}
static void f_complete_insn(struct vcpu *v, bool single_step)
{
	F(v)->completed = single_step ? 2 : 1;
}
static void f_read_seg(struct vcpu *v, enum x86_seg_reg s, struct x86_seg *out)
{
	*out = (struct x86_seg){.attr = s == X86_CS ? F(v)->cs_attr : F(v)->ss_attr,
				.base = s == X86_CS   ? F(v)->cs_base
					: s == X86_FS ? F(v)->fs_base
						      : 0};
}
static void f_write_cr2(struct vcpu *v, uint64_t la)
{
	F(v)->cr2 = la;
}
static void f_inject(struct vcpu *v, unsigned vector, bool has_error, uint32_t error)
{
	F(v)->injected = (int)vector + 1;
	F(v)->error = error;
}
static unsigned f_insn_len(struct vcpu *v)
{
	return F(v)->insn_len;
}
static enum x86_action f_wait(struct vcpu *v, const struct x86_exit *e)
{
	F(v)->waits++;
	return X86_CONTINUE;
}
static void f_deliver_nmi(struct vcpu *v)
{
	F(v)->nmis_delivered++;
}
static const struct x86_vcpu_ops fops = {
    .read_cr = f_read_cr,
    .read_efer = f_read_efer,
    .write_efer = f_write_efer,
    .read_rflags = f_read_rflags,
    .read_seg = f_read_seg,
    .inject = f_inject,
    .write_cr2 = f_write_cr2,
    .insn_len = f_insn_len,
    .complete_insn = f_complete_insn,
    .wait = f_wait,
    .deliver_nmi = f_deliver_nmi,
};

static void f_counts(struct slat_mm_counts *o)
{
	memset(o, 0, sizeof(*o));
}
static void f_teardown(uint64_t *p, uint64_t *i)
{
	*p = *i = 0;
}
static void f_kick(struct vcpu *t)
{
	fk[t->index].kicks++;
}
static void f_run(struct vcpu *v)
{
}
static unsigned irq_windows;
static void f_irq_window(struct vcpu *v)
{
	irq_windows++;
}
static const struct x86_vm_ops fvm = {.run = f_run,
				      .mm_counts = f_counts,
				      .teardown = f_teardown,
				      .kick = f_kick,
				      .irq_window = f_irq_window};

static uint32_t *apic_page;

// 64-bit long mode, paging "off" as far as the walker is concerned (CR0.PG
// clear with LMA set translates linear = physical), so any pointer works.
static struct vcpu *setup(void)
{
	struct region slat = {.base = 0x1000, .size = 0x1000};
	struct x86_power_ports pw = {.pm1a_cnt = 0x604, .reset_port = 0xcf9};

	assert_int_equal(x86_vm_init("NPT", &fvm, &slat, 0, 1000000, &pw), 0);
	x86_primary.arch.host_map_top = UINT64_MAX;
	if (!apic_page)
		apic_page = aligned_alloc(4096, 4096);
	memset(apic_page, 0, 4096);
	x86_primary.arch.apic_base = (uint64_t)(uintptr_t)apic_page;
	memset(fk, 0, sizeof(fk));
	for (unsigned i = 0; i < 2; i++) {
		struct vcpu *v = x86_vcpu_for_apic(i);
		v->arch.ops = &fops;
		v->arch.backend = &fk[v->index];
		vcpu_set_running(v);
		fk[i] = (struct fake){
		    .cr0 = 1, .efer = EFER_LME | EFER_LMA, .cs_attr = 0x29b, .ss_attr = 0x93};
	}
	return &x86_primary.vcpus[0];
}

static bool decode_bytes(struct vcpu *v, const uint8_t *code, size_t n, struct x86_insn *in)
{
	static uint8_t buf[32];

	memset(buf, 0x90, sizeof(buf));
	memcpy(buf, code, n);
	v->arch.rip = (uint64_t)(uintptr_t)buf;
	return x86_decode(v, in);
}

#define DECODE(v, in, ...)                                                                         \
	({                                                                                         \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		decode_bytes(v, c_, sizeof(c_), in);                                               \
	})

// ---- decoder --------------------------------------------------------------------
static void test_decode_lengths_64(void **state)
{
	struct vcpu *v = setup();
	struct x86_insn in;

	assert_true(DECODE(v, &in, 0x0f, 0xa2)); // cpuid
	assert_int_equal(in.len, 2);
	assert_true(DECODE(v, &in, 0x0f, 0x01, 0xd1)); // xsetbv
	assert_int_equal(in.len, 3);
	assert_true(DECODE(v, &in, 0x0f, 0x01, 0xd9)); // vmmcall
	assert_int_equal(in.len, 3);
	assert_true(DECODE(v, &in, 0x0f, 0x01, 0x15, 1, 2, 3, 4)); // lgdt [rip+disp32]
	assert_int_equal(in.len, 7);
	assert_true(DECODE(v, &in, 0xf4)); // hlt
	assert_int_equal(in.len, 1);
	assert_true(DECODE(v, &in, 0xe6, 0x80)); // out 0x80, al
	assert_int_equal(in.len, 2);
	assert_true(DECODE(v, &in, 0x66, 0xef)); // out dx, ax
	assert_int_equal(in.len, 2);
	assert_true(DECODE(v, &in, 0xf3, 0x6f)); // rep outsd
	assert_int_equal(in.len, 2);
	assert_false(DECODE(v, &in, 0x0f, 0x0b)); // ud2: not a form Slat knows
}

static void test_decode_mov_operands(void **state)
{
	struct vcpu *v = setup();
	struct x86_insn in;

	assert_true(DECODE(v, &in, 0x89, 0x88, 0x00, 0x03, 0x00, 0x00)); // mov [rax+0x300], ecx
	assert_int_equal(in.len, 6);
	assert_int_equal(in.reg, X86_RCX);
	assert_int_equal(in.op_size, 4);
	assert_true(DECODE(v, &in, 0x41, 0x89, 0x04, 0x24)); // mov [r12], eax (SIB)
	assert_int_equal(in.len, 4);
	assert_int_equal(in.reg, X86_RAX);
	assert_true(DECODE(v, &in, 0x44, 0x89, 0x40, 0x10)); // mov [rax+0x10], r8d
	assert_int_equal(in.len, 4);
	assert_int_equal(in.reg, X86_R8);
	assert_true(DECODE(v, &in, 0x87, 0x1c, 0x25, 0x00, 0x03, 0xe0, 0xfe)); // xchg [abs], ebx
	assert_int_equal(in.len, 7);
	assert_int_equal(in.reg, X86_RBX);
	assert_true(
	    DECODE(v, &in, 0xc7, 0x05, 1, 2, 3, 4, 0x00, 0x01, 0x00, 0x00)); // mov [rip+d], imm
	assert_int_equal(in.len, 10);
	assert_true(in.has_imm);
	assert_int_equal(in.imm, 0x100);
	assert_true(
	    DECODE(v, &in, 0x48, 0xc7, 0x00, 0xff, 0xff, 0xff, 0xff)); // mov qword [rax], -1
	assert_int_equal(in.op_size, 8);
	assert_int_equal(in.imm, UINT64_MAX);
	assert_true(DECODE(v, &in, 0x66, 0x89, 0x08)); // mov [rax], cx
	assert_int_equal(in.op_size, 2);
	assert_true(DECODE(v, &in, 0x2e, 0xa3, 1, 2, 3, 4, 5, 6, 7, 8)); // cs: mov moffs64, eax
	assert_int_equal(in.len, 10);
	assert_true(DECODE(v, &in, 0x67, 0xa3, 1, 2, 3, 4)); // addr32 mov moffs32, eax
	assert_int_equal(in.len, 6);
}

// The memory operand's address (nested SVM takes the written byte's page
// offset from it: QEMU's nested page faults give only the page).
static void test_decode_effective_address(void **state)
{
	struct vcpu *v = setup();
	struct x86_insn in;

	v->arch.gpr[X86_RDX] = 0x7000;
	v->arch.gpr[X86_RSI] = 0x1234;
	assert_true(DECODE(v, &in, 0xf0, 0x48, 0x0f, 0xb1, 0x32)); // lock cmpxchg [rdx], rsi
	assert_int_equal(in.len, 5);
	assert_true(in.two_byte);
	assert_int_equal(in.opcode, 0xb1);
	assert_int_equal(in.reg, X86_RSI);
	assert_int_equal(in.op_size, 8);
	assert_true(in.ea_ok);
	assert_int_equal(in.ea, 0x7000);
	v->arch.gpr[X86_R13] = 0x10;
	v->arch.gpr[X86_RBX] = 0x5000;
	assert_true(DECODE(v, &in, 0x4e, 0x89, 0x6c, 0xeb, 0xf8)); // mov [rbx+r13*8-8], r13
	assert_int_equal(in.reg, X86_R13);
	assert_int_equal(in.ea, 0x5000 + 0x80 - 8);
	v->arch.gpr[X86_R12] = 0x9000;
	assert_true(DECODE(v, &in, 0x49, 0x87, 0x84, 0x24, 0x00, 0x01, 0x00,
			   0x00)); // xchg [r12+0x100], rax
	assert_int_equal(in.ea, 0x9100);
	assert_true(
	    DECODE(v, &in, 0x48, 0x89, 0x05, 0x10, 0x00, 0x00, 0x00)); // mov [rip+0x10], rax
	assert_int_equal(in.ea, v->arch.rip + in.len + 0x10);
	assert_true(DECODE(v, &in, 0x89, 0xc8)); // mov eax, ecx: no memory operand
	assert_false(in.ea_ok);
}

static void test_decode_32bit_mode(void **state)
{
	struct vcpu *v = setup();
	struct x86_insn in;
	// Below 4 GiB, as 32-bit linear addresses must be.
	uint8_t *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	assert_true(low != MAP_FAILED);
	fk[0].efer = 0;
	fk[0].cs_attr = 0xc9b; // 32-bit code: D set, L clear
	fk[0].cs_base = 0x100;
	static const uint8_t code[] = {0xa3, 1, 2, 3, 4, 0x66, 0xc7, 0x00, 0x34, 0x12};
	memcpy(low + 0x100, code, sizeof(code));
	v->arch.rip = (uint64_t)(uintptr_t)low; // CS base 0x100 + EIP
	assert_true(x86_decode(v, &in));
	assert_int_equal(in.len, 5); // moffs32
	v->arch.rip += 5;
	assert_true(x86_decode(v, &in));
	assert_int_equal(in.len, 5); // 66 C7 /0 imm16
	assert_int_equal(in.op_size, 2);
	assert_int_equal(in.imm, 0x1234);
	munmap(low, 4096);
}

// 4-level paging: linear 0x7f0000400123 -> the code page, through tables in
// ordinary memory; then a 2 MiB leaf; then a missing PTE.
static void test_decode_through_guest_paging(void **state)
{
	struct vcpu *v = setup();
	uint64_t *t = aligned_alloc(4096, 5 * 4096);
	uint8_t *code = (uint8_t *)(t + 4 * 512);
	struct x86_insn in;
	uint64_t la = 0x7f0000400123ull;

	memset(t, 0, 5 * 4096);
	code[0x123] = 0x0f, code[0x124] = 0xa2;
	t[(la >> 39) & 511] = (uint64_t)(uintptr_t)(t + 512) | 1;
	t[512 + ((la >> 30) & 511)] = (uint64_t)(uintptr_t)(t + 1024) | 1;
	t[1024 + ((la >> 21) & 511)] = (uint64_t)(uintptr_t)(t + 1536) | 1;
	t[1536 + ((la >> 12) & 511)] = (uint64_t)(uintptr_t)code | 1;
	fk[0].cr0 = CR0_PE | CR0_PG;
	fk[0].cr3 = (uint64_t)(uintptr_t)t;
	fk[0].cr4 = CR4_PAE;
	v->arch.rip = la;
	assert_true(x86_decode(v, &in));
	assert_int_equal(in.len, 2);
	t[1536 + ((la >> 12) & 511)] = 0; // not present
	assert_false(x86_decode(v, &in));
	// The guest's tables point into Slat's region: refused.
	x86_primary.hidden = (struct region){.base = (uint64_t)(uintptr_t)t, .size = 4096};
	assert_false(x86_decode(v, &in));
	free(t);
}

// ---- CPUID, MSR, XSETBV policy ---------------------------------------------------
static void test_cpuid_policy(void **state)
{
	struct vcpu *v = setup();
	uint32_t r[4];
	bool has_xsave = cpuid(1, 0).ecx & (1u << 26);

	x86_cpuid_policy(v, 1, 0, r);
	assert_true(r[2] & (1u << 31));	 // hypervisor
	assert_false(r[2] & (1u << 5));	 // VMX
	assert_false(r[2] & (1u << 21)); // x2APIC
	assert_false(r[2] & (1u << 27)); // OSXSAVE: guest CR4 says no
	fk[0].cr4 = CR4_OSXSAVE;
	x86_cpuid_policy(v, 1, 0, r);
	assert_int_equal(!!(r[2] & (1u << 27)), has_xsave);
	x86_cpuid_policy(v, 0x40000000, 0, r);
	assert_int_equal(r[0], 0x40000001);
	assert_memory_equal(&r[1], "SlatSlatSlat", 12);
	x86_cpuid_policy(v, 0x40000001, 0, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	x86_cpuid_policy(v, 0x80000001, 0, r);
	assert_false(r[2] & (1u << 2)); // SVM
	x86_cpuid_policy(v, 0x8000000a, 0, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);

	// The exit: registers zero-extended, RIP advanced by the reported length.
	v->arch.gpr[X86_RAX] = 0xffffffff40000000ull;
	v->arch.gpr[X86_RCX] = 0;
	v->arch.rip = 0x1000;
	fk[0].insn_len = 2;
	assert_int_equal(x86_handle_cpuid(v), X86_CONTINUE);
	assert_int_equal(v->arch.rip, 0x1002);
	assert_int_equal(v->arch.gpr[X86_RBX], 0x74616c53);
}

static void test_msr_policy(void **state)
{
	struct vcpu *v = setup();

	fk[0].insn_len = 2;
	v->arch.rip = 0x2000;
	v->arch.gpr[X86_RCX] = MSR_VM_CR;
	x86_handle_rdmsr(v);
	assert_int_equal(v->arch.gpr[X86_RAX], VM_CR_SVMDIS | VM_CR_LOCK);
	assert_int_equal(v->arch.rip, 0x2002);

	v->arch.gpr[X86_RCX] = MSR_EFER; // reads come from the back end (SVME hidden there)
	x86_handle_rdmsr(v);
	assert_int_equal(v->arch.gpr[X86_RAX], EFER_LME | EFER_LMA);

	v->arch.rip = 0x3000; // EFER.SVME: #GP, RIP unchanged, nothing written
	v->arch.gpr[X86_RAX] = EFER_LME | EFER_SVME;
	v->arch.gpr[X86_RDX] = 0;
	x86_handle_wrmsr(v);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_int_equal(v->arch.rip, 0x3000);
	assert_int_equal(fk[0].efer_written, 0);

	fk[0].injected = 0; // an allowed write goes to the back end
	v->arch.gpr[X86_RAX] = EFER_LME | EFER_NXE | EFER_SCE;
	x86_handle_wrmsr(v);
	assert_int_equal(fk[0].injected, 0);
	assert_int_equal(fk[0].efer_written, EFER_LME | EFER_NXE | EFER_SCE);
	assert_int_equal(v->arch.rip, 0x3002);

	v->arch.gpr[X86_RCX] = 0x10; // not in the policy: #GP
	x86_handle_rdmsr(v);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_true(x86_msr_policy_has(MSR_EFER, true, false));
	assert_true(x86_msr_policy_has(0x485, false, true));
	assert_false(x86_msr_policy_has(0x485, false, false)); // VMX MSRs: Intel only
	assert_false(x86_msr_policy_has(MSR_IA32_PAT, false, false));
}

static void test_xsetbv_checks(void **state)
{
	struct vcpu *v = setup();

	v->arch.rip = 0x4000;
	v->arch.gpr[X86_RCX] = 1; // only XCR0 exists
	v->arch.gpr[X86_RAX] = 3;
	x86_handle_xsetbv(v);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	fk[0].injected = 0;
	v->arch.gpr[X86_RCX] = 0;
	v->arch.gpr[X86_RAX] = 2; // x87 state must stay enabled
	x86_handle_xsetbv(v);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	fk[0].injected = 0;
	v->arch.gpr[X86_RAX] = 5; // AVX without SSE
	x86_handle_xsetbv(v);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	fk[0].injected = 0;
	fk[0].ss_attr = 0x93 | (3 << 5); // from CPL 3
	v->arch.gpr[X86_RAX] = 3;
	x86_handle_xsetbv(v);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_int_equal(v->arch.rip, 0x4000);
}

// ---- APIC page and mailbox ---------------------------------------------------------
// Emulates "mov [rax+off], ecx" with ecx = val on vCPU `v`.
static void apic_write(struct vcpu *v, unsigned off, uint32_t val)
{
	static const uint8_t mov[] = {0x89, 0x88, 0x00, 0x00, 0x00, 0x00};
	static uint8_t buf[16];

	memcpy(buf, mov, sizeof(mov));
	memcpy(buf + 2, &off, 4);
	v->arch.rip = (uint64_t)(uintptr_t)buf;
	v->arch.gpr[X86_RCX] = val;
	assert_int_equal(x86_handle_apic_write(v, x86_primary.arch.apic_base + off), X86_CONTINUE);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)buf + 6);
}

static void test_mailbox_init_sipi(void **state)
{
	struct vcpu *bsp = setup(), *ap = &x86_primary.vcpus[1];
	uint8_t vec = 0;

	apic_write(bsp, 0xd0, 0x01000000); // LDR: recorded and replayed
	assert_int_equal(bsp->arch.apic_ldr, 0x01000000);
	assert_int_equal(apic_page[0xd0 / 4], 0x01000000);
	apic_write(bsp, 0x310, 1u << 24); // ICR high: APIC ID 1
	apic_write(bsp, 0x300, 0x4500);	  // INIT, assert
	assert_true(x86_mailbox_pending(ap));
	assert_false(x86_mailbox_pending(bsp));
	assert_int_equal(fk[1].kicks, 1);
	assert_int_equal(apic_page[0x300 / 4], 0); // never reaches the real APIC
	apic_write(bsp, 0x300, 0x8500);		   // INIT de-assert: dropped
	apic_write(bsp, 0x300, 0x4699);		   // STARTUP, vector 0x99
	assert_true(x86_mailbox_poll(ap, &vec));
	assert_int_equal(vec, 0x99);
	assert_false(x86_mailbox_pending(ap));
	apic_write(bsp, 0x300, 0x4699); // the second SIPI finds the AP running: ignored
	assert_false(x86_mailbox_pending(ap));
	assert_false(x86_mailbox_poll(ap, &vec));
	apic_write(bsp, 0x300, 0x000c4500); // INIT to all excluding self
	assert_true(x86_mailbox_pending(ap));
	assert_false(x86_mailbox_pending(bsp));
	apic_write(bsp, 0x300, 0x4030); // a fixed IPI is replayed
	assert_int_equal(apic_page[0x300 / 4], 0x4030);
}

// The INIT that never reaches the AP's APIC is done to it by the AP itself
// when it takes the INIT from its mailbox: a running timer, an enabled
// APIC or a pending vector from before would reach the code the SIPI starts.
static void test_mailbox_init_resets_apic(void **state)
{
	struct vcpu *bsp = setup(), *ap = &x86_primary.vcpus[1];
	uint8_t vec = 0;

	apic_page[0x30 / 4] = 0x00050014; // version: LVTs up to thermal (max LVT 5)
	apic_page[0xf0 / 4] = 0x1ff;	  // SVR: enabled
	apic_page[0x80 / 4] = 0x20;	  // TPR
	apic_page[0x320 / 4] = 0x20040;	  // timer: periodic, vector 0x40
	apic_page[0x330 / 4] = 0x41;	  // thermal
	apic_page[0x350 / 4] = 0x700;	  // LINT0: ExtINT
	apic_page[0x380 / 4] = 0x1000;	  // timer initial count
	apic_page[0x3e0 / 4] = 0xb;	  // divide by 1
	apic_page[0x2f0 / 4] = 0x42;	  // CMCI: beyond max LVT, left alone
	apic_write(ap, 0xd0, 0x02000000); // the AP's LDR
	apic_write(bsp, 0x310, 1u << 24);
	apic_write(bsp, 0x300, 0x4500); // INIT
	apic_write(bsp, 0x300, 0x4608); // STARTUP 0x08
	irq_windows = 0;
	assert_true(x86_mailbox_poll(ap, &vec));
	assert_int_equal(apic_page[0xf0 / 4], 0xff); // software-disabled
	assert_int_equal(apic_page[0x80 / 4], 0);
	assert_int_equal(apic_page[0xd0 / 4], 0);
	assert_int_equal(apic_page[0xe0 / 4], 0xffffffff);
	for (unsigned off = 0x320; off <= 0x370; off += 0x10)
		assert_int_equal(apic_page[off / 4], 1u << 16); // masked
	assert_int_equal(apic_page[0x2f0 / 4], 0x42);
	assert_int_equal(apic_page[0x380 / 4], 0);
	assert_int_equal(apic_page[0x3e0 / 4], 0);
	assert_int_equal(ap->arch.apic_ldr, 0);
	assert_int_equal(irq_windows, 0); // nothing pending: no interrupt window

	// A vector pending in the IRR: the host takes it in interrupt windows,
	// a bounded number of them (this fake APIC never clears it).
	apic_page[0x210 / 4] = 1; // vector 0x20
	apic_write(bsp, 0x300, 0x4500);
	apic_write(bsp, 0x300, 0x4608);
	assert_true(x86_mailbox_poll(ap, &vec));
	assert_int_equal(irq_windows, 8);
	assert_int_equal(apic_page[0xf0 / 4], 0xff);
	apic_page[0x210 / 4] = 0;
}

// The I/O fast path leaves every access the policy decides about to the
// full path (a fast access itself does real port I/O: boot-tested).
static void test_io_fast_refuses_policy_ports(void **state)
{
	struct vcpu *v = setup();
	uint64_t rax = 0x06;
	struct x86_io reset = {.port = 0xcf9, .size = 1};
	struct x86_io pm1 = {.port = 0x604, .size = 2};
	struct x86_io pm1_hi = {.port = 0x605, .size = 1};
	struct x86_io kbc = {.port = 0x64, .size = 1};
	struct x86_io str = {.port = 0xcf8, .size = 4, .string = true};

	assert_false(x86_io_fast(v, &reset, &rax));
	assert_false(x86_io_fast(v, &pm1, &rax));
	assert_false(x86_io_fast(v, &pm1_hi, &rax));
	assert_false(x86_io_fast(v, &kbc, &rax));
	assert_false(x86_io_fast(v, &str, &rax));
	assert_int_equal(rax, 0x06);
}

// ---- the guest's NMI blocking (nmi.c) ---------------------------------------
static void test_nmi_blocking_transitions(void **state)
{
	struct x86_nmi_state s = {0};
	struct x86_nmi_plan p;

	p = x86_nmi_plan(&s, true); // nothing held: nothing to do
	assert_false(p.inject || p.intercept_iret || p.step_over_iret || p.want_window);
	x86_nmi_raise(&s);
	p = x86_nmi_plan(&s, true); // injected: blocked until the handler's IRET
	assert_true(p.inject);
	assert_true(p.intercept_iret);
	assert_true(s.blocked);
	assert_false(s.pending);
	x86_nmi_raise(&s); // a second NMI inside the handler: held
	x86_nmi_raise(&s); // and a third merges with it, as in hardware
	p = x86_nmi_plan(&s, true);
	assert_false(p.inject);
	assert_true(p.intercept_iret);
	assert_false(p.step_over_iret);
	assert_true(p.want_window);
	x86_nmi_at_iret(&s, 0x1000); // IRET intercepted, not yet executed
	p = x86_nmi_plan(&s, true);
	assert_false(p.inject);
	assert_false(p.intercept_iret);
	assert_true(p.step_over_iret); // run the IRET alone, then inject
	x86_nmi_progress(&s, 0x1000);  // an exit inside the IRET: still blocked
	assert_true(s.blocked);
	x86_nmi_progress(&s, 0x2000); // past it: the IRET completed
	assert_false(s.blocked);
	p = x86_nmi_plan(&s, false); // the event slot is taken: wait
	assert_false(p.inject);
	assert_true(p.want_window);
	p = x86_nmi_plan(&s, true);
	assert_true(p.inject); // the held NMI, once
	assert_true(p.intercept_iret);
	x86_nmi_at_iret(&s, 0x3000);
	x86_nmi_progress(&s, 0x4000);
	p = x86_nmi_plan(&s, true);
	assert_false(p.inject || p.intercept_iret || p.step_over_iret || p.want_window);
	x86_nmi_at_iret(&s, 0x5000); // an IRET outside an NMI handler changes nothing
	assert_false(s.iret_seen);
	x86_nmi_raise(&s);
	x86_nmi_reset(&s); // INIT/SIPI
	assert_false(s.pending || s.blocked || s.iret_seen);
}

// NMI exits through the policy: a kick is never the guest's, a guest NMI is
// held for injection, kicks that merged into one NMI leave nothing behind.
static void test_nmi_exits_and_kicks(void **state)
{
	struct vcpu *bsp = setup(), *v = &x86_primary.vcpus[1];
	struct x86_exit e;
	const struct svm_exit_fields nmi = {.code = SVM_EXIT_NMI};
	const struct svm_exit_fields iret = {.code = SVM_EXIT_IRET};
	const struct vmx_exit_fields vnmi = {.reason = VMX_EXIT_EXCEPTION,
					     .intr_info = (1u << 31) | (2u << 8) | 2};
	const struct vmx_exit_fields window = {.reason = VMX_EXIT_NMI_WINDOW};

	apic_write(bsp, 0x310, 1u << 24); // two INITs to APIC ID 1: two kicks,
	apic_write(bsp, 0x300, 0x4500);	  // which the CPU may merge into one NMI
	apic_write(bsp, 0x300, 0x4500);
	assert_int_equal(fk[1].kicks, 2);
	svm_decode_exit(&nmi, &e);
	assert_int_equal(e.kind, X86_EXIT_NMI);
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
	assert_false(v->arch.nmi.pending); // the kick is not the guest's
	vmx_decode_exit(&vnmi, &e);
	assert_int_equal(e.kind, X86_EXIT_NMI);
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
	assert_true(v->arch.nmi.pending); // the next NMI is the guest's: not swallowed
	assert_int_equal(fk[1].nmis_delivered, 1);
	struct x86_nmi_plan p = x86_nmi_plan(&v->arch.nmi, true);
	assert_true(p.inject);
	svm_decode_exit(&iret, &e);
	assert_int_equal(e.kind, X86_EXIT_IRET);
	v->arch.rip = 0x1234;
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
	assert_true(v->arch.nmi.iret_seen);
	assert_int_equal(v->arch.nmi.iret_rip, 0x1234);
	assert_int_equal(v->arch.rip, 0x1234); // the IRET runs when the guest resumes
	vmx_decode_exit(&window, &e);
	assert_int_equal(e.kind, X86_EXIT_NMI_WINDOW);
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
}

static void test_mailbox_logical_destination(void **state)
{
	struct vcpu *bsp = setup(), *ap = &x86_primary.vcpus[1];

	apic_write(ap, 0xd0, 0x02000000); // the AP's logical ID: bit 1 (flat model)
	apic_write(bsp, 0x310, 0x02u << 24);
	apic_write(bsp, 0x300, 0x4d00); // INIT, logical destination
	assert_true(x86_mailbox_pending(ap));
	assert_false(x86_mailbox_pending(bsp));
}

static void test_apic_write_unknown_form_gp(void **state)
{
	struct vcpu *v = setup();
	static const uint8_t code[16] = {0x0f, 0x0b};

	v->arch.rip = (uint64_t)(uintptr_t)code;
	x86_handle_apic_write(v, x86_primary.arch.apic_base + 0x80);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)code);
}

static void test_io_intercepts(void **state)
{
	setup();
	assert_true(x86_io_intercepted(0x604));
	assert_true(x86_io_intercepted(0x605));
	assert_true(x86_io_intercepted(0xcf9));
	assert_true(x86_io_intercepted(0x64));
	assert_false(x86_io_intercepted(0x3f8));
	assert_false(x86_io_intercepted(0xcfc));
}

// ---- records ---------------------------------------------------------------------
static void test_vm_records(void **state)
{
	struct vcpu *bsp = setup(), *ap = x86_vcpu_for_apic(1);

	// One core record per CPU, the x86 part embedded in it.
	assert_ptr_equal(ap, &x86_primary.vcpus[1]);
	assert_ptr_equal(x86_vcpu_for_apic(1), ap); // found again, not claimed twice
	assert_ptr_equal(ap->arch.ops, &fops);	    // ... nor initialised twice
	assert_int_equal(ap->hw_id, 1);
	assert_ptr_equal(ap->vm, &x86_primary);
	assert_ptr_equal(vcpu_of_arch(&ap->arch), ap);
	assert_int_equal(ap->arch.apic_dfr, 0xffffffffu); // vcpu_arch_init: flat model
	assert_int_equal(x86_primary.max_vcpus, X86_MAX_CPUS);
	assert_string_equal(x86_primary.slat_name, "NPT");
	assert_int_equal(x86_primary.hidden.base, 0x1000);
	assert_true(vcpu_has_run(bsp));
	assert_false(vcpu_has_run(&x86_primary.vcpus[2]));
	for (uint32_t id = 2; id < X86_MAX_CPUS; id++)
		assert_non_null(x86_vcpu_for_apic(100 + id));
	assert_null(x86_vcpu_for_apic(200)); // every record taken

	// Core's shutdown state: one winner.
	assert_false(vm_is_shutting_down(&x86_primary));
	assert_true(vm_begin_shutdown(&x86_primary));
	assert_false(vm_begin_shutdown(&x86_primary));
	assert_true(vm_is_shutting_down(&x86_primary));
}

static void test_vm_init_refuses_incomplete_ops(void **state)
{
	static const struct x86_vm_ops no_run = {
	    .mm_counts = f_counts, .teardown = f_teardown, .kick = f_kick};
	struct region slat = {.base = 0x1000, .size = 0x1000};
	struct x86_power_ports pw = {0};

	assert_int_equal(x86_vm_init("NPT", &no_run, &slat, 0, 0, &pw), -1);
	assert_int_equal(x86_vm_init("NPT", &fvm, &slat, 0, 0, &pw), 0);
	assert_int_equal(vm_arch_uptime_us(&x86_primary), 0); // no TSC frequency: no uptime
}

// ---- one policy, both vendors ---------------------------------------------------------
// The same architectural event, as each vendor's hardware reports it, goes
// through svm_decode_exit / vmx_decode_exit and the shared x86_handle_exit;
// both must give the same answer, and that answer must be the documented one
// (docs/x86-exits.md).
struct vendor_event {
	struct svm_exit_fields svm;
	struct vmx_exit_fields vmx;
	void (*prepare)(struct vcpu *v); // guest state before the exit (may be NULL)
};

struct outcome {
	enum x86_action action;
	uint64_t rax, rdx, rbx, rip_advance;
	int injected; // vector + 1, 0 = none
	uint64_t exits[EXIT_REASONS];
	uint16_t shutdown_port;
	uint32_t shutdown_value;
	uint8_t shutdown_size;
	uint32_t apic_ldr;
};

static uint8_t event_code[16]; // the guest's instruction at RIP

static struct outcome run_event(const struct vendor_event *ev, bool vmx)
{
	struct vcpu *v = setup();
	struct x86_exit e;
	struct outcome o = {0};

	memset(event_code, 0x90, sizeof(event_code));
	v->arch.rip = (uint64_t)(uintptr_t)event_code;
	fk[0].insn_len = 0; // lengths come from the decoded instruction
	if (ev->prepare)
		ev->prepare(v);
	if (vmx)
		vmx_decode_exit(&ev->vmx, &e);
	else
		svm_decode_exit(&ev->svm, &e);
	o.action = x86_handle_exit(v, &e);
	o.rax = v->arch.gpr[X86_RAX];
	o.rdx = v->arch.gpr[X86_RDX];
	o.rbx = v->arch.gpr[X86_RBX];
	o.rip_advance = v->arch.rip - (uint64_t)(uintptr_t)event_code;
	o.injected = fk[0].injected;
	memcpy(o.exits, v->exits, sizeof(o.exits));
	o.shutdown_port = v->arch.shutdown.port;
	o.shutdown_value = v->arch.shutdown.value;
	o.shutdown_size = v->arch.shutdown.size;
	o.apic_ldr = v->arch.apic_ldr;
	return o;
}

// Runs `ev` through both vendors and checks that they agree.
static struct outcome both_vendors(const struct vendor_event *ev)
{
	struct outcome s = run_event(ev, false), x = run_event(ev, true);

	assert_int_equal(s.action, x.action);
	assert_int_equal(s.rax, x.rax);
	assert_int_equal(s.rdx, x.rdx);
	assert_int_equal(s.rbx, x.rbx);
	assert_int_equal(s.rip_advance, x.rip_advance);
	assert_int_equal(s.injected, x.injected);
	assert_memory_equal(s.exits, x.exits, sizeof(s.exits));
	assert_int_equal(s.shutdown_port, x.shutdown_port);
	assert_int_equal(s.shutdown_value, x.shutdown_value);
	assert_int_equal(s.shutdown_size, x.shutdown_size);
	assert_int_equal(s.apic_ldr, x.apic_ldr);
	return s;
}

static void only_exit(const struct outcome *o, enum exit_reason r)
{
	for (unsigned i = 0; i < EXIT_REASONS; i++)
		assert_int_equal(o->exits[i], i == (unsigned)r ? 1 : 0);
}

static void put_code(const uint8_t *code, size_t n)
{
	memcpy(event_code, code, n);
}

static void prep_vmcall(struct vcpu *v)
{
	// VMMCALL (0F 01 D9) and VMCALL (0F 01 C1) are both 3 bytes.
	static const uint8_t vmcall[] = {0x0f, 0x01, 0xc1};
	put_code(vmcall, sizeof(vmcall));
	v->arch.gpr[X86_RAX] = 0x1234;
	for (unsigned i = X86_RCX; i <= X86_R15; i++)
		v->arch.gpr[i] = 0x100 + i;
}

static void prep_vmcall_cpl3(struct vcpu *v)
{
	prep_vmcall(v);
	F(v)->ss_attr = 0x93 | (3u << 5); // SS.DPL 3
}

static void test_vendors_hypercall(void **state)
{
	const struct vendor_event ev = {.svm = {.code = SVM_EXIT_VMMCALL},
					.vmx = {.reason = VMX_EXIT_VMCALL},
					.prepare = prep_vmcall};
	hv_calls = 0;
	struct outcome o = both_vendors(&ev);

	assert_int_equal(hv_calls, 2); // once per vendor
	assert_int_equal(hv_seen.fn, 0x1234);
	assert_int_equal(hv_seen.a[0], 0x100 + X86_RBX);
	assert_int_equal(hv_seen.a[1], 0x100 + X86_RCX);
	assert_int_equal(hv_seen.a[2], 0x100 + X86_RDX);
	assert_int_equal(hv_seen.a[3], 0x100 + X86_RSI);
	assert_int_equal(hv_seen.a[4], 0x100 + X86_RDI);
	assert_int_equal(hv_seen.a[5], 0x100 + X86_R8);
	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.rax, 0x77); // status and results written back
	assert_int_equal(o.rbx, 0xa0);
	assert_int_equal(o.rdx, 0xa2);
	assert_int_equal(o.rip_advance, 3);
	assert_int_equal(o.injected, 0);
	only_exit(&o, EXIT_HYPERCALL);
}

// A hypercall from user mode: #UD as on a CPU without a hypervisor; the
// layer is not called and nothing changes.
static void test_vendors_hypercall_cpl3(void **state)
{
	const struct vendor_event ev = {.svm = {.code = SVM_EXIT_VMMCALL},
					.vmx = {.reason = VMX_EXIT_VMCALL},
					.prepare = prep_vmcall_cpl3};
	hv_calls = 0;
	struct outcome o = both_vendors(&ev);

	assert_int_equal(hv_calls, 0);
	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.rax, 0x1234);
	assert_int_equal(o.rbx, 0x100 + X86_RBX);
	assert_int_equal(o.rip_advance, 0);
	assert_int_equal(o.injected, X86_EXC_UD + 1);
	only_exit(&o, EXIT_HYPERCALL);
}

static void prep_cpuid(struct vcpu *v)
{
	static const uint8_t insn[] = {0x0f, 0xa2};
	put_code(insn, sizeof(insn));
	v->arch.gpr[X86_RAX] = 0x40000000;
	v->arch.gpr[X86_RCX] = 0;
}

static void test_vendors_cpuid(void **state)
{
	const struct vendor_event ev = {.svm = {.code = SVM_EXIT_CPUID},
					.vmx = {.reason = VMX_EXIT_CPUID},
					.prepare = prep_cpuid};
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.rax, 0x40000001);
	assert_int_equal(o.rbx, 0x74616c53); // "Slat"
	assert_int_equal(o.rip_advance, 2);
	only_exit(&o, EXIT_CPUID);
}

static void prep_rdmsr_vm_cr(struct vcpu *v)
{
	static const uint8_t insn[] = {0x0f, 0x32};
	put_code(insn, sizeof(insn));
	v->arch.gpr[X86_RCX] = MSR_VM_CR;
	v->arch.gpr[X86_RAX] = v->arch.gpr[X86_RDX] = 0x5555;
}

static void test_vendors_rdmsr_hidden(void **state)
{
	const struct vendor_event ev = {.svm = {.code = SVM_EXIT_MSR, .info1 = 0},
					.vmx = {.reason = VMX_EXIT_RDMSR},
					.prepare = prep_rdmsr_vm_cr};
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.rax, VM_CR_SVMDIS | VM_CR_LOCK);
	assert_int_equal(o.rdx, 0);
	assert_int_equal(o.rip_advance, 2);
	only_exit(&o, EXIT_SYSREG);
}

static void prep_out_reset(struct vcpu *v)
{
	static const uint8_t insn[] = {0xee}; // out dx, al
	put_code(insn, sizeof(insn));
	v->arch.gpr[X86_RAX] = 0xab06; // AL: hard reset
	v->arch.gpr[X86_RDX] = 0xcf9;
}

static void test_vendors_reset_port(void **state)
{
	// OUT of one byte to 0xCF9: SVM IOIO (port in 31:16, SZ8 bit 4, the next
	// RIP in EXITINFO2); VMX I/O qualification (port in 31:16, size - 1 in 2:0).
	const struct vendor_event ev = {
	    .svm = {.code = SVM_EXIT_IOIO, .info1 = (0xcf9u << 16) | 0x10},
	    .vmx = {.reason = VMX_EXIT_IO, .qual = 0xcf9u << 16},
	    .prepare = prep_out_reset};
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_RESET);
	assert_int_equal(o.shutdown_port, 0xcf9);
	assert_int_equal(o.shutdown_value, 0x06); // one byte: AL only
	assert_int_equal(o.shutdown_size, 1);
	assert_int_equal(o.rip_advance, 1);
	only_exit(&o, EXIT_IO);
}

static void prep_apic_ldr_write(struct vcpu *v)
{
	static const uint8_t mov[] = {0x89, 0x88, 0xd0, 0x00, 0x00, 0x00}; // mov [rax+0xd0], ecx
	put_code(mov, sizeof(mov));
	v->arch.gpr[X86_RCX] = 0x04000000;
}

static void test_vendors_apic_write(void **state)
{
	// A write to the APIC page (mapped read-only): NPF error code bit 1 /
	// EPT violation qualification bit 1; the GPA is only known at run time,
	// so the events are completed below.
	struct vendor_event ev = {.svm = {.code = SVM_EXIT_NPF, .info1 = 1 | 2},
				  .vmx = {.reason = VMX_EXIT_EPT_VIOLATION, .qual = 2 | 8},
				  .prepare = prep_apic_ldr_write};

	setup(); // allocates the APIC page
	ev.svm.info2 = ev.vmx.gpa = x86_primary.arch.apic_base + 0xd0;
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.apic_ldr, 0x04000000);
	assert_int_equal(o.rip_advance, 6);
	assert_int_equal(o.injected, 0);
	only_exit(&o, EXIT_MMIO);
}

static void test_vendors_slat_violation(void **state)
{
	// A read of Slat's own region (setup(): 0x1000-0x1fff).
	const struct vendor_event ev = {
	    .svm = {.code = SVM_EXIT_NPF, .info1 = 0, .info2 = 0x1008},
	    .vmx = {.reason = VMX_EXIT_EPT_VIOLATION, .qual = 1, .gpa = 0x1008}};
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.injected, X86_EXC_GP + 1);
	assert_int_equal(o.rip_advance, 0);
	only_exit(&o, EXIT_SLAT_FAULT);
	// A frame core says is the primary's (another CPU's split in progress):
	// the access runs again, nothing injected, on both vendors.
	hv_retry_answer = true;
	hv_retry_calls = 0;
	o = both_vendors(&ev);
	hv_retry_answer = false;
	assert_int_equal(hv_retry_calls, 2);
	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.injected, 0);
	assert_int_equal(o.rip_advance, 0);
}

static void test_vendors_triple_fault(void **state)
{
	const struct vendor_event ev = {.svm = {.code = SVM_EXIT_SHUTDOWN},
					.vmx = {.reason = VMX_EXIT_TRIPLE_FAULT}};
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_RESET);
	assert_int_equal(o.shutdown_port, 0); // the platform's reset, not a guest port write
	only_exit(&o, EXIT_OTHER);
}

// Single-stepping: an emulated instruction that completes gives the #DB
// trap decision to the back end; one that faults does not.
static void test_single_step_after_emulation(void **state)
{
	struct vcpu *v = setup();
	// 16 bytes each: the decoder fetches up to 15.
	static const uint8_t cpuid_insn[16] = {0x0f, 0xa2}, rdmsr_insn[16] = {0x0f, 0x32};
	struct x86_exit e = {.kind = X86_EXIT_CPUID, .vendor = "test"};

	v->arch.rip = (uint64_t)(uintptr_t)cpuid_insn;
	fk[0].rflags = 1u << 8; // TF
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
	assert_int_equal(fk[0].completed, 2);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)cpuid_insn + 2);

	fk[0].completed = 0, fk[0].rflags = 0; // no TF: completed, no trap
	v->arch.rip = (uint64_t)(uintptr_t)cpuid_insn;
	x86_handle_exit(v, &e);
	assert_int_equal(fk[0].completed, 1);

	fk[0].completed = 0, fk[0].rflags = 1u << 8; // a faulting RDMSR: no trap
	v->arch.rip = (uint64_t)(uintptr_t)rdmsr_insn;
	v->arch.gpr[X86_RCX] = 0x10;
	e.kind = X86_EXIT_RDMSR;
	x86_handle_exit(v, &e);
	assert_int_equal(fk[0].completed, 0);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_true(x86_single_step_due(0x102));
	assert_false(x86_single_step_due(0x2));
}

// An invalid-state exit at MOV CR4, RAX with a reserved bit (QEMU's SVM
// reports a refused CR load so): #GP(0), once; anything else: power-off.
static void test_bad_state_refused_cr_load(void **state)
{
	struct vcpu *v = setup();
	static const uint8_t mov_cr4_rax[16] = {0x0f, 0x22, 0xe0}, nop[16] = {0x90};
	struct svm_exit_fields f = {.code = 0xffffffffu};
	struct x86_exit e;

	svm_decode_exit(&f, &e);
	assert_int_equal(e.kind, X86_EXIT_BAD_STATE); // the 32-bit -1 too
	fk[0].cr4 = 1u << 5;			      // PAE, as in long mode
	v->arch.rip = (uint64_t)(uintptr_t)mov_cr4_rax;
	v->arch.gpr[X86_RAX] = (1u << 5) | (1ull << 63);
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)mov_cr4_rax);
	// The same refused load again (a loop of retries): #GP each time...
	fk[0].injected = 0;
	assert_int_equal(x86_handle_exit(v, &e), X86_CONTINUE);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	// ... until the streak says the state itself is refused.
	v->arch.bad_state_streak = X86_BAD_STATE_STREAK;
	assert_int_equal(x86_handle_exit(v, &e), X86_POWER_OFF);
	v->arch.bad_state_streak = 0;
	fk[0].cr4 = 0; // the current state is invalid (PAE clear in long mode)
	assert_int_equal(x86_handle_exit(v, &e), X86_POWER_OFF);
	fk[0].cr4 = 1u << 5;
	v->arch.gpr[X86_RAX] = 1u << 5; // a legal value: not the cause
	assert_int_equal(x86_handle_exit(v, &e), X86_POWER_OFF);
	v->arch.rip = (uint64_t)(uintptr_t)nop;
	assert_int_equal(x86_handle_exit(v, &e), X86_POWER_OFF);
}

static uint64_t cr0_loaded;
static void record_cr0(struct vcpu *v, uint64_t val)
{
	cr0_loaded = val;
}

// The SVM CR0 write intercept: MOV CR0 / CLTS / LMSW decoded at RIP, the
// value checked (#GP(0), nothing loaded), else loaded and RIP advanced.
static void test_cr0_write(void **state)
{
	struct vcpu *v = setup();
	static const uint8_t mov_cr0_rcx[16] = {0x0f, 0x22, 0xc1}, clts[16] = {0x0f, 0x06},
			     lmsw_ax[16] = {0x0f, 0x01, 0xf0}, mov_cr4[16] = {0x0f, 0x22, 0xe1};

	// PG stays clear in the fake (its walker then reads code by pointer).
	fk[0].cr0 = 0x11, fk[0].cr4 = 1u << 5;
	v->arch.rip = (uint64_t)(uintptr_t)mov_cr0_rcx;
	v->arch.gpr[X86_RCX] = 0xe0000011; // CD|NW|PG|ET|PE: legal
	cr0_loaded = 0;
	assert_int_equal(x86_handle_cr0_write(v, record_cr0), X86_CONTINUE);
	assert_int_equal(cr0_loaded, 0xe0000011);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)mov_cr0_rcx + 3);

	v->arch.rip = (uint64_t)(uintptr_t)mov_cr0_rcx;
	v->arch.gpr[X86_RCX] = 0xa0000011; // NW without CD
	cr0_loaded = 0;
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(fk[0].injected, X86_EXC_GP + 1);
	assert_int_equal(cr0_loaded, 0);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)mov_cr0_rcx);

	fk[0].cr0 |= 8; // TS
	v->arch.rip = (uint64_t)(uintptr_t)clts;
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(cr0_loaded, 0x11);

	v->arch.rip = (uint64_t)(uintptr_t)lmsw_ax; // LMSW cannot clear PE
	v->arch.gpr[X86_RAX] = 0x2;
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(cr0_loaded, 0x13);

	fk[0].injected = 0;
	v->arch.rip = (uint64_t)(uintptr_t)mov_cr4; // not a CR0 write: #UD
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(fk[0].injected, X86_EXC_UD + 1);
}

// LMSW's memory forms (SVM without decode assists: Slat reads the operand):
// the 16-bit source at the operand's linear address, segment base included,
// and #PF with CR2 when it cannot be read.
static void test_cr0_write_lmsw_memory(void **state)
{
	struct vcpu *v = setup();
	static uint16_t src[4] = {0xfff8, 0x0006, 0x000a};
	static const uint8_t lmsw_rbx[16] = {0x0f, 0x01, 0x33},
			     lmsw_fs_r9[16] = {0x64, 0x41, 0x0f, 0x01, 0x71, 0x02},
			     lmsw_r10_r11[16] = {0x66, 0x43, 0x0f, 0x01, 0x34, 0x5a};

	fk[0].cr0 = 0x11;
	v->arch.rip = (uint64_t)(uintptr_t)lmsw_rbx; // lmsw [rbx]: sets TS only
	v->arch.gpr[X86_RBX] = (uint64_t)(uintptr_t)&src[0];
	cr0_loaded = 0;
	assert_int_equal(x86_handle_cr0_write(v, record_cr0), X86_CONTINUE);
	assert_int_equal(cr0_loaded, 0x19);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)lmsw_rbx + 3);

	v->arch.rip = (uint64_t)(uintptr_t)lmsw_fs_r9; // lmsw fs:[r9+2]
	fk[0].fs_base = 0x1000;
	v->arch.gpr[X86_R9] = (uint64_t)(uintptr_t)&src[0] - 0x1000;
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(cr0_loaded, 0x17);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)lmsw_fs_r9 + 6);

	v->arch.rip = (uint64_t)(uintptr_t)lmsw_r10_r11; // o16 lmsw [r10+r11*2]
	v->arch.gpr[X86_R10] = (uint64_t)(uintptr_t)&src[0];
	v->arch.gpr[X86_R11] = 2;
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(cr0_loaded, 0x1b);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)lmsw_r10_r11 + 6);

	fk[0].injected = 0, cr0_loaded = 0;
	v->arch.rip = (uint64_t)(uintptr_t)lmsw_rbx; // in Slat's region: #PF, CR2
	v->arch.gpr[X86_RBX] = 0x1800;
	x86_handle_cr0_write(v, record_cr0);
	assert_int_equal(fk[0].injected, X86_EXC_PF + 1);
	assert_int_equal(fk[0].cr2, 0x1800);
	assert_int_equal(cr0_loaded, 0);
	assert_int_equal(v->arch.rip, (uint64_t)(uintptr_t)lmsw_rbx);
}

// 32-bit code is fetched at a 32-bit linear address: below 4 GiB.
static uint8_t *low_code;
static bool decode_low(struct vcpu *v, const uint8_t *code, size_t n, struct x86_insn *in)
{
	memset(low_code, 0x90, 32);
	memcpy(low_code, code, n);
	v->arch.rip = (uint64_t)(uintptr_t)low_code;
	return x86_decode(v, in);
}
#define DECODE32(v, in, ...)                                                                       \
	({                                                                                         \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		decode_low(v, c_, sizeof(c_), in);                                                 \
	})

// 16-bit addressing (67 in 32-bit code): the ModRM bases, SS for BP.
static void test_decode_16bit_addressing(void **state)
{
	struct vcpu *v = setup();
	struct x86_insn in;

	low_code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
			-1, 0);
	assert_true(low_code != MAP_FAILED);
	fk[0].efer = 0;
	fk[0].cs_attr = 0xc9b; // 32-bit code
	v->arch.gpr[X86_RBX] = 0x10000 + 0x100, v->arch.gpr[X86_RSI] = 0x20;
	v->arch.gpr[X86_RBP] = 0x300, v->arch.gpr[X86_RDI] = 0x4;
	assert_true(DECODE32(v, &in, 0x67, 0x0f, 0x01, 0x30)); // lmsw [bx+si]
	assert_int_equal(in.ea, 0x120);
	assert_int_equal(in.seg, X86_DS);
	assert_true(DECODE32(v, &in, 0x67, 0x0f, 0x01, 0x73, 0xfe)); // lmsw [bp+di-2]
	assert_int_equal(in.ea, 0x302);
	assert_int_equal(in.seg, X86_SS);
	assert_int_equal(in.len, 5);
	assert_true(DECODE32(v, &in, 0x67, 0x26, 0x0f, 0x01, 0x36, 0x34, 0x12)); // es:[0x1234]
	assert_int_equal(in.ea, 0x1234);
	assert_int_equal(in.seg, X86_ES);
	assert_int_equal(in.len, 7);
	assert_true(DECODE32(v, &in, 0x67, 0x0f, 0x01, 0xb6, 0x00, 0xff)); // lmsw [bp-0x100]
	assert_int_equal(in.ea, 0x200);
	assert_int_equal(in.seg, X86_SS);
	assert_true(DECODE32(v, &in, 0x0f, 0x01, 0x74, 0x24, 0x08)); // lmsw [esp+8]: SS
	assert_int_equal(in.seg, X86_SS);
	munmap(low_code, 4096);
}

static void test_vendors_virt_insn(void **state)
{
	// VMRUN / VMLAUNCH: SVM and VMX are not offered to the guest.
	const struct vendor_event ev = {.svm = {.code = SVM_EXIT_VMRUN},
					.vmx = {.reason = VMX_EXIT_VMCLEAR + 1}};
	struct outcome o = both_vendors(&ev);

	assert_int_equal(o.action, X86_CONTINUE);
	assert_int_equal(o.injected, X86_EXC_UD + 1);
	assert_int_equal(o.rip_advance, 0);
	only_exit(&o, EXIT_OTHER);
}

// ---- L1's writes to its shadowed tables (l1_write.c) ---------------------------
#define L1W(v, fl, ...)                                                                            \
	({                                                                                         \
		static const uint8_t c_[] = {__VA_ARGS__};                                         \
		static uint8_t b_[32];                                                             \
		memset(b_, 0x90, sizeof(b_));                                                      \
		memcpy(b_, c_, sizeof(c_));                                                        \
		(v)->arch.rip = (uint64_t)(uintptr_t)b_;                                           \
		x86_l1_write_emulate(v, NULL, 0x5000, fl)                                          \
		    ? (v)->arch.rip - (uint64_t)(uintptr_t)b_                                      \
		    : 0;                                                                           \
	})

// MOV, XCHG and CMPXCHG change memory, registers and flags as the CPU would;
// anything else is refused with nothing changed.
static void test_l1_write_emulation(void **state)
{
	struct vcpu *v = setup();
	uint64_t fl = 0x2;

	memset(&l1w, 0, sizeof(l1w));
	v->arch.gpr[X86_RDX] = 0x7010;
	v->arch.gpr[X86_RSI] = 0x1111222233334444ull;
	assert_int_equal(L1W(v, &fl, 0x48, 0x89, 0x32), 3); // mov [rdx], rsi
	assert_int_equal(l1w.gpa, 0x5010);		    // the page's, at the operand's offset
	assert_int_equal(l1w.bytes, 8);
	assert_int_equal(l1w.word, 0x1111222233334444ull);
	assert_false(l1w.compared);

	// xchg [rdx], esi: the old low half comes back, zero-extended.
	l1w.word = 0xaaaabbbbccccddddull;
	assert_int_equal(L1W(v, &fl, 0x87, 0x32), 2);
	assert_int_equal(l1w.word, 0xaaaabbbb33334444ull);
	assert_int_equal(v->arch.gpr[X86_RSI], 0xccccddddull);

	// lock cmpxchg [rdx], rsi, equal: stored, ZF set, RAX kept.
	v->arch.gpr[X86_RAX] = l1w.word;
	v->arch.gpr[X86_RSI] = 7;
	assert_int_equal(L1W(v, &fl, 0xf0, 0x48, 0x0f, 0xb1, 0x32), 5);
	assert_true(l1w.compared);
	assert_int_equal(l1w.word, 7);
	assert_true(fl & (1u << 6));
	// Not equal: nothing stored, ZF clear, RAX gets what memory holds.
	// The flags are CMP's of RAX with memory: 6 - 7 borrows (CF, SF).
	v->arch.gpr[X86_RAX] = 6;
	v->arch.gpr[X86_RSI] = 9;
	assert_int_equal(L1W(v, &fl, 0xf0, 0x48, 0x0f, 0xb1, 0x32), 5);
	assert_int_equal(l1w.word, 7);
	assert_int_equal(fl & 0x8d5, 0x1 | 0x4 | 0x10 | 0x80); // CF PF AF SF
	assert_int_equal(v->arch.gpr[X86_RAX], 7);

	// mov word [rdx], 0x1234 (C7 with 66): two bytes.
	assert_int_equal(L1W(v, &fl, 0x66, 0xc7, 0x02, 0x34, 0x12), 5);
	assert_int_equal(l1w.bytes, 2);
	assert_int_equal(l1w.word, 0x1234);

	// Refused: a byte store, a misaligned one, a register operand, ADD.
	unsigned calls = l1w.calls;
	uint64_t rip_fl = fl;
	assert_int_equal(L1W(v, &fl, 0x88, 0x32), 0); // mov byte [rdx], dh
	v->arch.gpr[X86_RDX] = 0x7011;
	assert_int_equal(L1W(v, &fl, 0x89, 0x32), 0);	    // mov [rdx], esi, misaligned
	assert_int_equal(L1W(v, &fl, 0x48, 0x89, 0xf2), 0); // mov rdx, rsi
	v->arch.gpr[X86_RDX] = 0x7010;
	assert_int_equal(L1W(v, &fl, 0x48, 0x01, 0x32), 0); // add [rdx], rsi
	assert_int_equal(l1w.calls, calls);
	assert_int_equal(fl, rip_fl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_lengths_64),
	    cmocka_unit_test(test_l1_write_emulation),
	    cmocka_unit_test(test_decode_mov_operands),
	    cmocka_unit_test(test_decode_effective_address),
	    cmocka_unit_test(test_decode_32bit_mode),
	    cmocka_unit_test(test_decode_through_guest_paging),
	    cmocka_unit_test(test_cpuid_policy),
	    cmocka_unit_test(test_msr_policy),
	    cmocka_unit_test(test_xsetbv_checks),
	    cmocka_unit_test(test_mailbox_init_sipi),
	    cmocka_unit_test(test_mailbox_init_resets_apic),
	    cmocka_unit_test(test_io_fast_refuses_policy_ports),
	    cmocka_unit_test(test_mailbox_logical_destination),
	    cmocka_unit_test(test_nmi_blocking_transitions),
	    cmocka_unit_test(test_nmi_exits_and_kicks),
	    cmocka_unit_test(test_apic_write_unknown_form_gp),
	    cmocka_unit_test(test_io_intercepts),
	    cmocka_unit_test(test_vm_records),
	    cmocka_unit_test(test_vm_init_refuses_incomplete_ops),
	    cmocka_unit_test(test_vendors_hypercall),
	    cmocka_unit_test(test_vendors_hypercall_cpl3),
	    cmocka_unit_test(test_vendors_cpuid),
	    cmocka_unit_test(test_vendors_rdmsr_hidden),
	    cmocka_unit_test(test_vendors_reset_port),
	    cmocka_unit_test(test_vendors_apic_write),
	    cmocka_unit_test(test_vendors_slat_violation),
	    cmocka_unit_test(test_vendors_triple_fault),
	    cmocka_unit_test(test_vendors_virt_insn),
	    cmocka_unit_test(test_single_step_after_emulation),
	    cmocka_unit_test(test_bad_state_refused_cr_load),
	    cmocka_unit_test(test_cr0_write),
	    cmocka_unit_test(test_cr0_write_lmsw_memory),
	    cmocka_unit_test(test_decode_16bit_addressing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void)
{
	return 0; // the x86 layer is tested on x86-64 hosts only
}
#endif
