// SPDX-License-Identifier: Apache-2.0
/*
 * The loader's view of the firmware: the EfiLoaderCode regions of the memory
 * map (only this payload's own image) and its load options (none when
 * slat.cfg's cmdline is empty). With the load options "return" it returns to
 * its parent instead of powering off (tests/boot/t_loader_return_*.sh).
 * The checks are tests/arch/lib/loader_view.c, shared by x86 and arm64.
 */
#include "tests/arch/lib/loader_view.h"
#include "tests/arch/lib/ta.h"

void ta_main(void)
{
	if (loader_view_checks())
		loader_view_return();
}
