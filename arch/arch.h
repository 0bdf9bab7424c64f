// SPDX-License-Identifier: Apache-2.0
//
// The architecture contract of slat.efi: what boot/ asks of arch/arm64 and
// arch/x86. The boot flow is
//
//   arch_console_init()      serial console up, installed as the log sink
//   arch_probe()             read the CPU's identification registers once
//   arch_report()            log what the CPU offers for virtualization
//   arch_virt_unusable()     NULL, or why Slat cannot run on this CPU
//   arch_enter_hypervisor()  deprivilege the firmware into the primary VM
//
// The capability record is opaque to boot/: each architecture defines
// `struct arch_caps` in its own directory. Every function here runs on the
// boot CPU with boot services available.
#ifndef SLAT_ARCH_ARCH_H
#define SLAT_ARCH_ARCH_H

#include <stdbool.h>

#include "core/fw_info.h"

struct arch_caps;

// "aarch64" or "x86_64".
const char *arch_name(void);

// A number unique to the calling CPU (from its hardware id: MPIDR affinity,
// initial APIC ID). Safe in exception handlers.
unsigned arch_cpu_id(void);

// Brings up the console UART (the firmware's SPCR/DT choice, else the board
// default) and installs it with log_set_sink(). Never uses UEFI ConOut.
void arch_console_init(const struct fw_info *fw);

// Probes the boot CPU. The record lives in static storage and stays valid.
const struct arch_caps *arch_probe(const struct fw_info *fw);

// Logs the capabilities, one topic per line.
void arch_report(const struct arch_caps *caps);

// NULL when the CPU offers what Slat needs (EL2 + stage-2, SVM + NPT, or VMX
// + EPT); otherwise one sentence saying what is missing.
const char *arch_virt_unusable(const struct arch_caps *caps);

// Makes instructions just written to [p, p + n) by data stores visible to
// instruction fetch on this CPU (arm64: clean D-cache and invalidate I-cache
// to the point of unification; x86: nothing, its caches are coherent).
void arch_sync_icache(const void *p, unsigned long long n);

struct slat_plan;

// Bytes Slat's region needs beyond its usual size on this CPU: x86 without
// 1 GiB pages maps the primary's guest-physical space (up to 2^40) in 2 MiB
// leaves, one table page per GiB (arm64: 0).
unsigned long long arch_region_extra(void);

// Takes the hypervisor mode of the boot CPU with Slat's resident copy
// (core/plan.h) and returns to the caller *inside the primary VM* (arm64: at
// EL1 under Slat's stage-2), with the firmware still usable: 0. On failure
// nothing has changed for the firmware and it returns non-zero after logging
// why. Boot services must still be available.
int arch_enter_hypervisor(struct slat_plan *plan);

#endif
