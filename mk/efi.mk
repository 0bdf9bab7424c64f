# SPDX-License-Identifier: Apache-2.0
#
# slat.efi for aarch64 and x86_64: clang compiles for the *-unknown-windows
# targets (Microsoft ABI, PE/COFF objects) and lld-link links a PE32+ EFI
# application directly. Only GNU-EFI's headers are used, never its library.
#
# Interface used elsewhere (hosted.mk, boot.mk):
#   EFI_IMAGES          every slat.efi this file knows how to build
#   EFI_CC              the compiler
#   efi_cflags(arch)    compiler flags for one architecture
#   EFI_SRCS_<arch>     the C and assembly sources of one architecture's image
#
# Note the EFI targets are LLP64: `long` is 32 bits there. Portable code uses
# the <stdint.h> types.

EFI_ARCHES  := aarch64 x86_64
EFI_CC      := clang
# Extra compiler flags for slat.efi, e.g. -DSLAT_VMX_NATIVE_SIPI=1 (VT-x
# wait-for-SIPI instead of the INIT/SIPI mailbox; docs/vmx-primary.md).
EFI_EXTRA_CFLAGS ?=
EFI_LD      := lld-link
EFI_IMAGES  := $(foreach a,$(EFI_ARCHES),$(BUILD)/$(a)/slat.efi)

EFI_INC_x86_64  := /usr/include/efi
EFI_INC_aarch64 := $(BUILD)/deps/gnu-efi-arm64/usr/include/efi
EFI_TARGET_x86_64  := x86_64-unknown-windows
EFI_TARGET_aarch64 := aarch64-unknown-windows
EFI_ARCHDIR_x86_64  := x86
EFI_ARCHDIR_aarch64 := arm64
EFI_ARCHFLAGS_x86_64  := -mno-red-zone -DGNU_EFI_USE_MS_ABI
EFI_ARCHFLAGS_aarch64 :=

# The version string baked into the banner (git describe at build time). The
# header is rewritten only when the string changes, so objects that include it
# are rebuilt exactly then (through their dependency files).
SLAT_VERSION := $(shell git describe --always --dirty --tags 2>/dev/null || echo unknown)
EFI_GEN := $(BUILD)/gen
$(EFI_GEN)/slat_version.h: FORCE
	@mkdir -p $(@D)
	@# a per-process temporary: concurrent makes (benchmark scripts) must not
	@# race on one file
	@t=$@.tmp.$$$$; printf '#define SLAT_VERSION "%s"\n' '$(SLAT_VERSION)' > $$t; \
	cmp -s $$t $@ && rm -f $$t || mv -f $$t $@

efi_cflags = --target=$(EFI_TARGET_$(1)) -std=gnu11 -O2 -g0 \
	-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wimplicit-fallthrough \
	-Wno-unused-parameter \
	-ffreestanding -fno-builtin -fno-stack-protector -fno-stack-check \
	-mno-stack-arg-probe -fshort-wchar -mgeneral-regs-only -fno-jump-tables \
	$(EFI_ARCHFLAGS_$(1)) -DSLAT_EFI=1 $(EFI_EXTRA_CFLAGS) \
	-I. -Iarch/$(EFI_ARCHDIR_$(1))/inc -I$(EFI_GEN) -isystem $(EFI_INC_$(1)) -isystem $(EFI_INC_$(1))/$(1) -MMD -MP

# Generic code (boot/, drivers/, core/, mm/) plus the C library functions a
# freestanding image must bring itself (core/libc/: the hosted build has libc).
EFI_COMMON_SRCS = $(wildcard boot/*.c drivers/*.c core/*.c core/libc/*.c mm/*.c)
# Sub-folders of an arch directory that join its image (each back end adds its own).
EFI_SUBDIRS_x86_64 := svm vmx
EFI_SUBDIRS_aarch64 :=
efi_arch_srcs = $(wildcard arch/$(EFI_ARCHDIR_$(1))/*.c arch/$(EFI_ARCHDIR_$(1))/*.S \
	$(foreach d,$(EFI_SUBDIRS_$(1)),arch/$(EFI_ARCHDIR_$(1))/$(d)/*.c arch/$(EFI_ARCHDIR_$(1))/$(d)/*.S))

EFI_SRCS_x86_64  = $(sort $(EFI_COMMON_SRCS) $(call efi_arch_srcs,x86_64))
EFI_SRCS_aarch64 = $(sort $(EFI_COMMON_SRCS) $(call efi_arch_srcs,aarch64))

efi_objs = $(patsubst %,$(BUILD)/$(1)/obj/%.obj,$(basename $(EFI_SRCS_$(1))))

define efi_image
$(BUILD)/$(1)/obj/%.obj: %.c $(DEPS_STAMP) | $(EFI_GEN)/slat_version.h
	@mkdir -p $$(@D)
	$(Q)$(EFI_CC) $$(call efi_cflags,$(1)) -c $$< -o $$@

$(BUILD)/$(1)/obj/%.obj: %.S $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(Q)$(EFI_CC) $$(call efi_cflags,$(1)) -c $$< -o $$@

$(BUILD)/$(1)/slat.efi: $$(call efi_objs,$(1))
	@mkdir -p $$(@D)
	$(Q)$(EFI_LD) -nologo -subsystem:efi_application -entry:efi_main -nodefaultlib \
		-out:$$@ $$^
	@echo "  EFI     $$@"
endef
$(foreach a,$(EFI_ARCHES),$(eval $(call efi_image,$(a))))

.PHONY: efi
efi: $(EFI_IMAGES)

-include $(shell find $(BUILD)/aarch64/obj $(BUILD)/x86_64/obj -name '*.d' 2>/dev/null)
