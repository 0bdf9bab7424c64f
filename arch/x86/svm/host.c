// SPDX-License-Identifier: Apache-2.0
//
// The SVM host's own state beyond the shared host environment
// (arch/x86/host_env.c): the I/O and MSR permission maps built from the
// shared layer's intercept lists, and the handler of exceptions taken in
// the host. The layout mirrors vmx/host.c.
#include "arch/arch.h"
#include "arch/x86/cpu.h"
#include "arch/x86/svm/svm.h"
#include "core/log.h"

void svm_iopm_build(uint8_t *iopm)
{
	for (uint32_t port = 0; port < 0x10000; port++) {
		if (x86_io_intercepted((uint16_t)port))
			iopm[port / 8] |= (uint8_t)(1u << (port % 8));
	}
}

// MSRPM: 2 bits (read, write) per MSR in three 2 KiB ranges.
static void msrpm_set(uint8_t *pm, uint32_t msr, bool rd, bool wr)
{
	uint32_t base;

	if (msr <= 0x1fff)
		base = 0;
	else if (msr >= 0xc0000000u && msr <= 0xc0001fffu)
		base = 0x800, msr -= 0xc0000000u;
	else if (msr >= 0xc0010000u && msr <= 0xc0011fffu)
		base = 0x1000, msr -= 0xc0010000u;
	else
		return;
	uint32_t bit = msr * 2;
	if (rd)
		pm[base + bit / 8] |= (uint8_t)(1u << (bit % 8));
	if (wr)
		pm[base + (bit + 1) / 8] |= (uint8_t)(1u << ((bit + 1) % 8));
}

void svm_msrpm_build(uint8_t *pm)
{
	for (unsigned i = 0; i < x86_n_msr_intercepts; i++) {
		const struct x86_msr_intercept *m = &x86_msr_intercepts[i];
		if (m->vmx_only)
			continue;
		for (uint32_t msr = m->first; msr <= m->last; msr++)
			msrpm_set(pm, msr, m->read, m->write);
	}
}

void svm_host_exception(uint64_t *f)
{
	log_err("svm: host exception %llu (error 0x%llx) at RIP 0x%llx, RSP 0x%llx, CR2 0x%llx on "
		"cpu %u\n",
		(unsigned long long)f[0], (unsigned long long)f[1], (unsigned long long)f[2],
		(unsigned long long)f[5], (unsigned long long)read_cr2(), arch_cpu_id());
	log_flush();
}
