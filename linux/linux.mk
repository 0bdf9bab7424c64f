# SPDX-License-Identifier: Apache-2.0
#
# What runs in the primary's Linux, for one guest architecture (called by
# tools/linux-build.sh with TOP, OUT, KDIR, KARCH, CROSS, GARCH):
#   $(OUT)/slat.ko        linux/slat/ against Debian's headers in KDIR
#   $(OUT)/guest.bin      the secondary payload (linux/guest/), flat binary
#   $(OUT)/slat-*         static test programs (linux/tests/)
#   $(OUT)/slat-vmm       the VMM over the KVM API (linux/vmm/)
L := $(TOP)/linux
KO := $(OUT)/ko
ABI := $(TOP)/core/hcall_abi.h

ifeq ($(GARCH),aarch64)
UCC := aarch64-linux-gnu-gcc
GTARGET := aarch64-none-elf
GSRC := $(L)/guest/arm64.S
LIBARCH := $(L)/tests/slatlib_arm64.c
else
UCC := gcc
GTARGET := i386-none-elf
GSRC := $(L)/guest/x86.S
LIBARCH := $(L)/tests/slatlib_x86.c
endif

PROGS := slat-vmtest slat-killtest slat-fuzz slat-bench slat-kvm-check
LIBSRC := $(L)/tests/slatlib.c $(LIBARCH)
LIBHDR := $(L)/tests/slatlib.h $(L)/slat/slat_uapi.h $(ABI) $(L)/guest/job.h
UCFLAGS := -static -O2 -Wall -Wextra -Werror -std=gnu11 -pthread -I$(TOP) -I$(L)/slat -I$(L)/guest

all: $(OUT)/slat.ko $(OUT)/guest.bin $(addprefix $(OUT)/,$(PROGS)) $(OUT)/slat-vmm

KSRC := $(wildcard $(L)/slat/*.c $(L)/slat/*.h) $(L)/slat/Kbuild $(ABI)
$(OUT)/slat.ko: $(KSRC)
	@rm -rf $(KO)/linux && mkdir -p $(KO)/linux/slat $(KO)/core
	@cp $(L)/slat/*.c $(L)/slat/*.h $(L)/slat/Kbuild $(KO)/linux/slat/
	@cp $(ABI) $(KO)/core/
	$(MAKE) -s -C $(KDIR) M=$(KO)/linux/slat ARCH=$(KARCH) CROSS_COMPILE=$(CROSS) modules >$(KO)/build.log 2>&1 || { cat $(KO)/build.log; exit 1; }
	@if grep -q 'warning:' $(KO)/build.log; then cat $(KO)/build.log; exit 1; fi
	@cp $(KO)/linux/slat/slat.ko $@

$(OUT)/guest.bin: $(GSRC) $(L)/guest/job.h
	@mkdir -p $(OUT) $(KO)
	clang --target=$(GTARGET) -c -I$(L)/guest -o $(KO)/guest.o $(GSRC)
	ld.lld -static -nostdlib -Ttext=0 -e _start -o $(KO)/guest.elf $(KO)/guest.o
	llvm-objcopy -O binary $(KO)/guest.elf $@

# slat-kvm-check: one program per architecture (the guests differ), over the
# check helpers of kvmcheck.c; each is one file per feature section over its
# architecture's shared part: kvmcheck_arm64.c (the guests' layout, the
# AArch64 encoder, vCPU helpers) and kvmcheck_x86.c (the guests' layout,
# vCPU and exit helpers).
KVMCHECK_HDR := $(addprefix $(L)/tests/,kvmcheck.h kvmcheck_arm64.h kvmcheck_vgic.h kvmcheck_x86.h)
ifeq ($(GARCH),aarch64)
KVMCHECK_SRC := $(addprefix $(L)/tests/,slat-kvm-check.c kvmcheck.c kvmcheck_arm64.c \
                  kvmcheck_psci.c kvmcheck_readonly.c kvmcheck_thp.c kvmcheck_vgic.c kvmcheck_vgic2.c \
                  kvmcheck_vgic_state.c)
$(OUT)/slat-kvm-check: $(KVMCHECK_SRC) $(KVMCHECK_HDR)
	@mkdir -p $(OUT) $(KO)
	$(UCC) $(UCFLAGS) -o $@ $(KVMCHECK_SRC)
else
KVMCHECK_SRC := $(addprefix $(L)/tests/,slat-kvm-check-x86.c kvmcheck.c kvmcheck_x86.c \
                  kvmcheck_x86_irq.c kvmcheck_x86_irqchip.c kvmcheck_x86_timer.c kvmcheck_x86_ap.c \
                  kvmcheck_x86_pic.c kvmcheck_x86_events.c kvmcheck_x86_msr.c kvmcheck_thp.c)
$(OUT)/slat-kvm-check: $(KVMCHECK_SRC) $(KVMCHECK_HDR)
	@mkdir -p $(OUT) $(KO)
	$(UCC) $(UCFLAGS) -o $@ $(KVMCHECK_SRC)
# slat-nested-churn: L1's churn of small VMs on its own kvm_amd (nested SVM).
all: $(OUT)/slat-nested-churn
$(OUT)/slat-nested-churn: $(L)/tests/slat-nested-churn.c
	@mkdir -p $(OUT)
	$(UCC) $(UCFLAGS) -o $@ $<
endif

# slat-vmm: a VMM of the project's own over the KVM API (x86_64: boots a
# bzImage; arm64: an Image with a device tree). The common files and those of
# one architecture (linux/vmm/vmm.h lists them).
VMMCOMMON := $(addprefix $(L)/vmm/,slat-vmm.c vmm_uart.c vmm_virtio_mmio.c vmm_virtio_blk.c \
                vmm_virtio_console.c vmm_fdt.c)
ifeq ($(GARCH),aarch64)
VMMSRC := $(VMMCOMMON) $(wildcard $(L)/vmm/vmm_arm64*.c)
else
VMMSRC := $(VMMCOMMON) $(wildcard $(L)/vmm/vmm_x86*.c) $(L)/vmm/vmm_legacy.c
endif
$(OUT)/slat-vmm: $(VMMSRC) $(wildcard $(L)/vmm/*.h)
	@mkdir -p $(OUT)
	$(UCC) $(UCFLAGS) -o $@ $(VMMSRC)

$(OUT)/slat-%: $(L)/tests/slat-%.c $(LIBSRC) $(LIBHDR)
	@mkdir -p $(OUT) $(KO)
	$(UCC) $(UCFLAGS) -o $@ $< $(LIBSRC)
