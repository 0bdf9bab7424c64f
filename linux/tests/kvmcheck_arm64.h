// SPDX-License-Identifier: Apache-2.0
//
// The arm64 slat-kvm-check's shared part: the guests' layout, the AArch64
// instruction encoder the guests are written with, the vCPU helpers
// (kvmcheck_arm64.c) and the feature sections main() runs. The check helpers
// themselves are kvmcheck.h's (both architectures).
#ifndef SLAT_KVMCHECK_ARM64_H
#define SLAT_KVMCHECK_ARM64_H

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvmcheck.h"

// The guests' layout: code at CODE_GPA in 64 KiB slots, the VMM's MMIO page.
#define PAGE	 4096ul
#define MMIO_GPA 0x10000000ull
#define CODE_GPA 0x0ull
#define SLOT_SZ	 (64 * 1024ul)

#define CORE(f)                                                                                    \
	(KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE |                                     \
	 (offsetof(struct kvm_regs, f) / sizeof(uint32_t)))

// AArch64 encodings of the instructions the guests need (with movz, movk,
// the branches and mov64 below).
#define HVC0		   0xD4000002u
#define NOP		   0xD503201Fu
#define WFI		   0xD503207Fu
#define STR_X(rt, rn, off) (0xF9000000u | ((off) / 8) << 10 | (rn) << 5 | (rt))
#define LDR_X(rt, rn, off) (0xF9400000u | ((off) / 8) << 10 | (rn) << 5 | (rt))

// Where the guests' second vCPU starts (PSCI CPU_ON's entry, the GIC guests' vCPU 1).
#define ENTRY1 0x1000u

// PSCI and SMCCC function numbers and answers.
#define FN_VERSION	   0x84000000u
#define FN_CPU_OFF	   0x84000002u
#define FN64_CPU_ON	   0xc4000003u
#define FN64_AFFINITY	   0xc4000004u
#define FN_MIGRATE_INFO	   0x84000006u
#define FN_SYSTEM_OFF	   0x84000008u
#define FN_FEATURES	   0x8400000au
#define FN64_SYSTEM_SUSP   0xc400000eu
#define FN_SMCCC_VERSION   0x80000000u
#define PSCI_INVALID	   ((uint64_t)-2)
#define PSCI_DENIED	   ((uint64_t)-3)
#define PSCI_ALREADY_ON	   ((uint64_t)-4)
#define PSCI_NOT_SUPPORTED ((uint64_t)-1)

// Guest code being written: n instructions at p.
struct code {
	uint32_t *p;
	unsigned n;
};

#define MOV_X(rd, rm)  (0xAA0003E0u | (rm) << 16 | (rd)) // ORR rd, xzr, rm
#define CMP_X(rn, imm) (0xF100001Fu | (imm) << 10 | (rn) << 5)

// System registers (op0 3): op1, CRn, CRm, op2.
#define SR(op1, crn, crm, op2) ((op1) << 16 | (crn) << 12 | (crm) << 8 | (op2) << 5)
#define ICC_IAR1_EL1	       SR(0, 12, 12, 0)
#define ICC_EOIR1_EL1	       SR(0, 12, 12, 1)
#define ICC_SRE_EL1	       SR(0, 12, 12, 5)
#define ICC_IGRPEN1_EL1	       SR(0, 12, 12, 7)
#define ICC_PMR_EL1	       SR(0, 4, 6, 0)
#define ICC_SGI1R_EL1	       SR(0, 12, 11, 5)
#define VBAR_EL1	       SR(0, 12, 0, 0)
#define SPSR_EL1	       SR(0, 4, 0, 0)
#define ELR_EL1		       SR(0, 4, 0, 1)
#define ESR_EL1		       SR(0, 5, 2, 0)
#define CNTVCT_EL0	       SR(3, 14, 0, 2)
#define CNTV_CTL_EL0	       SR(3, 14, 3, 1)
#define CNTV_CVAL_EL0	       SR(3, 14, 3, 2)
#define MSR(sr, rt)	       (0xD5180000u | (sr) | (rt))
#define MRS(rt, sr)	       (0xD5380000u | (sr) | (rt))
#define ISB		       0xD5033FDFu
#define DSB_SY		       0xD5033F9Fu
#define ERET		       0xD69F03E0u
#define DAIFSET_I	       0xD50342DFu // msr daifset, #2
#define DAIFCLR_I	       0xD50342FFu // msr daifclr, #2
#define STR_W(rt, rn, off)     (0xB9000000u | ((off) / 4) << 10 | (rn) << 5 | (rt))
#define LDR_W(rt, rn, off)     (0xB9400000u | ((off) / 4) << 10 | (rn) << 5 | (rt))
#define ADD_XI(rd, rn, imm)    (0x91000000u | (imm) << 10 | (rn) << 5 | (rd))
#define SUBS_XI(rd, rn, imm)   (0xF1000000u | (imm) << 10 | (rn) << 5 | (rd))
#define ADD_XR(rd, rn, rm, sh) (0x8B000000u | (rm) << 16 | (sh) << 10 | (rn) << 5 | (rd))
#define ORR_XR(rd, rn, rm)     (0xAA000000u | (rm) << 16 | (rn) << 5 | (rd))
#define COND_EQ		       0u
#define COND_NE		       1u
#define COND_HS		       2u

// ---- kvmcheck_arm64.c: the encoder and the vCPU helpers ----
uint32_t movz(unsigned rd, uint16_t imm, unsigned hw);
uint32_t movk(unsigned rd, uint16_t imm, unsigned hw);
void emit(struct code *c, uint32_t insn);
void mov64(struct code *c, unsigned rd, uint64_t v); // movz + 3 movk
uint32_t cbz_back(const struct code *c, unsigned rt, unsigned to);
uint32_t bne_back(const struct code *c, unsigned to);
uint32_t b_back(const struct code *c, unsigned to);
// A forward branch: fwd() emits a placeholder, land_*() patches it at the target.
unsigned fwd(struct code *c);
void land_bcond(struct code *c, unsigned at, unsigned cond);
void land_tbz(struct code *c, unsigned at, unsigned rt, unsigned bit);
// x0 = fn, x1..x3 = args (x1 = x20, the target's MPIDR, when a1 is ~0), HVC.
void call(struct code *c, uint32_t fn, uint64_t a1, uint64_t a2, uint64_t a3);
// KVM_SET_ONE_REG / KVM_GET_ONE_REG.
int one_reg(int vcpu, uint64_t id, uint64_t *val, bool set);
// KVM_{SET,GET,HAS}_DEVICE_ATTR on a vCPU (val: the attribute's value).
int vcpu_attr(int vcpu, unsigned long cmd, uint32_t group, uint64_t attr, void *val);
// vCPU `id` made, initialised with `features` and its kvm_run mapped: its fd or -1.
int psci_vcpu(int vm, int id, uint32_t features, struct kvm_run **run, long sz);
// A signal handler that does nothing: installed without SA_RESTART, the
// signal ends a KVM_RUN with EINTR.
void no_op(int sig);

// ---- the feature sections (kvmcheck_<feature>.c), called by main ----
void check_reg_list(int vcpu); // kvmcheck_arm64.c: KVM_GET_REG_LIST, KVM 6.1's count
void check_psci(int kvm);     // kvmcheck_psci.c
void check_readonly(int kvm); // kvmcheck_readonly.c
void check_thp(int kvm);      // kvmcheck_thp.c: huge pages of the VMM's, 2 MiB leaves
void check_vgic(int kvm);     // kvmcheck_vgic.c: GICv3, else GICv2

#endif
