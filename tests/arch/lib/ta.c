// SPDX-License-Identifier: Apache-2.0
/*
 * tests/arch/lib/ta.c - entry point, console and verdict protocol of the
 * architectural test payloads (see ta.h).
 */
#include "ta_efi.h"

void *ta_system_table;
void *ta_image_handle;
static unsigned verdicts;

void *ta_memset(void *dst, int c, size_t n)
{
	volatile uint8_t *d = dst;
	while (n--)
		*d++ = (uint8_t)c;
	return dst;
}

void *ta_memcpy(void *dst, const void *src, size_t n)
{
	volatile uint8_t *d = dst;
	const uint8_t *s = src;
	while (n--)
		*d++ = *s++;
	return dst;
}

/* The compiler may emit calls to these for struct copies and zeroing. */
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n)
{
	return ta_memset(dst, c, n);
}
void *memcpy(void *dst, const void *src, size_t n)
{
	return ta_memcpy(dst, src, n);
}

static void put(char c)
{
	if (c == '\n')
		ta_arch_putc('\r');
	ta_arch_putc(c);
}

static void puts_n(const char *s)
{
	while (*s)
		put(*s++);
}

/* One integer in base 10 or 16, at least `width` characters wide. */
static void put_uint(uint64_t v, unsigned base, unsigned width, char pad)
{
	char buf[24];
	unsigned n = 0;
	do {
		unsigned d = (unsigned)(v % base);
		buf[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
		v /= base;
	} while (v);
	while (width > n) {
		put(pad);
		width--;
	}
	while (n)
		put(buf[--n]);
}

void ta_vprintf(const char *fmt, va_list ap)
{
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(*fmt);
			continue;
		}
		fmt++;
		char pad = ' ';
		unsigned width = 0, longs = 0;
		if (*fmt == '0') {
			pad = '0';
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (unsigned)(*fmt++ - '0');
		while (*fmt == 'l') {
			longs++;
			fmt++;
		}
		/* long is 32 bits on the EFI targets (LLP64): %l is 32, %ll 64. */
		uint64_t u;
		int64_t s;
		switch (*fmt) {
		case 's': {
			const char *str = va_arg(ap, const char *);
			puts_n(str ? str : "(null)");
			break;
		}
		case 'c':
			put((char)va_arg(ap, int));
			break;
		case 'd':
			s = longs >= 2 ? va_arg(ap, long long) : longs ? va_arg(ap, long) : va_arg(ap, int);
			if (s < 0) {
				put('-');
				u = (uint64_t)0 - (uint64_t)s;
			} else {
				u = (uint64_t)s;
			}
			put_uint(u, 10, width, pad);
			break;
		case 'u':
		case 'x':
			u = longs >= 2 ? va_arg(ap, unsigned long long)
			    : longs    ? va_arg(ap, unsigned long)
				       : va_arg(ap, unsigned);
			put_uint(u, *fmt == 'u' ? 10 : 16, width, pad);
			break;
		case 'p':
			puts_n("0x");
			put_uint((uintptr_t)va_arg(ap, void *), 16, 0, ' ');
			break;
		case '%':
			put('%');
			break;
		default:
			put('%');
			put(*fmt);
			if (!*fmt)
				return;
		}
	}
}

void ta_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ta_vprintf(fmt, ap);
	va_end(ap);
}

void ta_verdict(const char *check, const char *fmt, ...)
{
	va_list ap;
	verdicts++;
	ta_printf("ARCHTEST %s: ", check);
	va_start(ap, fmt);
	ta_vprintf(fmt, ap);
	va_end(ap);
	put('\n');
}

void ta_info(const char *fmt, ...)
{
	va_list ap;
	puts_n("ARCHINFO ");
	va_start(ap, fmt);
	ta_vprintf(fmt, ap);
	va_end(ap);
	put('\n');
}

unsigned ta_verdict_count(void)
{
	return verdicts;
}

static void power_off(void)
{
	EFI_SYSTEM_TABLE *st = ta_st();
	st->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	ta_printf("ARCHTEST-ABORT ResetSystem returned\n");
	for (;;)
		;
}

void ta_finish(void)
{
	ta_printf("ARCHTEST-END %u verdicts\n", verdicts);
	power_off();
	for (;;)
		;
}

void ta_abort(const char *why)
{
	ta_printf("ARCHTEST-ABORT %s\n", why);
	power_off();
	for (;;)
		;
}

void *ta_config_table(const EFI_GUID *guid)
{
	EFI_SYSTEM_TABLE *st = ta_st();
	for (UINTN i = 0; i < st->NumberOfTableEntries; i++) {
		const EFI_GUID *g = &st->ConfigurationTable[i].VendorGuid;
		const uint8_t *a = (const uint8_t *)g, *b = (const uint8_t *)guid;
		int same = 1;
		for (unsigned k = 0; k < sizeof(EFI_GUID); k++)
			same &= a[k] == b[k];
		if (same)
			return st->ConfigurationTable[i].VendorTable;
	}
	return NULL;
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);
EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	ta_image_handle = image;
	ta_system_table = st;
	/* The firmware's watchdog would reset a long payload after 5 minutes. */
	st->BootServices->SetWatchdogTimer(0, 0, 0, NULL);
	ta_arch_uart_init();
	ta_printf("ARCHTEST-BEGIN\n");
	ta_main();
	ta_finish();
	return EFI_SUCCESS; /* not reached */
}
