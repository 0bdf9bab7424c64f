// SPDX-License-Identifier: Apache-2.0
//
// The end of a VM on every path: its SLAT torn down through the arch contract
// and the exit summary printed with the figures of both (see core/vm_arch.h).
#include "core/vm_arch.h"

void vm_teardown_and_report(struct vm *vm, const char *event)
{
	struct exit_summary s = {.event = event};
	struct vm_teardown_counts td;

	s.uptime_us = vm_arch_uptime_us(vm);
	vm_arch_mm_counts(vm, &s.live); // before the teardown empties them
	vm_arch_teardown(vm, &td);
	s.teardown_pages = td.pages_freed;
	s.teardown_invalidations = td.invalidations;
	vm_print_exit_summary(vm, &s);
}
