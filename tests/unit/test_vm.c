// SPDX-License-Identifier: Apache-2.0
//
// core/vm: vCPU records keyed by hardware id, exit counting by reason, and the
// exact text of the exit summary the boot tests rely on.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/log.h"
#include "core/vm.h"
#include "core/vm_arch.h"

static char out[4096];
static size_t out_len;

static void capture(void *ctx, const char *text, size_t len)
{
	if (out_len + len < sizeof(out)) {
		memcpy(out + out_len, text, len);
		out_len += len;
		out[out_len] = '\0';
	}
}

static int setup(void **state)
{
	struct log_sink sink = {capture, NULL, NULL};
	log_set_sink(&sink);
	log_set_level(LOG_INFO);
	out_len = 0;
	out[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	log_set_sink(NULL);
	return 0;
}

static void test_vcpu_slots(void **state)
{
	struct vcpu v[2];
	struct vm vm;

	vm_init(&vm, 0, "primary", "stage-2", NULL, v, 2);
	assert_null(vm_vcpu_find(&vm, 0x100));
	struct vcpu *a = vm_vcpu_for(&vm, 0x100);
	struct vcpu *b = vm_vcpu_for(&vm, 0x1);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal(a->index, 0);
	assert_int_equal(b->index, 1);
	assert_ptr_equal(vm_vcpu_for(&vm, 0x100), a); // same id, same record
	assert_ptr_equal(vm_vcpu_find(&vm, 0x1), b);
	assert_null(vm_vcpu_for(&vm, 0x2));	   // full
	assert_null(vm_vcpu_for(&vm, UINT64_MAX)); // the free marker is not an id
}

static void test_counts_and_names(void **state)
{
	struct vcpu v[2];
	struct vm vm;

	vm_init(&vm, 0, "primary", "stage-2", NULL, v, 2);
	struct vcpu *a = vm_vcpu_for(&vm, 0), *b = vm_vcpu_for(&vm, 1);
	vcpu_count_exit(a, EXIT_FIRMWARE_CALL);
	vcpu_count_exit(a, EXIT_FIRMWARE_CALL);
	vcpu_count_exit(b, EXIT_SLAT_FAULT);
	vcpu_count_exit(b, (enum exit_reason)99); // out of range: counted as other
	assert_int_equal(vm_exit_total(&vm, EXIT_FIRMWARE_CALL), 2);
	assert_int_equal(vm_exit_total(&vm, EXIT_SLAT_FAULT), 1);
	assert_int_equal(vm_exit_total(&vm, EXIT_OTHER), 1);
	assert_string_equal(exit_reason_name(EXIT_SLAT_FAULT), "slat-fault");
	assert_string_equal(exit_reason_name((enum exit_reason)99), "invalid");
}

static void test_summary_text(void **state)
{
	struct vcpu v[4];
	struct vm vm;

	vm_init(&vm, 0, "primary", "stage-2", NULL, v, 4);
	struct vcpu *a = vm_vcpu_for(&vm, 0), *b = vm_vcpu_for(&vm, 1);
	for (int i = 0; i < 8; i++)
		vcpu_count_exit(a, EXIT_FIRMWARE_CALL);
	vcpu_count_exit(b, EXIT_SLAT_FAULT);
	struct exit_summary s = {
	    .event = "power-off",
	    .uptime_us = 3421104,
	    .live = {.table_pages = 6, .table_pages_max = 7, .invalidations = 0, .cmos = 2},
	    .teardown_pages = 4,
	    .teardown_invalidations = 1,
	};
	vm_print_exit_summary(&vm, &s);
	assert_string_equal(
	    out, "slat: exit summary: vm primary power-off after 3.421104 s uptime, 2 vCPUs\n"
		 "slat: exits: 9 total\n"
		 "slat: exits: firmware-call  8 (vcpu0 8, vcpu1 0)\n"
		 "slat: exits: slat-fault     1 (vcpu0 0, vcpu1 1)\n"
		 "slat: stage-2: 6 table pages (max 7), 0 invalidations, 2 cache maintenance ops\n"
		 "slat: stage-2 teardown: 4 table pages freed, 1 invalidations\n");
}

// Second-level faults are reported once per page, for at most
// VM_FAULT_LOG_PAGES distinct pages (a retrying guest cannot flood the log).
static void test_fault_reported_once_per_page(void **state)
{
	assert_true(vm_fault_first_report(0x1234));
	assert_false(vm_fault_first_report(0x1234));
	for (uint64_t p = 1; p < VM_FAULT_LOG_PAGES; p++)
		assert_true(vm_fault_first_report(0x1234 + p));
	assert_false(vm_fault_first_report(0x9999)); // table full: quiet
	assert_false(vm_fault_first_report(0x1235));
}

// Record life cycle: FREE -> CREATED (claimed) -> RUNNING (entered) ->
// STOPPED (shutdown), with the VM's back pointer and identity set.
static void test_vcpu_life_cycle(void **state)
{
	struct vcpu v[2];
	struct vm vm;
	struct region hidden = {.base = 0x40000000, .size = 0x200000};

	vm_init(&vm, 3, "sec", "stage-2", &hidden, v, 2);
	assert_int_equal(vm.id, 3);
	assert_int_equal(vm.hidden.base, 0x40000000);
	assert_int_equal(v[1].state, VCPU_FREE);
	struct vcpu *a = vm_vcpu_for(&vm, 7);
	assert_ptr_equal(a->vm, &vm);
	assert_int_equal(a->state, VCPU_CREATED);
	assert_false(vcpu_has_run(a));
	vcpu_set_running(a);
	vcpu_set_running(a);
	assert_int_equal(a->state, VCPU_RUNNING);
	assert_true(vcpu_has_run(a));
	assert_false(vm_is_shutting_down(&vm));
	assert_true(vm_begin_shutdown(&vm));
	assert_false(vm_begin_shutdown(&vm)); // exactly one owner
	assert_true(vm_is_shutting_down(&vm));
	assert_int_equal(a->state, VCPU_STOPPED);
	assert_int_equal(v[1].state, VCPU_FREE); // never claimed: untouched
	vcpu_set_running(a);			 // a stopped vCPU does not come back
	assert_int_equal(a->state, VCPU_STOPPED);
}

// A hosted guest that exits `left` times through the CPUID path, then powers off.
struct countdown {
	int left;
};
static struct host_exit countdown_step(struct vcpu *v, void *ctx)
{
	struct countdown *c = ctx;

	if (c->left-- > 0)
		return (struct host_exit){.reason = EXIT_CPUID};
	return (struct host_exit){.reason = EXIT_HYPERCALL, .power_off = true};
}

// The hosted path through the arch contract: every exit is counted once and
// the run returns exactly when the guest powers its VM off.
static void test_hosted_run_contract(void **state)
{
	struct vcpu v[1];
	struct vm vm;
	struct countdown c = {.left = 5};
	struct host_guest g = {countdown_step, &c};

	vm_init(&vm, 1, "sec", "none", NULL, v, 1);
	assert_int_equal(vm_arch_init(&vm), 0);
	struct vcpu *a = vm_vcpu_for(&vm, 0);
	vcpu_arch_init(a);
	a->arch.guest = &g;
	vcpu_arch_run(a);
	assert_int_equal(vm_exit_total(&vm, EXIT_CPUID), 5);
	assert_int_equal(vm_exit_total(&vm, EXIT_HYPERCALL), 1);
	assert_int_equal(a->arch.entries, 6);
	assert_true(vm_is_shutting_down(&vm));
	assert_int_equal(a->state, VCPU_STOPPED);
	vcpu_arch_run(a); // a stopped VM is not entered again
	assert_int_equal(a->arch.entries, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_vcpu_slots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_counts_and_names, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_summary_text, setup, teardown),
	    cmocka_unit_test(test_fault_reported_once_per_page),
	    cmocka_unit_test(test_vcpu_life_cycle),
	    cmocka_unit_test(test_hosted_run_contract),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
