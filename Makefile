# SPDX-License-Identifier: Apache-2.0
#
# Slat top-level Makefile. The two commands a new user types are `make run` and
# `make test`; both install missing Debian packages first (tools/deps.sh).
#
#   make            build build/aarch64/slat.efi and build/x86_64/slat.efi
#   make run        boot Slat under emulation (ARCH=aarch64 | x86_64, CPU=amd | intel;
#                   ACCEL=kvm: nested under the host's KVM, see mk/boot.mk)
#   make image      build/ARCH/slat.img: a GPT disk image for a USB stick (mk/image.mk;
#                   SIGN=1: slat.efi signed for Secure Boot)
#   make test       unit tests (ASan+UBSan, TSan) and emulator boot tests
#   make unit       unit tests only;  make boot-test  boot tests only
#   make test-slow  boot tests too slow for CI (tests/slow: VT-x KVM selftests in Bochs)
#   make conformance  every KVM selftest on Slat and on Linux's KVM: docs/kvm-conformance.md
#   make bench      benchmarks (JSON + plots in build/bench/)
#   make fmt        clang-format every C source and header
#   make compile_commands.json   for editors (clangd)

ACCEL ?=
# ACCEL=kvm runs the host's own architecture unless ARCH says otherwise.
ifeq ($(ACCEL),kvm)
ARCH ?= $(shell uname -m)
endif
ARCH ?= aarch64
CPU  ?= $(if $(filter x86_64,$(ARCH)),amd,)
BUILD := build
V ?= 0
Q := $(if $(filter 1,$(V)),,@)

.DEFAULT_GOAL := all
.PHONY: all deps run image test test-slow conformance unit boot-test bench fmt clean distclean

# Stamp so that deps.sh runs once per checkout unless the script changes.
DEPS_STAMP := $(BUILD)/deps/.stamp
$(DEPS_STAMP): tools/deps.sh
	$(Q)bash tools/deps.sh
	$(Q)mkdir -p $(@D) && touch $@
deps: $(DEPS_STAMP)

include mk/efi.mk
include mk/hosted.mk
include mk/guest.mk
include mk/boot.mk
include mk/image.mk
include mk/bench.mk
include mk/archtest.mk

all: $(EFI_IMAGES)

test: deps
	$(Q)bash tests/run.sh $(TEST_STAGES)

test-slow: deps
	$(Q)bash tests/run.sh slow

# About 40 minutes on the loaded 2-core machine (tools/kvm-conformance.sh; KVM_CONF_LIMIT,
# KVM_CONF_ONLY there); rewrites docs/kvm-conformance.{md,json}.
conformance: deps
	$(Q)bash tools/kvm-conformance.sh

fmt:
	$(Q)git ls-files '*.c' '*.h' ':!:*.S.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD)/aarch64 $(BUILD)/x86_64 $(BUILD)/hosted $(BUILD)/test $(BUILD)/bench

distclean:
	rm -rf $(BUILD) compile_commands.json
