/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/lib/loader_view.h - what a loader sees of the firmware when it
 * starts: the EfiLoaderCode regions of the memory map (a loader that looks
 * for "its" LoaderCode region must find exactly its own image) and its load
 * options. Shared by tests/arch/x86/loader.c and tests/arch/arm64/loader.c.
 */
#ifndef TA_LOADER_VIEW_H
#define TA_LOADER_VIEW_H

/* Prints the verdicts loader-code-regions, loader-code-own-image and
 * load-options. Returns true when the load options are exactly "return"
 * (the payload should then return to its parent instead of powering off). */
int loader_view_checks(void);

/* Returns to the image that started this one (gBS->Exit, EFI_SUCCESS). */
void loader_view_return(void) __attribute__((noreturn));

#endif
