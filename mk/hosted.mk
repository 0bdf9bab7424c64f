# SPDX-License-Identifier: Apache-2.0
#
# Hosted build: mm/ and core/ compiled for plain Linux user space against the
# host backend in arch/host/, plus the pure (no privileged instruction) format
# descriptors of arch/x86 and arch/arm64 (files named fmt_*.c). The same sources
# run under cmocka with ASan+UBSan, and the concurrency tests (tests/unit/*_mt.c)
# also under TSan.

HOSTED_CC     ?= clang
HOSTED_SRCS   := $(sort $(wildcard mm/*.c core/*.c arch/host/*.c \
                   arch/x86/fmt_*.c arch/arm64/fmt_*.c))
UNIT_TESTS    := $(sort $(wildcard tests/unit/test_*.c))
# Tests of arch/x86's shared layer: built against arch/x86/inc (x86's layout
# of struct vcpu / struct vm), with their own compile of core/, never linked
# with libslat.a (arch/host's layout). See the hosted-x86 variant below.
UNIT_X86_TESTS := $(filter tests/unit/test_x86_%.c,$(UNIT_TESTS))
UNIT_TESTS    := $(filter-out $(UNIT_X86_TESTS),$(UNIT_TESTS))
UNIT_MT_TESTS := $(filter %_mt.c,$(UNIT_TESTS))
UNIT_SUPPORT  := $(filter-out $(UNIT_TESTS) $(UNIT_X86_TESTS) tests/unit/fuzz_%.c,\
                   $(wildcard tests/unit/*.c))

HOSTED_WARN   := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
                 -Wmissing-prototypes -Wno-unused-parameter
HOSTED_CFLAGS := -std=gnu11 -g -O1 -fno-omit-frame-pointer $(HOSTED_WARN) \
                 -I. -Iarch/host/inc -DSLAT_HOSTED=1 -MMD -MP
SAN_asan      := -fsanitize=address,undefined -fno-sanitize-recover=all
SAN_tsan      := -fsanitize=thread
SAN_bench     := -O2 -DNDEBUG
HOSTED_LIBS   := -lcmocka -lpthread -lm
# Every test binary gets the per-test watchdog (a hang fails with its name).
UNIT_WATCHDOG := -include tests/unit/unit_watchdog.h

# $(call hosted_objs,VARIANT,SOURCES)
hosted_objs = $(patsubst %.c,$(BUILD)/hosted/$(1)/%.o,$(2))

define hosted_variant
$(BUILD)/hosted/$(1)/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $$(@D)
	$(Q)$(HOSTED_CC) $(HOSTED_CFLAGS) $(SAN_$(1)) \
	  $$(if $$(filter tests/unit/test_%,$$<),$(UNIT_WATCHDOG)) -c $$< -o $$@

$(BUILD)/hosted/$(1)/libslat.a: $(call hosted_objs,$(1),$(HOSTED_SRCS) $(UNIT_SUPPORT))
	@mkdir -p $$(@D)
	$(Q)rm -f $$@ && llvm-ar rcs $$@ $$^

$(BUILD)/hosted/$(1)/bin/%: $(BUILD)/hosted/$(1)/tests/unit/%.o $(BUILD)/hosted/$(1)/libslat.a
	@mkdir -p $$(@D)
	$(Q)$(HOSTED_CC) $(SAN_$(1)) $$^ $(HOSTED_LIBS) -o $$@
endef
$(foreach v,asan tsan bench,$(eval $(call hosted_variant,$(v))))

# hosted-x86: core/ and the x86 tests (which include the arch/x86 sources
# they test) compiled with -Iarch/x86/inc under ASan+UBSan; the binaries sit
# with the other ASan ones so that tests/run.sh runs them.
HOSTED_X86_CFLAGS := $(subst -Iarch/host/inc,-Iarch/x86/inc,$(HOSTED_CFLAGS))
HOSTED_X86_SRCS   := $(sort $(filter-out core/hv%.c,$(wildcard core/*.c)))

$(BUILD)/hosted/x86-asan/%.o: %.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(Q)$(HOSTED_CC) $(HOSTED_X86_CFLAGS) $(SAN_asan) \
	  $(if $(filter tests/unit/test_%,$<),$(UNIT_WATCHDOG)) -c $< -o $@

# A static pattern rule: it wins over the generic asan rule above whatever
# stale dependency files an older build left behind.
UNIT_BINS_X86 := $(patsubst tests/unit/%.c,$(BUILD)/hosted/asan/bin/%,$(UNIT_X86_TESTS))
$(UNIT_BINS_X86): $(BUILD)/hosted/asan/bin/%: $(BUILD)/hosted/x86-asan/tests/unit/%.o \
		$(call hosted_objs,x86-asan,$(HOSTED_X86_SRCS) tests/unit/unit_watchdog.c)
	@mkdir -p $(@D)
	$(Q)$(HOSTED_CC) $(SAN_asan) $^ $(HOSTED_LIBS) -o $@

UNIT_BINS_ASAN := $(patsubst tests/unit/%.c,$(BUILD)/hosted/asan/bin/%,$(UNIT_TESTS) $(UNIT_X86_TESTS))
UNIT_BINS_TSAN := $(patsubst tests/unit/%.c,$(BUILD)/hosted/tsan/bin/%,$(UNIT_MT_TESTS))

.PHONY: unit-build unit
unit-build: $(UNIT_BINS_ASAN) $(UNIT_BINS_TSAN)
unit: deps
	$(Q)bash tests/run.sh unit

-include $(shell find $(BUILD)/hosted -name '*.d' 2>/dev/null)

# compile_commands.json for clangd: hosted flags for generic code, EFI flags for
# boot/, drivers/ and arch/ code (see mk/efi.mk).
compile_commands.json: FORCE
	$(Q)python3 tools/compile_commands.py \
	  --hosted "$(HOSTED_CC) $(HOSTED_CFLAGS)" \
	  --hosted-srcs "$(HOSTED_SRCS) $(UNIT_TESTS) $(UNIT_SUPPORT)" \
	  --efi "$(EFI_CC) $(call efi_cflags,x86_64)" \
	  --efi-srcs "$(EFI_SRCS_x86_64)" \
	  --efi-arm64 "$(EFI_CC) $(call efi_cflags,aarch64)" \
	  --efi-arm64-srcs "$(EFI_SRCS_aarch64)" > $@
.PHONY: FORCE
FORCE:

include mk/fuzz.mk
