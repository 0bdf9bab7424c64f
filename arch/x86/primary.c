// SPDX-License-Identifier: Apache-2.0
//
// x86 side of arch_enter_hypervisor() (arch/arch.h). The SVM and VMX primary
// VMs are separate issues; until one lands, x86 declines cleanly so that
// boot/ keeps one architecture-neutral flow and the firmware keeps the machine.
#include "arch/arch.h"
#include "core/log.h"

int arch_enter_hypervisor(struct slat_plan *plan)
{
	(void)plan;
	log_err("x86: the primary VM is not implemented yet (SVM/VMX issues)\n");
	return -1;
}
