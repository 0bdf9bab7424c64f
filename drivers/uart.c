// SPDX-License-Identifier: Apache-2.0
//
// Glue between a UART driver and the log (core/log.h).
#include "drivers/uart.h"

static void uart_sink_write(void *ctx, const char *text, size_t len)
{
	struct uart *u = ctx;

	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\n')
			u->ops->putc(u, '\r');
		u->ops->putc(u, text[i]);
	}
}

static void uart_sink_flush(void *ctx)
{
	struct uart *u = ctx;

	u->ops->flush(u);
}

struct log_sink uart_log_sink(struct uart *u)
{
	return (struct log_sink){
	    .write = uart_sink_write,
	    .flush = uart_sink_flush,
	    .ctx = u,
	};
}
