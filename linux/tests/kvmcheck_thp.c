// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64 and x86), the huge-page section: a region backed by
// the VMM's transparent huge pages is mapped with 2 MiB leaves (Slat's per-VM
// statistics), and after the VMM unmaps one page of it (MADV_DONTNEED, which
// splits the huge page in the VMM) the guest still reads every page right.
// The checks are shared; each architecture has its guest (two passes over
// the region, each reported by an 8-byte MMIO write) and its vCPU set-up.

#ifdef __aarch64__
#include "kvmcheck_arm64.h"
#else
#include "kvmcheck_x86.h"
#define PAGE 4096ul
#endif

#define THP_BLOCK (2ul << 20)
#define THP_GPA	  0x400000ull // 2 MiB aligned, two blocks
#define THP_SIZE  (2 * THP_BLOCK)
#define THP_PAGES (THP_SIZE / PAGE)
#define THP_DROP  (THP_BLOCK + 5 * PAGE) // the page the VMM unmaps: block 1

// A VM of this section: its guest is set up and waits before its first pass.
struct thp_vm {
	int vm, vcpu;
	struct kvm_run *run;
	uint8_t *code; // slot 0's memory
	size_t code_sz;
	unsigned code_leaves; // 4 KiB leaves slot 0 takes during the first pass
	uint32_t end_exit;    // the exit after the second pass
};

#ifdef __aarch64__
#define ADD_XI_LSL12(rd, rn, imm) (0x91400000u | (imm) << 10 | (rn) << 5 | (rd))
#define SUB_XR(rd, rn, rm)	  (0xCB000000u | (rm) << 16 | (rn) << 5 | (rd))
#define CBZ_FWD(rt, n)		  (0xB4000000u | (n) << 5 | (rt))

// Pass 1 writes each page's guest address into its first word and reports
// (MMIO write at MMIO_GPA); pass 2 counts the pages whose word differs and
// reports the count (MMIO_GPA + 8); then SYSTEM_OFF.
static void write_thp_guest(uint8_t *mem)
{
	struct code c = {(uint32_t *)mem, 0};
	unsigned loop;

	mov64(&c, 3, MMIO_GPA);
	mov64(&c, 1, THP_GPA);
	mov64(&c, 5, THP_PAGES);
	loop = c.n;
	emit(&c, STR_X(1, 1, 0));
	emit(&c, ADD_XI_LSL12(1, 1, 1));
	emit(&c, SUBS_XI(5, 5, 1));
	emit(&c, bne_back(&c, loop));
	emit(&c, STR_X(5, 3, 0));
	mov64(&c, 1, THP_GPA);
	mov64(&c, 5, THP_PAGES);
	mov64(&c, 6, 0);
	loop = c.n;
	emit(&c, LDR_X(2, 1, 0));
	emit(&c, SUB_XR(2, 2, 1));
	emit(&c, CBZ_FWD(2, 2));
	emit(&c, ADD_XI(6, 6, 1));
	emit(&c, ADD_XI_LSL12(1, 1, 1));
	emit(&c, SUBS_XI(5, 5, 1));
	emit(&c, bne_back(&c, loop));
	emit(&c, STR_X(6, 3, 8));
	call(&c, FN_SYSTEM_OFF, 0, 0, 0);
}

