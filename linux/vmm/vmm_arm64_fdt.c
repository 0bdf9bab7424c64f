// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's arm64 machine as a device tree (the nodes QEMU's "virt" machine
// gives Linux, for the devices slat-vmm has): RAM, the vCPUs started through
// PSCI (KVM's, by HVC), the GICv3 or GICv2 (KVM's vGIC), the architected
// timer, the ns16550a UART and, with --disk, the virtio-mmio disk (with
// --console virtio a second virtio-mmio node, the console). Interrupt
// specifiers are the GIC binding's three cells: type (0 SPI, 1 PPI), number
// within the type, flags (4 level high, 8 level low); a GICv2's PPIs also
// name the CPUs they reach, a mask in bits 15:8 of the flags.
#include <stdio.h>

#include "vmm.h"
#include "vmm_arm64_layout.h"
#include "vmm_fdt.h"

#define GIC_SPI	       0u
#define GIC_PPI	       1u
#define IRQ_LEVEL_HIGH 4u
#define IRQ_LEVEL_LOW  8u
// The architected timer's PPIs: secure, non-secure physical, virtual, hypervisor.
#define PPI_SEC_PHYS 13u
#define PPI_PHYS     14u
#define PPI_VIRT     11u
#define PPI_HYP	     10u

static void node_at(struct fdt *f, const char *name, uint64_t addr)
{
	char n[64];

	snprintf(n, sizeof(n), "%s@%llx", name, (unsigned long long)addr);
	fdt_begin_node(f, n);
}

static void add_chosen(struct fdt *f, const struct arm64_fdt_args *a)
{
	char path[32];

	fdt_begin_node(f, "chosen");
	fdt_prop_str(f, "bootargs", a->cmdline);
	snprintf(path, sizeof(path), "/uart@%llx", (unsigned long long)GPA_UART);
	fdt_prop_str(f, "stdout-path", path);
	if (a->initrd_end) {
		fdt_prop_u64s(f, "linux,initrd-start", &a->initrd_start, 1);
		fdt_prop_u64s(f, "linux,initrd-end", &a->initrd_end, 1);
	}
	fdt_end_node(f);
}

static void add_memory(struct fdt *f, const struct arm64_fdt_args *a)
{
	const uint64_t reg[] = {a->mem_base, a->mem_size};

	node_at(f, "memory", a->mem_base);
	fdt_prop_str(f, "device_type", "memory");
	fdt_prop_u64s(f, "reg", reg, 2);
	fdt_end_node(f);
}

// vCPU N's MPIDR affinity is Aff0 = N (KVM's for vcpu_id N < 16).
static void add_cpus(struct fdt *f, int ncpus)
{
	fdt_begin_node(f, "cpus");
	fdt_prop_u32(f, "#address-cells", 1);
	fdt_prop_u32(f, "#size-cells", 0);
	for (int i = 0; i < ncpus; i++) {
		node_at(f, "cpu", (uint64_t)i);
		fdt_prop_str(f, "device_type", "cpu");
		fdt_prop_str(f, "compatible", "arm,armv8");
		fdt_prop_u32(f, "reg", (uint32_t)i);
		fdt_prop_str(f, "enable-method", "psci");
		fdt_end_node(f);
	}
	fdt_end_node(f);
}

static void add_psci(struct fdt *f)
{
	static const char compat[] = "arm,psci-1.0\0arm,psci-0.2";

	fdt_begin_node(f, "psci");
	fdt_prop(f, "compatible", compat, sizeof(compat));
	fdt_prop_str(f, "method", "hvc");
	fdt_end_node(f);
}

// A GICv2: the distributor and the CPU interface (8 KiB: GICC_DIR is at
// 0x1000), the compatible string Linux's GICv2 driver and QEMU's virt use.
static void add_gicv2(struct fdt *f)
{
	const uint64_t reg[] = {GPA_GICD, GICD_SIZE, GPA_GICC, GICC_SIZE};

	node_at(f, "intc", GPA_GICD);
	fdt_prop_str(f, "compatible", "arm,cortex-a15-gic");
	fdt_prop_u32(f, "#interrupt-cells", 3);
	fdt_prop_u32(f, "#address-cells", 0); // no child nodes (no GICv2m)
	fdt_prop_empty(f, "interrupt-controller");
	fdt_prop_u64s(f, "reg", reg, 4);
	fdt_prop_u32(f, "phandle", GIC_PHANDLE);
	fdt_end_node(f);
}

