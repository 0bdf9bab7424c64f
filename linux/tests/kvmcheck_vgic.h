// SPDX-License-Identifier: Apache-2.0
//
// slat-kvm-check (arm64): what the GICv3 section (kvmcheck_vgic.c) shares with
// the GICv2 one (kvmcheck_vgic2.c): the guests' layout and results, the GIC
// guests' building blocks, the VMs they run in.
#ifndef SLAT_KVMCHECK_VGIC_H
#define SLAT_KVMCHECK_VGIC_H

#include "kvmcheck_arm64.h"

#define GICD_GPA     0x08000000ull
#define GICR_GPA     0x080a0000ull
#define GICR_STRIDE  0x20000ull // RD_base + SGI_base frames of one vCPU
#define GIC_NR_IRQS  96u
#define VEC_GPA	     0x2000u // VBAR_EL1 (2 KiB aligned)
#define GRES_GPA     0x4000u // vCPU 0's results; vCPU 1's at +0x800
#define GRES1_OFF    0x800u
#define GR_COUNT     0x00u // INTIDs taken
#define GR_SPURIOUS  0x08u // ICC_IAR1_EL1 answers of 1023
#define GR_INTIDS    0x10u // the first 16 INTIDs, in order
#define GR_SRE	     0x100u
#define GR_TYPER     0x108u
#define GR_PIDR2     0x110u
#define GR_RTYPER    0x118u
#define GR_WAKER_TO  0x120u // 1: GICR_WAKER.ChildrenAsleep never cleared
#define GR_WAIT_TO   0x128u // a bit per wait that gave up
#define GR_BAD	     0x180u // an unexpected exception: ESR_EL1, ELR_EL1
#define SPI_INTID    40u
#define SGI_SELF     3u
#define SGI_OTHER    5u
#define VTIMER_INTID 27u
#define MMIO_BAD     (MMIO_GPA + 0x100) // the vector offset of an unexpected exception
#define GICC_GPA     0x08010000ull	// GICv2: the CPU interface (QEMU virt's place)
#define GICC_IAR     0x0cu
#define GICC_EOIR    0x10u

// A VM with the GIC as the brief's layout has it: 64 KiB of RAM at 0, the
// distributor at 0x08000000, the redistributors from 0x080a0000, 96 IRQs.
struct gic_vm {
	int vm, dev, vcpu[2];
	struct kvm_run *run[2];
	uint8_t *mem;
};

struct sgi_waiter {
	int vcpu;
	struct kvm_run *run;
	uint8_t *mem;
	bool got;
	uint64_t res; // its results
};

void fits(const struct code *c, unsigned bytes);
void w32(struct code *c, uint64_t addr, uint64_t val);
void gres(struct code *c, unsigned rt, unsigned off);
void tell(struct code *c, uint64_t gpa, uint64_t val);
void wait_irqs(struct code *c, unsigned want, unsigned bit);
void grace(struct code *c);
void write_vectors_for(uint8_t *mem, bool v2);
void guest_sgi_spi_timer(struct code *c);
long gic_addr(int dev, uint64_t type, uint64_t gpa);
long gic_nr_irqs(int dev, uint32_t n);
long gic_init(int dev);
int gic2_create(int vm);
bool gic_vm_make(int kvm, struct gic_vm *g, unsigned nvcpu, void (*write)(uint8_t *), bool v2);
void gic_vm_free(struct gic_vm *g, unsigned nvcpu);
bool run_to_tell(int vcpu, struct kvm_run *run, uint8_t *mem, uint64_t res, uint64_t gpa,
		 uint64_t val);
uint64_t gr(const struct gic_vm *g, unsigned off);
void run_gic_guest(struct gic_vm *g, const char *tag);
void *sgi_waiter_run(void *arg);
int join_waiter(pthread_t t);
bool sgi_vm_make(int kvm, struct gic_vm *g, void (*write)(uint8_t *), bool v2, const char *tag);

// The GICv3's save and restore, and the VM's counter (kvmcheck_vgic_state.c).
void check_vgic_state(int kvm);

// The GICv2 section (kvmcheck_vgic2.c), run by check_vgic on a GICv2 machine.
void check_vgic2_device(int kvm);
void check_vgic2_guest(int kvm);
void check_vgic2_sgi(int kvm);
// Its save and restore (GRP_DIST_REGS, GRP_CPU_REGS).
void check_vgic2_state(int kvm);

#endif