// Slot 0 holds the code (one 4 KiB leaf, at the first pass's first fetch).
static bool thp_vm_make(int kvm, struct thp_vm *t, uint8_t *thp)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);

	t->code_sz = SLOT_SZ;
	t->code_leaves = 1;
	t->end_exit = KVM_EXIT_SYSTEM_EVENT;
	t->vm = ioctl(kvm, KVM_CREATE_VM, 0);
	t->code = mmap(NULL, SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->vm < 0 || t->code == MAP_FAILED)
		return false;
	write_thp_guest(t->code);
	region(t->vm, 0, 0, 0, SLOT_SZ, t->code);
	expect("region over the VMM's huge pages", region(t->vm, 1, 0, THP_GPA, THP_SIZE, thp), 0);
	t->vcpu = psci_vcpu(t->vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &t->run, sz);
	return t->vcpu >= 0;
}
#else
// Long mode over write_tables' map, with the region's two blocks mapped by
// the guest's own 2 MiB pages. An MMIO write at MMIO_GPA + 16 first (slot
// 0's pages all faulted in: code, tables); pass 1 writes each page's guest
// address into its first word and reports (MMIO write at MMIO_GPA); pass 2
// counts the pages whose word differs and reports the count (MMIO_GPA + 8);
// then HLT.
static const uint8_t thp_guest[] = {
    0x31, 0xc9,					    // xor ecx, ecx
    0x48, 0x89, 0x0c, 0x25, 0x10, 0x00, 0x00, 0x40, // mov [MMIO_GPA + 16], rcx
    0xbf, 0x00, 0x00, 0x40, 0x00,		    // mov edi, THP_GPA
    0xb9, 0x00, 0x04, 0x00, 0x00,		    // mov ecx, THP_PAGES
    0x48, 0x89, 0x3f,				    // 1: mov [rdi], rdi
    0x48, 0x81, 0xc7, 0x00, 0x10, 0x00, 0x00,	    // add rdi, 4096
    0xff, 0xc9,					    // dec ecx
    0x75, 0xf2,					    // jnz 1b
    0x48, 0x89, 0x0c, 0x25, 0x00, 0x00, 0x00, 0x40, // mov [MMIO_GPA], rcx
    0xbf, 0x00, 0x00, 0x40, 0x00,		    // mov edi, THP_GPA
    0xb9, 0x00, 0x04, 0x00, 0x00,		    // mov ecx, THP_PAGES
    0x31, 0xd2,					    // xor edx, edx
    0x48, 0x8b, 0x07,				    // 2: mov rax, [rdi]
    0x48, 0x29, 0xf8,				    // sub rax, rdi
    0x74, 0x02,					    // jz 3f
    0xff, 0xc2,					    // inc edx
    0x48, 0x81, 0xc7, 0x00, 0x10, 0x00, 0x00,	    // 3: add rdi, 4096
    0xff, 0xc9,					    // dec ecx
    0x75, 0xeb,					    // jnz 2b
    0x48, 0x89, 0x14, 0x25, 0x08, 0x00, 0x00, 0x40, // mov [MMIO_GPA + 8], rdx
    0xf4,					    // hlt
};
_Static_assert(THP_GPA == 0x400000 && THP_PAGES == 0x400 && MMIO_GPA == 0x40000000,
	       "thp_guest's immediates");

static struct kvm_sregs *thp_sregs;
static struct kvm_cpuid2 *thp_cpuid;

// Slot 0 holds the code and tables; the guest runs to its first MMIO write,
// so that slot 0's leaves are all made before the statistics are first read.
static bool thp_vm_make(int kvm, struct thp_vm *t, uint8_t *thp)
{
	struct kvm_regs r = {.rip = CODE, .rflags = 0x2, .rsp = STACK_TOP};
	uint64_t v = 1;

	t->code_sz = MEM_SZ;
	t->code_leaves = 0;
	t->end_exit = KVM_EXIT_HLT;
	t->vm = ioctl(kvm, KVM_CREATE_VM, 0);
	t->code = mmap(NULL, MEM_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->vm < 0 || t->code == MAP_FAILED)
		return false;
	write_tables(t->code);
	uint64_t *pd0 = (uint64_t *)(t->code + PD0);
	pd0[THP_GPA >> 21] = THP_GPA | 0x83; // present, writable, large
	pd0[(THP_GPA >> 21) + 1] = (THP_GPA + THP_BLOCK) | 0x83;
	memcpy(t->code + CODE, thp_guest, sizeof(thp_guest));
	region(t->vm, 0, 0, 0, MEM_SZ, t->code);
	expect("region over the VMM's huge pages", region(t->vm, 1, 0, THP_GPA, THP_SIZE, thp), 0);
	t->run = new_vcpu(kvm, t->vm, 0, &t->vcpu);
	if (!t->run || ioctl(t->vcpu, KVM_SET_CPUID2, thp_cpuid) ||
	    ioctl(t->vcpu, KVM_SET_SREGS, thp_sregs) || ioctl(t->vcpu, KVM_SET_REGS, &r))
		return false;
	alarm(RUN_LIMIT_S);
	long rc = ioctl(t->vcpu, KVM_RUN, 0);
	alarm(0);
	return rc == 0 && mmio_write_exit(t->run, MMIO_GPA + 16, &v) && v == 0;
}
#endif

enum { L4K, L2M, ZAPPED, NSTAT };
static const char *const thp_stats[] = {"slat_leaves_mapped_4k", "slat_leaves_mapped_2m",
					"slat_leaves_zapped", NULL};

// The VMM's pages that do not hold their guest address (pass 1's word).
static unsigned vmm_mismatches(const uint8_t *thp)
{
	unsigned bad = 0;

	for (uint64_t off = 0; off < THP_SIZE; off += PAGE)
		bad += *(const volatile uint64_t *)(thp + off) != THP_GPA + off;
	return bad;
}

