// SPDX-License-Identifier: Apache-2.0
/* tests/arch/x86/lib/exc_idt.c - the payloads' IDT for vectors 0-31 (exc.h). */
#include "tests/arch/lib/ta.h"
#include "tests/arch/x86/lib/exc.h"

volatile struct exc_record exc_rec;
volatile uint64_t exc_resume;
volatile uint64_t exc_base;

extern const uint64_t exc_stub_table[32];

static uint8_t fw_idtr[10];
static uint64_t idt[256 * 2] __attribute__((aligned(16)));

static void sidt(uint8_t out[10])
{
	__asm__ volatile("sidt %0" : "=m"(*(uint8_t(*)[10])out));
}

static void lidt(const uint8_t in[10])
{
	__asm__ volatile("lidt %0" : : "m"(*(const uint8_t(*)[10])in));
}

void exc_install(void)
{
	uint8_t mine[10];
	uint16_t limit, cs;
	uint64_t base;

	sidt(fw_idtr);
	ta_memcpy(&limit, fw_idtr, 2);
	ta_memcpy(&base, fw_idtr + 2, 8);
	if (limit > sizeof(idt) - 1)
		limit = sizeof(idt) - 1;
	ta_memset(idt, 0, sizeof(idt));
	ta_memcpy(idt, (const void *)(uintptr_t)base, (size_t)limit + 1);
	__asm__ volatile("mov %%cs, %0" : "=r"(cs));
	for (unsigned v = 0; v < 32; v++) {
		uint64_t h = exc_stub_table[v];
		/* 64-bit interrupt gate, DPL 0, present, IST 0. */
		idt[2 * v] = (h & 0xffff) | ((uint64_t)cs << 16) | (0x8eull << 40) |
			     ((h >> 16 & 0xffff) << 48);
		idt[2 * v + 1] = h >> 32;
	}
	limit = sizeof(idt) - 1;
	base = (uint64_t)(uintptr_t)idt;
	ta_memcpy(mine, &limit, 2);
	ta_memcpy(mine + 2, &base, 8);
	lidt(mine);
}

void exc_restore(void)
{
	lidt(fw_idtr);
}

void exc_begin(void)
{
	ta_memset((void *)&exc_rec, 0, sizeof(exc_rec));
	__asm__ volatile("mov %0, %%dr6" : : "r"(0xffff0ff0ull));
}

void exc_unexpected(void);
void exc_unexpected(void)
{
	ta_printf("ARCHTEST-ABORT unexpected exception %llu (error 0x%llx) at RIP 0x%llx\n",
		  (unsigned long long)exc_rec.vector, (unsigned long long)exc_rec.error,
		  (unsigned long long)exc_rec.rip);
	exc_restore();
	ta_abort("unexpected exception");
}

static const char *const mnemonic[32] = {
    "#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "#09", "#TS",
    "#NP", "#SS", "#GP", "#PF", "#15", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP",
};

/* Vectors that push an error code (the stubs push 0 for the others). */
static int has_error(uint64_t v)
{
	return v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 || v == 30;
}

static unsigned put_str(char *buf, unsigned pos, unsigned len, const char *s)
{
	while (*s && pos + 1 < len)
		buf[pos++] = *s++;
	buf[pos] = 0;
	return pos;
}

static unsigned put_hex(char *buf, unsigned pos, unsigned len, uint64_t v)
{
	char tmp[17];
	unsigned n = 0;
	do {
		unsigned d = (unsigned)(v & 15);
		tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v >>= 4;
	} while (v);
	pos = put_str(buf, pos, len, "0x");
	while (n && pos + 1 < len)
		buf[pos++] = tmp[--n];
	buf[pos] = 0;
	return pos;
}

const char *exc_name(const struct exc_record *r, char *buf, unsigned len)
{
	unsigned pos = 0;

	if (!r->count)
		return "none";
	if (r->vector < 32 && mnemonic[r->vector])
		pos = put_str(buf, pos, len, mnemonic[r->vector]);
	else
		pos = put_hex(buf, put_str(buf, pos, len, "vector "), len, r->vector);
	if (has_error(r->vector)) {
		pos = put_str(buf, pos, len, "(");
		pos = r->error ? put_hex(buf, pos, len, r->error) : put_str(buf, pos, len, "0");
		pos = put_str(buf, pos, len, ")");
	}
	if (r->count > 1)
		put_str(buf, pos, len, " (more than one)");
	return buf;
}
