// SPDX-License-Identifier: Apache-2.0
//
// slat-vmm's flattened devicetree writer (linux/vmm/vmm_fdt.c), compiled into
// this test. A small reader here walks the blob as a kernel does (header,
// structure block tokens, names from the strings block). Properties: the
// header says version 17 (last compatible 16) with the blocks where they
// are, 8-byte aligned, inside totalsize; the reservation map is one zero
// entry; every token is 4-byte aligned; nodes nest as written; a property's
// value reads back byte for byte, cells big-endian; a name used twice is
// stored once; a tree that does not fit, or has a node left open, is
// refused. The arm64 machine's tree (linux/vmm/vmm_arm64_fdt.c): a cpu node
// per vCPU with its MPIDR, the redistributors sized by the vCPU count, the
// initrd in /chosen, the disk's node only with a disk; with a GICv2 (--gic
// v2) the GICv2 node (compatible, distributor and CPU interface, no
// redistributors) and the timer's PPIs with the mask of every vCPU in bits
// 15:8 of their flags, the SPIs as on a GICv3, which has no mask.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linux/vmm/vmm_fdt.c"
#include "linux/vmm/vmm_arm64_fdt.c"

static uint8_t blob[16384];

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t hdr(size_t off)
{
	return rd32(blob + off);
}

struct found {
	const uint8_t *val;
	uint32_t len;
};

// The value of property PROP in the node at PATH ("/" or "/a/b"), walking
// the structure block; asserts the tokens' shape on the way.
static bool find_prop(const char *path, const char *prop, struct found *out)
{
	const uint8_t *st = blob + hdr(FDT_OFF_DT_STRUCT);
	const char *strings = (const char *)blob + hdr(FDT_OFF_DT_STRINGS);
	size_t off = 0, end = hdr(FDT_OFF_SIZE_STRUCT);
	char cur[256] = "";

	while (off < end) {
		uint32_t tok = rd32(st + off);

		assert_int_equal(off % 4, 0);
		off += 4;
		if (tok == FDT_BEGIN_NODE) {
			const char *name = (const char *)st + off;
			size_t n = strlen(name);

			if (*name) {
				if (strcmp(cur, "/") && *cur)
					strcat(cur, "/");
				else
					strcpy(cur, "/");
				strcat(cur, name);
			} else {
				strcpy(cur, "/");
			}
			off += (n + 4) & ~(size_t)3;
		} else if (tok == FDT_END_NODE) {
			char *slash = strrchr(cur, '/');

			assert_non_null(slash);
			if (slash == cur)
				cur[1] = '\0';
			else
				*slash = '\0';
		} else if (tok == FDT_PROP) {
			uint32_t len = rd32(st + off), nameoff = rd32(st + off + 4);

			assert_true(nameoff < hdr(FDT_OFF_SIZE_STRINGS));
			if (!strcmp(cur, path) && !strcmp(strings + nameoff, prop)) {
				out->val = st + off + 8;
				out->len = len;
				return true;
			}
			off += 8 + ((len + 3) & ~(size_t)3);
		} else {
			assert_int_equal(tok, FDT_END);
			assert_int_equal(off, end);
			return false;
		}
	}
	fail_msg("no FDT_END token");
	return false;
}

static size_t build_small(void)
{
	static struct fdt f;
	static const uint64_t reg[] = {0x40000000, 0x10000000};

	fdt_init(&f);
	fdt_begin_node(&f, "");
	fdt_prop_str(&f, "compatible", "linux,dummy-virt");
	fdt_prop_u32(&f, "#address-cells", 2);
	fdt_begin_node(&f, "chosen");
	fdt_prop_str(&f, "bootargs", "console=ttyS0 x"); // 16 bytes with the NUL
	fdt_end_node(&f);
	fdt_begin_node(&f, "memory@40000000");
	fdt_prop_str(&f, "device_type", "memory");
	fdt_prop_u64s(&f, "reg", reg, 2);
	fdt_prop_empty(&f, "always-on");
	fdt_end_node(&f);
	fdt_begin_node(&f, "uart");
	fdt_prop_str(&f, "compatible", "ns16550a"); // a name used twice
	fdt_end_node(&f);
	fdt_end_node(&f);
	return fdt_finish(&f, blob, sizeof(blob));
}

