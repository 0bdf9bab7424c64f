/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/arch/x86/lib/exc.h - the payloads' own exception handling (vectors
 * 0-31) for the exc, step and crval payloads.
 *
 * exc_install() copies the firmware's IDT, points vectors 0-31 at
 * exc_stubs.S and loads the copy; exc_restore() puts the firmware's IDT back
 * (call it before returning). One trial is EXC_TRY(setup, insn, out): the
 * setup code runs, then `insn`; an exception there (or a single-step trap
 * after it) is recorded in `out` (vector, error code, RIP relative to the
 * start of `insn`, CR2, DR6) and execution resumes after `insn`. No exception:
 * out->count == 0. Interrupts are off for the trial; DR6 is reset to its
 * init value before it. Registers rax, rcx, rdx, rbx, rsi, rdi, r8-r11 are
 * free for the setup and the instruction.
 */
#ifndef TA_X86_EXC_H
#define TA_X86_EXC_H

#include <stdint.h>

struct exc_record {
	uint64_t vector, error, rip, cr2, dr6, rflags, count;
};

/* Written by the stubs (exc_stubs.S). */
extern volatile struct exc_record exc_rec;
extern volatile uint64_t exc_resume; /* where a handler resumes; 0: abort */
extern volatile uint64_t exc_base;   /* the address RIP is reported relative to */

void exc_install(void);
void exc_restore(void);
/* Clears exc_rec and DR6 before a trial. */
void exc_begin(void);
/* The trial's result, as a short deterministic text ("none", "#GP(0)",
 * "#PF(0x2)", "#DB"): vector and error code only. */
const char *exc_name(const struct exc_record *r, char *buf, unsigned len);

#define EXC_TRY(setup, insn, out, ...)                                                             \
	do {                                                                                       \
		uint64_t exc_flags_;                                                               \
		exc_begin();                                                                       \
		__asm__ volatile("pushfq; popq %0; cli" : "=r"(exc_flags_)::"memory");             \
		__asm__ volatile("leaq 8801f(%%rip), %%rax\n\t"                                    \
				 "movq %%rax, exc_resume(%%rip)\n\t"                               \
				 "leaq 8802f(%%rip), %%rax\n\t"                                    \
				 "movq %%rax, exc_base(%%rip)\n\t" setup "\n\t"                    \
				 "8802:\n\t" insn "\n\t"                                           \
				 "8801:\n\t"                                                       \
				 "movq $0, exc_resume(%%rip)\n\t"                                  \
				 :                                                                 \
				 : __VA_ARGS__                                                     \
				 : "rax", "rcx", "rdx", "rbx", "rsi", "rdi", "r8", "r9", "r10",    \
				   "r11", "memory", "cc");                                         \
		if (exc_flags_ & 0x200)                                                            \
			__asm__ volatile("sti" ::: "memory");                                      \
		*(out) = exc_rec;                                                                  \
		(out)->rip -= exc_base;                                                            \
	} while (0)

#endif
