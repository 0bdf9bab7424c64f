/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/lib/ta.h - the runtime of Slat's architectural test payloads.
 *
 * A payload is a small EFI application that checks what the CPU does (an
 * exception and its error code, a single-step trap, which value of CR4 is
 * refused...) and prints one verdict line per observation:
 *
 *     ARCHTEST <check>: <what was observed>
 *
 * then "ARCHTEST-END <n> verdicts" and powers the machine off. The harness
 * (tests/boot/arch_diff.sh) boots each payload twice with the same emulator
 * flags: bare (the payload is the firmware's boot image) and as the loader
 * Slat starts in its primary VM. Any difference between the two verdict lists
 * fails the test, so a verdict must state an observation that is the same on
 * every run of the same machine: no addresses, no timings (ta_verdict_ratio
 * and ranges are for that), no counts of things that legitimately vary.
 *
 * Output goes straight to the first UART (x86: COM1 at 0x3F8, arm64: the
 * PL011 of QEMU virt), polled, so that exception handlers can print.
 */
#ifndef TA_H
#define TA_H

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>

/* Defined by each payload: run the checks; ta_main returns to power off. */
void ta_main(void);

/* printf subset: %s %c %d %u %x %lx %llx %llu %lld %p %%, with field width
 * and '0' padding for the integer forms (%08x, %16llx). */
void ta_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ta_vprintf(const char *fmt, va_list ap);

/* One verdict line: "ARCHTEST <check>: <formatted text>". */
void ta_verdict(const char *check, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Diagnostic line the harness does not compare ("ARCHINFO ..."): timings,
 * addresses, anything that may differ between runs. */
void ta_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Number of verdicts printed so far. */
unsigned ta_verdict_count(void);

/* Prints ARCHTEST-END and powers off through EFI ResetSystem; never returns. */
void ta_finish(void) __attribute__((noreturn));

/* Stops the run at once with a visible reason ("ARCHTEST-ABORT ..."). */
void ta_abort(const char *why) __attribute__((noreturn));

/* The EFI system table and image handle (for payloads that need boot
 * services: AllocatePages, the ACPI tables, GetMemoryMap...). Typed void *
 * so that this header needs no EFI headers; include ta_efi.h for the types. */
extern void *ta_system_table;
extern void *ta_image_handle;

/* Architecture part (tests/arch/<arch>/lib/ta_arch.c). */
void ta_arch_uart_init(void);
void ta_arch_putc(char c);

/* Small helpers every payload wants. */
void *ta_memset(void *dst, int c, size_t n);
void *ta_memcpy(void *dst, const void *src, size_t n);

#endif