static void test_header(void **state)
{
	size_t total = build_small();

	(void)state;
	assert_true(total > FDT_HEADER_SIZE);
	assert_int_equal(total % 8, 0);
	assert_int_equal(hdr(FDT_OFF_MAGIC), 0xd00dfeed);
	assert_int_equal(blob[0], 0xd0); // big-endian on the wire
	assert_int_equal(hdr(FDT_OFF_TOTALSIZE), total);
	assert_int_equal(hdr(FDT_OFF_VERSION), 17);
	assert_int_equal(hdr(FDT_OFF_LAST_COMP), 16);
	assert_int_equal(hdr(FDT_OFF_BOOT_CPUID), 0);
	assert_int_equal(hdr(FDT_OFF_MEM_RSVMAP), FDT_HEADER_SIZE);
	assert_int_equal(hdr(FDT_OFF_MEM_RSVMAP) % 8, 0);
	assert_int_equal(hdr(FDT_OFF_DT_STRUCT) % 8, 0);
	// The reservation map: one 16-byte zero entry, before the structure.
	for (int i = 0; i < 16; i++)
		assert_int_equal(blob[FDT_HEADER_SIZE + i], 0);
	assert_true(hdr(FDT_OFF_DT_STRUCT) >= FDT_HEADER_SIZE + 16);
	assert_int_equal(hdr(FDT_OFF_DT_STRUCT) + hdr(FDT_OFF_SIZE_STRUCT),
			 hdr(FDT_OFF_DT_STRINGS));
	assert_true(hdr(FDT_OFF_DT_STRINGS) + hdr(FDT_OFF_SIZE_STRINGS) <= total);
	assert_int_equal(hdr(FDT_OFF_SIZE_STRUCT) % 4, 0);
	// The structure block opens the root node and ends with FDT_END.
	assert_int_equal(rd32(blob + hdr(FDT_OFF_DT_STRUCT)), FDT_BEGIN_NODE);
	assert_int_equal(rd32(blob + hdr(FDT_OFF_DT_STRUCT) + hdr(FDT_OFF_SIZE_STRUCT) - 4),
			 FDT_END);
}

static void test_props_read_back(void **state)
{
	struct found p;

	(void)state;
	build_small();
	assert_true(find_prop("/", "compatible", &p));
	assert_int_equal(p.len, strlen("linux,dummy-virt") + 1);
	assert_string_equal((const char *)p.val, "linux,dummy-virt");
	assert_true(find_prop("/", "#address-cells", &p));
	assert_int_equal(p.len, 4);
	assert_int_equal(rd32(p.val), 2);
	assert_true(find_prop("/chosen", "bootargs", &p));
	assert_string_equal((const char *)p.val, "console=ttyS0 x");
	assert_true(find_prop("/memory@40000000", "reg", &p));
	assert_int_equal(p.len, 16);
	assert_int_equal(rd32(p.val), 0);
	assert_int_equal(rd32(p.val + 4), 0x40000000);
	assert_int_equal(rd32(p.val + 8), 0);
	assert_int_equal(rd32(p.val + 12), 0x10000000);
	assert_true(find_prop("/memory@40000000", "always-on", &p));
	assert_int_equal(p.len, 0);
	assert_true(find_prop("/uart", "compatible", &p));
	assert_string_equal((const char *)p.val, "ns16550a");
	assert_false(find_prop("/chosen", "compatible", &p));
	assert_false(find_prop("/", "bootargs", &p));
}

static void test_strings_once(void **state)
{
	const char *s = (const char *)blob;
	size_t n = 0;

	(void)state;
	build_small();
	for (size_t off = 0; off < hdr(FDT_OFF_SIZE_STRINGS);
	     off += strlen(s + hdr(FDT_OFF_DT_STRINGS) + off) + 1)
		n += !strcmp(s + hdr(FDT_OFF_DT_STRINGS) + off, "compatible");
	assert_int_equal(n, 1);
	// compatible, #address-cells, bootargs, device_type, reg, always-on.
	assert_int_equal(hdr(FDT_OFF_SIZE_STRINGS),
			 sizeof("compatible") + sizeof("#address-cells") + sizeof("bootargs") +
			     sizeof("device_type") + sizeof("reg") + sizeof("always-on"));
}

