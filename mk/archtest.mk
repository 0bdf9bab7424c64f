# SPDX-License-Identifier: Apache-2.0
#
# Architectural test payloads (tests/arch/, see tests/arch/README.md): small
# EFI applications, one per tests/arch/<dir>/<name>.c, each linked with the
# shared runtime (tests/arch/lib/) and its architecture's support
# (tests/arch/<dir>/lib/). Built like slat.efi (clang for the *-windows
# targets, lld-link) but with nothing of Slat's code in them.
#
#   make archtest          every payload: build/<arch>/arch/<name>.efi

ARCHTEST_DIR_x86_64  := x86
ARCHTEST_DIR_aarch64 := arm64

archtest_names = $(basename $(notdir $(wildcard tests/arch/$(ARCHTEST_DIR_$(1))/*.c)))
archtest_lib_srcs = $(wildcard tests/arch/lib/*.c tests/arch/$(ARCHTEST_DIR_$(1))/lib/*.c \
	tests/arch/$(ARCHTEST_DIR_$(1))/lib/*.S)
archtest_lib_objs = $(patsubst %,$(BUILD)/$(1)/archobj/%.obj,$(basename $(call archtest_lib_srcs,$(1))))
ARCHTEST_IMAGES = $(foreach a,$(EFI_ARCHES),$(patsubst %,$(BUILD)/$(a)/arch/%.efi,$(call archtest_names,$(a))))

archtest_cflags = $(filter-out -DSLAT_EFI=1 -Iarch/%,$(call efi_cflags,$(1))) -DSLAT_ARCHTEST=1

define archtest_image
$(BUILD)/$(1)/archobj/%.obj: %.c $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(Q)$(EFI_CC) $$(call archtest_cflags,$(1)) -c $$< -o $$@

$(BUILD)/$(1)/archobj/%.obj: %.S $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(Q)$(EFI_CC) $$(call archtest_cflags,$(1)) -c $$< -o $$@

$(BUILD)/$(1)/arch/%.efi: $(BUILD)/$(1)/archobj/tests/arch/$(ARCHTEST_DIR_$(1))/%.obj \
		$$(call archtest_lib_objs,$(1))
	@mkdir -p $$(@D)
	$(Q)$(EFI_LD) -nologo -subsystem:efi_application -entry:efi_main -nodefaultlib \
		-out:$$@ $$^
	@echo "  EFI     $$@"
endef
$(foreach a,$(EFI_ARCHES),$(eval $(call archtest_image,$(a))))

.PHONY: archtest
archtest: $(ARCHTEST_IMAGES)

-include $(shell find $(BUILD)/aarch64/archobj $(BUILD)/x86_64/archobj -name '*.d' 2>/dev/null)