static void add_gic(struct fdt *f, int ncpus)
{
	const uint64_t reg[] = {GPA_GICD, GICD_SIZE, GPA_GICR, GICR_STRIDE * (uint64_t)ncpus};

	node_at(f, "intc", GPA_GICD);
	fdt_prop_str(f, "compatible", "arm,gic-v3");
	fdt_prop_u32(f, "#interrupt-cells", 3);
	fdt_prop_u32(f, "#address-cells", 0); // no child nodes (no ITS)
	fdt_prop_empty(f, "interrupt-controller");
	fdt_prop_u64s(f, "reg", reg, 4);
	fdt_prop_u32(f, "#redistributor-regions", 1);
	fdt_prop_u32(f, "phandle", GIC_PHANDLE);
	fdt_end_node(f);
}

// CPU_MASK: 0 on a GICv3 (its binding has no mask), on a GICv2 the mask of
// the vCPUs the timer's PPIs reach (all of them), already in bits 15:8.
static void add_timer(struct fdt *f, uint32_t cpu_mask)
{
	const uint32_t flags = cpu_mask | IRQ_LEVEL_LOW;
	const uint32_t irqs[] = {
	    GIC_PPI, PPI_SEC_PHYS, flags, GIC_PPI, PPI_PHYS, flags,
	    GIC_PPI, PPI_VIRT,	   flags, GIC_PPI, PPI_HYP,  flags,
	};

	fdt_begin_node(f, "timer");
	fdt_prop_str(f, "compatible", "arm,armv8-timer");
	fdt_prop_cells(f, "interrupts", irqs, 12);
	fdt_prop_empty(f, "always-on");
	fdt_end_node(f);
}

static void add_uart(struct fdt *f)
{
	const uint64_t reg[] = {GPA_UART, UART_SIZE};
	const uint32_t irq[] = {GIC_SPI, UART_SPI, IRQ_LEVEL_HIGH};

	node_at(f, "uart", GPA_UART);
	fdt_prop_str(f, "compatible", "ns16550a");
	fdt_prop_u64s(f, "reg", reg, 2);
	fdt_prop_u32(f, "reg-shift", 0);
	fdt_prop_u32(f, "reg-io-width", 1);
	fdt_prop_u32(f, "clock-frequency", 1843200);
	fdt_prop_cells(f, "interrupts", irq, 3);
	fdt_end_node(f);
}

// "dma-coherent": the VMM reads and writes the rings through cacheable
// memory, so the guest must not map them uncached.
static void add_virtio_mmio(struct fdt *f, uint64_t base, uint32_t spi)
{
	const uint64_t reg[] = {base, VIRTIO_MMIO_SIZE};
	const uint32_t irq[] = {GIC_SPI, spi, IRQ_LEVEL_HIGH};

	node_at(f, "virtio_mmio", base);
	fdt_prop_str(f, "compatible", "virtio,mmio");
	fdt_prop_u64s(f, "reg", reg, 2);
	fdt_prop_cells(f, "interrupts", irq, 3);
	fdt_prop_empty(f, "dma-coherent");
	fdt_end_node(f);
}

size_t arm64_build_fdt(const struct arm64_fdt_args *a, uint8_t *out, size_t cap)
{
	static struct fdt f; // 72 KiB: not on a thread's stack

	fdt_init(&f);
	fdt_begin_node(&f, "");
	fdt_prop_str(&f, "compatible", "linux,dummy-virt");
	fdt_prop_u32(&f, "#address-cells", 2);
	fdt_prop_u32(&f, "#size-cells", 2);
	fdt_prop_u32(&f, "interrupt-parent", GIC_PHANDLE);
	add_chosen(&f, a);
	add_memory(&f, a);
	add_cpus(&f, a->ncpus);
	add_psci(&f);
	if (a->gic == GIC_V2) {
		add_gicv2(&f);
		add_timer(&f, ((1u << a->ncpus) - 1) << 8);
	} else {
		add_gic(&f, a->ncpus);
		add_timer(&f, 0);
	}
	add_uart(&f);
	if (a->virtio_blk)
		add_virtio_mmio(&f, GPA_VIRTIO_BLK, VIRTIO_SPI);
	if (a->virtio_con)
		add_virtio_mmio(&f, GPA_VIRTIO_CON, VIRTIO_CON_SPI);
	fdt_end_node(&f);
	return fdt_finish(&f, out, cap);
}
