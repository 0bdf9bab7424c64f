# SPDX-License-Identifier: Apache-2.0
#
# Emulator boot tests and `make run`. The emulator command lines live in one
# place, tools/emu.sh, shared by `make run` and tests/boot/lib.sh.
#
#   make run                       QEMU arm64 virt (EL2), -cpu cortex-a72
#   make run ARCH=x86_64           QEMU x86-64 -cpu max (AMD SVM + NPT)
#   make run ARCH=x86_64 CPU=intel Bochs corei7_skylake_x (Intel VT-x + EPT)
#   make run ARCH=aarch64 CPU=max,pauth=off    any QEMU -cpu for arm64
#   make boot-test                 only the boot stage of tests/run.sh
#
# RUN_FILES="SRC=ESP_PATH ..." adds files to the ESP of `make run`.

TEST_STAGES ?= unit boot bench
RUN_FILES ?=

run: deps $(BUILD)/$(ARCH)/slat.efi
	$(Q)bash tools/emu.sh run $(ARCH) $(CPU) $(RUN_FILES)

boot-test: deps $(EFI_IMAGES)
	$(Q)bash tests/run.sh boot
