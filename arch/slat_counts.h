// SPDX-License-Identifier: Apache-2.0
//
// The exit summary's view of a VM's second-level translation (core/vm.h
// `struct slat_mm_counts`), read from the mm/ engine's statistics of that
// VM's engine VM: the one statistics structure every path shares.
#ifndef SLAT_ARCH_SLAT_COUNTS_H
#define SLAT_ARCH_SLAT_COUNTS_H

#include "core/vm.h"
#include "mm/s2.h"

static inline struct slat_mm_counts slat_mm_counts_of(struct s2_vm *vm)
{
	struct s2_stats st;

	if (!vm)
		return (struct slat_mm_counts){0}; // nothing built yet
	s2_vm_stats(vm, &st);
	return (struct slat_mm_counts){
	    .table_pages = st.tables_live,
	    .table_pages_max = st.tables_max,
	    .invalidations = st.inval_context + st.inval_range,
	    .cmos = st.cmo_calls,
	};
}

#endif