static void test_refusals(void **state)
{
	static struct fdt f;
	static uint8_t big[FDT_STRUCT_MAX];

	(void)state;
	fdt_init(&f);
	fdt_begin_node(&f, "");
	fdt_begin_node(&f, "open");
	fdt_end_node(&f);
	assert_int_equal(fdt_finish(&f, blob, sizeof(blob)), 0); // "/" still open

	fdt_init(&f);
	fdt_begin_node(&f, "");
	fdt_end_node(&f);
	assert_int_equal(fdt_finish(&f, blob, 40), 0); // no room in the output

	fdt_init(&f);
	fdt_begin_node(&f, "");
	fdt_prop(&f, "big", big, sizeof(big)); // more than the structure block holds
	fdt_end_node(&f);
	assert_true(f.overflow);
	assert_int_equal(fdt_finish(&f, blob, sizeof(blob)), 0);
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static void build_machine_gic(int ncpus, bool disk, bool initrd, bool console, enum gic_version gic)
{
	const struct arm64_fdt_args a = {
	    .ncpus = ncpus,
	    .mem_base = GPA_RAM,
	    .mem_size = 256ull << 20,
	    .cmdline = "console=ttyS0",
	    .initrd_start = 0x41e00000,
	    .initrd_end = initrd ? 0x41f00000 : 0,
	    .virtio_blk = disk,
	    .virtio_con = console,
	    .gic = gic,
	};

	assert_true(arm64_build_fdt(&a, blob, sizeof(blob)) > 0);
}

static void build_machine(int ncpus, bool disk, bool initrd, bool console)
{
	build_machine_gic(ncpus, disk, initrd, console, GIC_V3);
}

static void test_machine(void **state)
{
	struct found p;

	(void)state;
	build_machine(3, true, true, true);
	assert_true(find_prop("/cpus/cpu@2", "reg", &p));
	assert_int_equal(rd32(p.val), 2);
	assert_false(find_prop("/cpus/cpu@3", "reg", &p));
	assert_true(find_prop("/cpus/cpu@0", "enable-method", &p));
	assert_string_equal((const char *)p.val, "psci");
	assert_true(find_prop("/psci", "method", &p));
	assert_string_equal((const char *)p.val, "hvc");
	assert_true(find_prop("/intc@8000000", "reg", &p));
	assert_int_equal(p.len, 32);
	assert_int_equal(rd64(p.val), GPA_GICD);
	assert_int_equal(rd64(p.val + 16), GPA_GICR);
	assert_int_equal(rd64(p.val + 24), 3 * GICR_STRIDE);
	assert_true(find_prop("/memory@40000000", "reg", &p));
	assert_int_equal(rd64(p.val), 0x40000000);
	assert_int_equal(rd64(p.val + 8), 256ull << 20);
	assert_true(find_prop("/chosen", "linux,initrd-start", &p));
	assert_int_equal(rd64(p.val), 0x41e00000);
	assert_true(find_prop("/chosen", "linux,initrd-end", &p));
	assert_int_equal(rd64(p.val), 0x41f00000);
	assert_true(find_prop("/chosen", "stdout-path", &p));
	assert_string_equal((const char *)p.val, "/uart@9000000");
	assert_true(find_prop("/uart@9000000", "interrupts", &p));
	assert_int_equal(rd32(p.val + 4), UART_SPI);
	assert_true(find_prop("/virtio_mmio@a000000", "interrupts", &p));
	assert_int_equal(rd32(p.val + 4), VIRTIO_SPI);
	// The virtio console (--console virtio): the next window, its own SPI.
	assert_true(find_prop("/virtio_mmio@a000200", "compatible", &p));
	assert_string_equal((const char *)p.val, "virtio,mmio");
	assert_true(find_prop("/virtio_mmio@a000200", "reg", &p));
	assert_int_equal(rd64(p.val), GPA_VIRTIO_CON);
	assert_int_equal(rd64(p.val + 8), VIRTIO_MMIO_SIZE);
	assert_true(find_prop("/virtio_mmio@a000200", "interrupts", &p));
	assert_int_equal(rd32(p.val + 4), VIRTIO_CON_SPI);
	assert_int_not_equal(VIRTIO_CON_SPI, VIRTIO_SPI);
	assert_true(find_prop("/", "interrupt-parent", &p));
	assert_int_equal(rd32(p.val), GIC_PHANDLE);
	assert_true(find_prop("/intc@8000000", "phandle", &p));
	assert_int_equal(rd32(p.val), GIC_PHANDLE);

	build_machine(1, false, false, false);
	assert_false(find_prop("/virtio_mmio@a000000", "compatible", &p));
	assert_false(find_prop("/virtio_mmio@a000200", "compatible", &p));
	assert_false(find_prop("/chosen", "linux,initrd-start", &p));
	assert_false(find_prop("/cpus/cpu@1", "reg", &p));
}

// The timer's four PPIs (secure and non-secure physical, virtual,
// hypervisor), level low, FLAGS their flags cell with any CPU mask.
static void assert_timer(uint32_t flags)
{
	static const uint32_t ppi[] = {13, 14, 11, 10};
	struct found p;

	assert_true(find_prop("/timer", "interrupts", &p));
	assert_int_equal(p.len, 12 * 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(rd32(p.val + 12 * i), 1); // PPI
		assert_int_equal(rd32(p.val + 12 * i + 4), ppi[i]);
		assert_int_equal(rd32(p.val + 12 * i + 8), flags);
	}
}

// An SPI's three cells at NODE: no CPU mask on either GIC.
static void assert_spi(const char *node, uint32_t spi)
{
	struct found p;

	assert_true(find_prop(node, "interrupts", &p));
	assert_int_equal(p.len, 3 * 4);
	assert_int_equal(rd32(p.val), 0);
	assert_int_equal(rd32(p.val + 4), spi);
	assert_int_equal(rd32(p.val + 8), 4);
}

static void test_machine_gicv2(void **state)
{
	static const char compat[] = "arm,cortex-a15-gic";
	struct found p;

	(void)state;
	build_machine_gic(3, true, false, true, GIC_V2);
	assert_true(find_prop("/intc@8000000", "compatible", &p));
	assert_int_equal(p.len, sizeof(compat));
	assert_memory_equal(p.val, compat, sizeof(compat));
	assert_true(find_prop("/intc@8000000", "#interrupt-cells", &p));
	assert_int_equal(p.len, 4);
	assert_int_equal(rd32(p.val), 3);
	assert_true(find_prop("/intc@8000000", "interrupt-controller", &p));
	assert_int_equal(p.len, 0);
	// Distributor 64 KiB at 0x08000000, CPU interface 8 KiB at 0x08010000.
	assert_true(find_prop("/intc@8000000", "reg", &p));
	assert_int_equal(p.len, 32);
	assert_int_equal(rd64(p.val), 0x08000000);
	assert_int_equal(rd64(p.val + 8), 0x10000);
	assert_int_equal(rd64(p.val + 16), 0x08010000);
	assert_int_equal(rd64(p.val + 24), 0x2000);
	assert_false(find_prop("/intc@8000000", "#redistributor-regions", &p));
	assert_true(find_prop("/intc@8000000", "phandle", &p));
	assert_int_equal(rd32(p.val), GIC_PHANDLE);
	assert_true(find_prop("/", "interrupt-parent", &p));
	assert_int_equal(rd32(p.val), GIC_PHANDLE);
	// vCPUs 0..2: mask 0x7 in bits 15:8, level low.
	assert_timer(0x708);
	assert_spi("/uart@9000000", 1);
	assert_spi("/virtio_mmio@a000000", 16);
	assert_spi("/virtio_mmio@a000200", 17);

	build_machine_gic(1, false, false, false, GIC_V2);
	assert_timer(0x108);
	build_machine_gic(GICV2_VCPU_MAX, false, false, false, GIC_V2);
	assert_true(find_prop("/cpus/cpu@7", "reg", &p));
	assert_int_equal(rd32(p.val), 7);
	assert_timer(0xff08);

	// The GICv3 next to it: its own compatible, no mask on the PPIs.
	build_machine(3, true, false, true);
	assert_true(find_prop("/intc@8000000", "compatible", &p));
	assert_string_equal((const char *)p.val, "arm,gic-v3");
	assert_true(find_prop("/intc@8000000", "#redistributor-regions", &p));
	assert_timer(8);
	assert_spi("/uart@9000000", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header),	 cmocka_unit_test(test_props_read_back),
	    cmocka_unit_test(test_strings_once), cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_machine),	 cmocka_unit_test(test_machine_gicv2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