// KVM_RUN to the guest's next exit (ended by SIGALRM if it hangs).
static long thp_run(const struct thp_vm *t)
{
	alarm(30);
	long rc = ioctl(t->vcpu, KVM_RUN, 0);
	alarm(0);
	return rc;
}

static void thp_checks(const struct thp_vm *t, uint8_t *thp)
{
	uint64_t s0[NSTAT], s1[NSTAT], s2[NSTAT], v = 0;

	stat_values(t->vm, thp_stats, s0);
	expect("KVM_RUN to the guest's first pass", thp_run(t), 0);
	check("the guest wrote every page of the huge-page region",
	      mmio_write_exit(t->run, MMIO_GPA, &v) && v == 0, t->run->exit_reason, KVM_EXIT_MMIO);
	check("the VMM reads the guest's word in every page", vmm_mismatches(thp) == 0,
	      vmm_mismatches(thp), 0);
	stat_values(t->vm, thp_stats, s1);
	if (on_slat()) {
		check("two 2 MiB leaves map the region's two huge pages", s1[L2M] - s0[L2M] == 2,
		      s1[L2M] - s0[L2M], 2);
		// slat.ko gave each block whole at its first fault: no 4 KiB
		// leaf came first (arm64: one maps the code page).
		check("... at the blocks' first faults: no 4 KiB leaf but the code's",
		      s1[L4K] - s0[L4K] == t->code_leaves, s1[L4K] - s0[L4K], t->code_leaves);
	}
	// One page of block 1 goes: the VMM's huge page is split, its other
	// pages stay; Slat gives the block's frames back and zaps its leaf.
	expect("MADV_DONTNEED of one page", madvise(thp + THP_DROP, PAGE, MADV_DONTNEED), 0);
	expect("KVM_RUN to the guest's second pass", thp_run(t), 0);
	check("the guest reads every page right but the unmapped one (now zero)",
	      mmio_write_exit(t->run, MMIO_GPA + 8, &v) && v == 1, v, 1);
	check("the VMM reads the same", vmm_mismatches(thp) == 1 && !*(uint64_t *)(thp + THP_DROP),
	      vmm_mismatches(thp), 1);
	stat_values(t->vm, thp_stats, s2);
	if (on_slat()) {
		check("the split block's one 2 MiB leaf was zapped", s2[ZAPPED] - s1[ZAPPED] == 1,
		      s2[ZAPPED] - s1[ZAPPED], 1);
		check("... and its 512 pages mapped again with 4 KiB leaves",
		      s2[L4K] - s1[L4K] == THP_BLOCK / PAGE, s2[L4K] - s1[L4K], THP_BLOCK / PAGE);
		check("... and no new 2 MiB leaf", s2[L2M] == s1[L2M], s2[L2M], s1[L2M]);
	}
	expect("KVM_RUN to the guest's end", thp_run(t), 0);
	check("huge-page VM's guest ends", t->run->exit_reason == t->end_exit, t->run->exit_reason,
	      t->end_exit);
}

#ifdef __aarch64__
void check_thp(int kvm)
#else
void check_thp(int kvm, struct kvm_sregs *s, struct kvm_cpuid2 *sup)
#endif
{
	struct thp_vm t = {.vm = -1, .vcpu = -1};
	uint8_t *raw = mmap(NULL, THP_SIZE + THP_BLOCK, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

#ifndef __aarch64__
	thp_sregs = s;
	thp_cpuid = sup;
#endif
	if (raw == MAP_FAILED) {
		check("huge-page VM set up", false, errno, 0);
		return;
	}
	// The VMM's huge pages: a 2 MiB aligned range, advised and touched.
	uint8_t *thp = (uint8_t *)(((uintptr_t)raw + THP_BLOCK - 1) & ~(THP_BLOCK - 1));
	expect("madvise MADV_HUGEPAGE", madvise(thp, THP_SIZE, MADV_HUGEPAGE), 0);
	memset(thp, 0, THP_SIZE);
	if (thp_vm_make(kvm, &t, thp))
		thp_checks(&t, thp);
	else
		check("huge-page VM set up", false, errno, 0);
	if (t.vcpu >= 0)
		close(t.vcpu);
	if (t.vm >= 0)
		close(t.vm);
	munmap(raw, THP_SIZE + THP_BLOCK);
	if (t.code && t.code != MAP_FAILED)
		munmap(t.code, t.code_sz);
}
