# SPDX-License-Identifier: Apache-2.0
#
# Emulator boot tests and `make run`. The emulator command lines live in one
# place, tools/emu.sh, shared by `make run` and tests/boot/lib.sh.
#
#   make run                       QEMU arm64 virt (EL2), -cpu cortex-a72: Slat boots
#                                  Debian's kernel to a busybox shell; in it,
#                                  /vm/run-vm.sh boots a Linux secondary
#   make run ARCH=x86_64           QEMU x86-64 -cpu max (AMD SVM + NPT); in the
#                                  shell, /vm/run-vm.sh boots a Linux secondary
#   make run ARCH=x86_64 CPU=intel Bochs corei7_skylake_x (Intel VT-x + EPT)
#   make run ARCH=aarch64 CPU=max,pauth=off    any QEMU -cpu for arm64
#   make run ACCEL=kvm             QEMU -accel kvm -cpu host on an x86-64 host with
#                                  nested KVM: Slat takes VT-x on an Intel host, SVM
#                                  on an AMD host (tools/emu.sh kvm-check); refused,
#                                  before anything is built, without /dev/kvm,
#                                  vmx/svm or nested=1. Default: ACCEL=tcg.
#   make boot-test                 only the boot stage of tests/run.sh
#
# RUN_FILES="SRC=ESP_PATH ..." adds files to the ESP of `make run`.

TEST_STAGES ?= unit boot bench
RUN_FILES ?=

# arm64: slat.efi boots Debian's kernel (make guest-aarch64) on 2 CPUs to an
# interactive busybox shell on the serial console (`exit` powers off), with
# the VM kernel for slat-vmm in the initramfs (tools/vmm-initrd.sh aarch64:
# /vm/run-vm.sh boots a Linux secondary with a shell).
RUN_CFG_aarch64   := $(BUILD)/run/aarch64.slat.cfg
RUN_DEPS_aarch64  := guest-aarch64 vmm-initrd-aarch64 $(RUN_CFG_aarch64)
RUN_FILES_aarch64 := $(RUN_CFG_aarch64)=slat.cfg \
	$(BUILD)/guest/aarch64/vmlinuz=slat/vmlinuz $(BUILD)/guest/aarch64/initrd-vmm.img=slat/initrd.img
RUN_ENV_aarch64   := EMU_ESP_CYL=128 EMU_SMP=2
$(RUN_CFG_aarch64): mk/boot.mk
	@mkdir -p $(@D)
	@printf '%s\n' 'loader  = \slat\vmlinuz' 'initrd  = \slat\initrd.img' \
		'cmdline = console=ttyAMA0' > $@

# x86_64 (CPU=amd, QEMU -cpu max): the same on AMD SVM + NPT, console ttyS0,
# with the VM kernel for slat-vmm in the initramfs (tools/vmm-initrd.sh:
# /vm/run-vm.sh boots a Linux secondary with a shell); CPU=intel: Bochs
# corei7_skylake_x (VT-x + EPT), the terminal is COM1, the plain initramfs.
RUN_CFG_x86_64    := $(BUILD)/run/x86_64.slat.cfg
RUN_INITRD_x86_64 := $(if $(filter amd,$(CPU)),initrd-vmm.img,initrd.img)
RUN_DEPS_x86_64   := $(if $(filter amd intel,$(CPU)),guest-x86_64 $(if $(filter amd,$(CPU)),vmm-initrd,) \
	$(RUN_CFG_x86_64),)
RUN_FILES_x86_64  := $(if $(filter amd intel,$(CPU)),$(RUN_CFG_x86_64)=slat.cfg \
	$(BUILD)/guest/x86_64/vmlinuz=slat/vmlinuz \
	$(BUILD)/guest/x86_64/$(RUN_INITRD_x86_64)=slat/initrd.img,)
RUN_ENV_x86_64   := $(if $(filter amd intel,$(CPU)),EMU_ESP_CYL=128 EMU_SMP=2,)
$(RUN_CFG_x86_64): mk/boot.mk
	@mkdir -p $(@D)
	@printf '%s\n' 'loader  = \slat\vmlinuz' 'initrd  = \slat\initrd.img' \
		'cmdline = console=ttyS0,115200' > $@

.PHONY: vmm-initrd vmm-initrd-aarch64
vmm-initrd: guest-x86_64
	$(Q)bash tools/vmm-initrd.sh >/dev/null
# arm64's (tests/slow/t_arm64_vmm_reference.sh): build/guest/aarch64/initrd-vmm.img.
vmm-initrd-aarch64: guest-aarch64
	$(Q)bash tools/vmm-initrd.sh aarch64 >/dev/null

# ACCEL=kvm is checked when the makefile is read, so that a host that cannot
# run it gets the reason at once and nothing is installed or built.
ifeq ($(filter run,$(MAKECMDGOALS)),run)
ifeq ($(ACCEL),kvm)
RUN_KVM_REFUSAL := $(shell bash tools/emu.sh kvm-check $(ARCH) 2>&1 >/dev/null)
$(if $(RUN_KVM_REFUSAL),$(error $(RUN_KVM_REFUSAL)))
else ifneq ($(filter-out tcg,$(ACCEL)),)
$(error ACCEL=$(ACCEL): use tcg (the default) or kvm)
endif
endif

run: deps $(BUILD)/$(ARCH)/slat.efi $(RUN_DEPS_$(ARCH))
	$(Q)$(RUN_ENV_$(ARCH)) EMU_ACCEL=$(or $(ACCEL),tcg) bash tools/emu.sh run $(ARCH) \
		'$(CPU)' $(RUN_FILES_$(ARCH)) $(RUN_FILES)

boot-test: deps $(EFI_IMAGES)
	$(Q)bash tests/run.sh boot
