// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64), the huge-page section: a region backed by the
// VMM's transparent huge pages is mapped with 2 MiB leaves (Slat's per-VM
// statistics), and after the VMM unmaps one page of it (MADV_DONTNEED, which
// splits the huge page in the VMM) the guest still reads every page right.

#include "kvmcheck_arm64.h"

#define THP_BLOCK (2ul << 20)
#define THP_GPA	  0x400000ull // 2 MiB aligned, two blocks
#define THP_SIZE  (2 * THP_BLOCK)
#define THP_PAGES (THP_SIZE / PAGE)
#define THP_DROP  (THP_BLOCK + 5 * PAGE) // the page the VMM unmaps: block 1

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

void check_thp(int kvm)
{
	long sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	uint64_t s0[NSTAT], s1[NSTAT], s2[NSTAT], v = 0;
	struct kvm_run *run;
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	uint8_t *code =
	    mmap(NULL, SLOT_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *raw = mmap(NULL, THP_SIZE + THP_BLOCK, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (vm < 0 || code == MAP_FAILED || raw == MAP_FAILED) {
		check("huge-page VM set up", false, errno, 0);
		return;
	}
	// The VMM's huge pages: a 2 MiB aligned range, advised and touched.
	uint8_t *thp = (uint8_t *)(((uintptr_t)raw + THP_BLOCK - 1) & ~(THP_BLOCK - 1));
	expect("madvise MADV_HUGEPAGE", madvise(thp, THP_SIZE, MADV_HUGEPAGE), 0);
	memset(thp, 0, THP_SIZE);
	write_thp_guest(code);
	region(vm, 0, 0, 0, SLOT_SZ, code);
	expect("region over the VMM's huge pages", region(vm, 1, 0, THP_GPA, THP_SIZE, thp), 0);
	int vcpu = psci_vcpu(vm, 0, 1u << KVM_ARM_VCPU_PSCI_0_2, &run, sz);
	if (vcpu < 0) {
		check("huge-page VM's vCPU", false, errno, 0);
		return;
	}
	stat_values(vm, thp_stats, s0);
	expect("KVM_RUN to the guest's first pass", ioctl(vcpu, KVM_RUN, 0), 0);
	check("the guest wrote every page of the huge-page region",
	      mmio_write_exit(run, MMIO_GPA, &v) && v == 0, run->exit_reason, KVM_EXIT_MMIO);
	check("the VMM reads the guest's word in every page", vmm_mismatches(thp) == 0,
	      vmm_mismatches(thp), 0);
	stat_values(vm, thp_stats, s1);
	if (on_slat()) {
		check("two 2 MiB leaves map the region's two huge pages", s1[L2M] - s0[L2M] == 2,
		      s1[L2M] - s0[L2M], 2);
		// slat.ko gave each block whole at its first fault: no 4 KiB
		// leaf came first (one maps the code page).
		check("... at the blocks' first faults: one 4 KiB leaf, the code page's",
		      s1[L4K] - s0[L4K] == 1, s1[L4K] - s0[L4K], 1);
	}
	// One page of block 1 goes: the VMM's huge page is split, its other
	// pages stay; Slat gives the block's frames back and zaps its leaf.
	expect("MADV_DONTNEED of one page", madvise(thp + THP_DROP, PAGE, MADV_DONTNEED), 0);
	expect("KVM_RUN to the guest's second pass", ioctl(vcpu, KVM_RUN, 0), 0);
	check("the guest reads every page right but the unmapped one (now zero)",
	      mmio_write_exit(run, MMIO_GPA + 8, &v) && v == 1, v, 1);
	check("the VMM reads the same", vmm_mismatches(thp) == 1 && !*(uint64_t *)(thp + THP_DROP),
	      vmm_mismatches(thp), 1);
	stat_values(vm, thp_stats, s2);
	if (on_slat()) {
		check("the split block's one 2 MiB leaf was zapped", s2[ZAPPED] - s1[ZAPPED] == 1,
		      s2[ZAPPED] - s1[ZAPPED], 1);
		check("... and its 512 pages mapped again with 4 KiB leaves",
		      s2[L4K] - s1[L4K] == THP_BLOCK / PAGE, s2[L4K] - s1[L4K], THP_BLOCK / PAGE);
		check("... and no new 2 MiB leaf", s2[L2M] == s1[L2M], s2[L2M], s1[L2M]);
	}
	expect("KVM_RUN to SYSTEM_OFF", ioctl(vcpu, KVM_RUN, 0), 0);
	check("huge-page VM powers off", run->exit_reason == KVM_EXIT_SYSTEM_EVENT,
	      run->exit_reason, KVM_EXIT_SYSTEM_EVENT);
	close(vcpu);
	close(vm);
	munmap(raw, THP_SIZE + THP_BLOCK);
	munmap(code, SLOT_SZ);
}
