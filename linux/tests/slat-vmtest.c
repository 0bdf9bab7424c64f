// SPDX-License-Identifier: Apache-2.0
//
// slat-vmtest: issue 14's scenario through /dev/slat. Each round: a VM with
// the control slot and 64 data slots, 2 vCPU threads that write and check a
// pattern; slot A deleted and slot B moved while the vCPUs run check passes
// over the others; the guest sees the move (old pattern at the new gpa) and
// the delete (an MMIO exit at the old gpa); VM_STATS shows that deleting a
// slot zaps exactly the leaves a pass over it mapped and that the other slots
// need no new mappings afterwards. Then destroy. 20 rounds; at the end Slat's
// pool has every deposited page back. One SLAT-GUEST line per check (round 1
// and failures; a summary per round), then PASS or FAIL.
#include "slatlib.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NSLOTS		      64
#define NVCPU		      2
#define SLOT_SIZE	      0x10000u
#define SLOT_GPA(i)	      (0x100000u * (i)) /* data slot i = 1..64 */
#define SLOT_A		      1			/* deleted */
#define SLOT_B		      2			/* moved */
#define SLOT_D		      (NSLOTS + 1)	/* added, passed over, deleted: the counters */
#define MOVE_GPA	      0x8000000u
#define D_GPA		      0x9000000u
#define STRIDE		      256u
#define ROUNDS		      20
#define MIN_CONCURRENT_PASSES 2

struct vmt {
	int sys, vm, round;
	uint8_t *ctrl, *mem; /* mem: NSLOTS + 1 slots of SLOT_SIZE */
	struct sl_vcpu vc[NVCPU];
	uint32_t seed;
	volatile int stop;
	unsigned passes[NVCPU], errors[NVCPU];
	char why[NVCPU][160];
	int failed;
};

static int checks_failed;

static void check(struct vmt *t, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check(struct vmt *t, bool ok, const char *fmt, ...)
{
	char buf[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!ok) {
		checks_failed++;
		t->failed = 1;
	}
	if (!ok || t->round == 1)
		sl_say("vmtest round %d: %s: %s", t->round, ok ? "ok" : "FAILED", buf);
}

static uint8_t *slot_mem(struct vmt *t, unsigned i)
{
	return t->mem + (size_t)(i - 1) * SLOT_SIZE;
}

/* One job over data slot i at gpa (pattern based on pbase); errors or -1. */
static long slot_job(struct vmt *t, unsigned v, uint32_t op, uint32_t gpa, uint32_t pbase,
		     char *why)
{
	struct sl_job j = {op, gpa, pbase, SLOT_SIZE, STRIDE, t->seed, v};
	struct sl_result r;

	if (sl_run_job(&t->vc[v], &j, &r)) {
		snprintf(why, 160, "job at %#x: %s", gpa, r.why);
		return -1;
	}
	if (r.words != SLOT_SIZE / STRIDE || r.mmio_exits) {
		snprintf(why, 160, "job at %#x: %u words, %u MMIO exits (first %#llx)", gpa,
			 r.words, r.mmio_exits, (unsigned long long)r.mmio_gpa);
		return -1;
	}
	if (r.errors)
		snprintf(why, 160, "job at %#x: %u bad words, first at %#x", gpa, r.errors,
			 r.first);
	return r.errors;
}

static bool mine(unsigned v, unsigned i)
{
	return i % NVCPU == v;
}

struct worker {
	struct vmt *t;
	unsigned v;
	int mode; /* 0: write+check own slots once; 1: check passes until stop */
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	struct vmt *t = w->t;
	unsigned v = w->v, i;
	long e;

	do {
		for (i = 1; i <= NSLOTS; i++) {
			if (!mine(v, i) || (w->mode && (i == SLOT_A || i == SLOT_B)))
				continue;
			e = slot_job(t, v, w->mode ? GJ_OP_CHECK : GJ_OP_WRITE | GJ_OP_CHECK,
				     SLOT_GPA(i), SLOT_GPA(i), t->why[v]);
			if (e < 0) {
				t->errors[v]++;
				return NULL;
			}
			t->errors[v] += e;
		}
		t->passes[v]++;
	} while (w->mode && (!t->stop || t->passes[v] < MIN_CONCURRENT_PASSES));
	return NULL;
}

static void run_workers(struct vmt *t, int mode, void (*during)(struct vmt *))
{
	pthread_t th[NVCPU];
	struct worker w[NVCPU];

	memset(t->passes, 0, sizeof(t->passes));
	memset(t->errors, 0, sizeof(t->errors));
	memset(t->why, 0, sizeof(t->why));
	t->stop = 0;
	for (unsigned v = 0; v < NVCPU; v++) {
		w[v] = (struct worker){t, v, mode};
		if (pthread_create(&th[v], NULL, worker, &w[v]))
			sl_die("vmtest: pthread_create failed");
	}
	if (during)
		during(t);
	t->stop = 1;
	for (unsigned v = 0; v < NVCPU; v++)
		pthread_join(th[v], NULL);
}

static void delete_and_move(struct vmt *t)
{
	int rd, rm;

	usleep(1000); /* let the check passes start */
	rd = sl_slot(t->vm, SLOT_A, SLOT_GPA(SLOT_A), 0, slot_mem(t, SLOT_A));
	rm = sl_slot(t->vm, SLOT_B, MOVE_GPA, SLOT_SIZE, slot_mem(t, SLOT_B));
	check(t, rd == 0 && rm == 0,
	      "slot %u deleted (%s), slot %u moved to %#x (%s) while the vCPUs ran", SLOT_A,
	      strerror(-rd), SLOT_B, MOVE_GPA, strerror(-rm));
}

static uint64_t leaves(const struct hc_vm_stats *s)
{
	return s->leaves_mapped[0] + s->leaves_mapped[1] + s->leaves_mapped[2] +
	       s->leaves_mapped[3];
}

static void vm_stats(struct vmt *t, struct hc_vm_stats *s)
{
	int rc = sl_vm_stats(t->vm, s);

	if (rc)
		sl_die("vmtest: VM_STATS: %s", strerror(-rc));
}

/* Re-check every live data slot (A deleted, B at MOVE_GPA); bad words. */
static long recheck_all(struct vmt *t, char *why)
{
	long bad = 0, e;

	for (unsigned i = 1; i <= NSLOTS; i++) {
		if (i == SLOT_A)
			continue;
		e = slot_job(t, i % NVCPU, GJ_OP_CHECK, i == SLOT_B ? MOVE_GPA : SLOT_GPA(i),
			     SLOT_GPA(i), why);
		if (e < 0)
			return -1;
		bad += e;
	}
	return bad;
}

static void counters(struct vmt *t)
{
	struct hc_vm_stats s1, s2, s3, s4;
	char why[160] = "";
	long e;
	int rc;

	e = recheck_all(t, why); /* everything mapped before the baseline */
	check(t, e == 0, "re-check of 63 live slots: %ld bad %s", e, why);
	rc = sl_slot(t->vm, SLOT_D, D_GPA, SLOT_SIZE, slot_mem(t, SLOT_D));
	check(t, rc == 0, "slot %u added at %#x while the VM lives (%s)", SLOT_D, D_GPA,
	      strerror(-rc));
	vm_stats(t, &s1);
	e = slot_job(t, 1, GJ_OP_WRITE | GJ_OP_CHECK, D_GPA, D_GPA, why);
	vm_stats(t, &s2);
	uint64_t mapped = leaves(&s2) - leaves(&s1);
	uint64_t faults = (s2.faults - s2.faults_mmio) - (s1.faults - s1.faults_mmio);
	check(t, e == 0 && mapped > 0 && faults > 0,
	      "pass over slot %u: %ld bad, %llu faults, %llu leaves mapped %s", SLOT_D, e,
	      (unsigned long long)faults, (unsigned long long)mapped, why);
	rc = sl_slot(t->vm, SLOT_D, D_GPA, 0, slot_mem(t, SLOT_D));
	vm_stats(t, &s3);
	uint64_t zapped = s3.leaves_zapped - s2.leaves_zapped;
	check(t, rc == 0 && zapped == mapped,
	      "delete of slot %u zapped %llu leaves, the %llu its pass mapped (%s)", SLOT_D,
	      (unsigned long long)zapped, (unsigned long long)mapped, strerror(-rc));
	e = recheck_all(t, why);
	vm_stats(t, &s4);
	faults = (s4.faults - s4.faults_mmio) - (s3.faults - s3.faults_mmio);
	mapped = leaves(&s4) - leaves(&s3);
	check(t, e == 0 && faults == 0 && mapped == 0,
	      "other slots undisturbed: re-check %ld bad, %llu faults, %llu leaves mapped %s", e,
	      (unsigned long long)faults, (unsigned long long)mapped, why);
}

static void guest_sees_changes(struct vmt *t)
{
	struct sl_job j = {GJ_OP_CHECK, MOVE_GPA, SLOT_GPA(SLOT_B), SLOT_SIZE,
			   STRIDE,	t->seed,  SLOT_B % NVCPU};
	struct sl_result r;
	int rc = sl_run_job(&t->vc[0], &j, &r);

	check(t, rc == 0 && r.errors == 0 && r.words == SLOT_SIZE / STRIDE && !r.mmio_exits,
	      "moved slot %u: check-only at %#x finds the pattern written at %#x (%u words, %u "
	      "bad) %s",
	      SLOT_B, MOVE_GPA, SLOT_GPA(SLOT_B), r.words, r.errors, r.why);
	j = (struct sl_job){GJ_OP_CHECK, SLOT_GPA(SLOT_A), SLOT_GPA(SLOT_A), 4, 4, t->seed, 1};
	rc = sl_run_job(&t->vc[0], &j, &r);
	check(t, rc == 0 && r.mmio_exits == 1 && r.mmio_gpa == SLOT_GPA(SLOT_A),
	      "deleted slot %u: a read at %#x is an MMIO exit (%u exits, at %#llx) %s", SLOT_A,
	      SLOT_GPA(SLOT_A), r.mmio_exits, (unsigned long long)r.mmio_gpa, r.why);
	j = (struct sl_job){GJ_OP_CHECK, SLOT_GPA(SLOT_B), SLOT_GPA(SLOT_B), 4, 4, t->seed, 0};
	rc = sl_run_job(&t->vc[1], &j, &r);
	check(t, rc == 0 && r.mmio_exits == 1 && r.mmio_gpa == SLOT_GPA(SLOT_B),
	      "moved slot %u: its old gpa %#x is an MMIO exit (%u exits) %s", SLOT_B,
	      SLOT_GPA(SLOT_B), r.mmio_exits, r.why);
}

static void round_run(struct vmt *t)
{
	unsigned v, i;
	int rc;

	t->vm = sl_vm_create(t->sys);
	if (t->vm < 0)
		sl_die("vmtest round %d: CREATE_VM: %s", t->round, strerror(-t->vm));
	t->ctrl = sl_ctrl_setup(t->vm);
	t->mem = sl_alloc((size_t)(NSLOTS + 1) * SLOT_SIZE);
	for (i = 1; i <= NSLOTS; i++) {
		rc = sl_slot(t->vm, i, SLOT_GPA(i), SLOT_SIZE, slot_mem(t, i));
		if (rc)
			sl_die("vmtest round %d: slot %u: SET_SLOT %s", t->round, i, strerror(-rc));
	}
	for (v = 0; v < NVCPU; v++) {
		rc = sl_vcpu_create(t->vm, v, t->ctrl, &t->vc[v]);
		if (rc)
			sl_die("vmtest round %d: vCPU %u: %s", t->round, v, strerror(-rc));
	}
	run_workers(t, 0, NULL);
	check(t, !t->errors[0] && !t->errors[1],
	      "%d slots written and checked by %d vCPUs: %u + %u bad %s%s", NSLOTS, NVCPU,
	      t->errors[0], t->errors[1], t->why[0], t->why[1]);
	/* The VMM sees what the guest wrote. */
	uint32_t w = *(uint32_t *)(slot_mem(t, 5) + STRIDE);
	check(t, w == sl_pattern(SLOT_GPA(5), STRIDE, t->seed, 5 % NVCPU),
	      "the VMM reads the guest's word %#x in slot 5", w);
	run_workers(t, 1, delete_and_move);
	check(t,
	      !t->errors[0] && !t->errors[1] && t->passes[0] >= MIN_CONCURRENT_PASSES &&
		  t->passes[1] >= MIN_CONCURRENT_PASSES,
	      "check passes during the delete and move: %u + %u passes, %u + %u bad %s%s",
	      t->passes[0], t->passes[1], t->errors[0], t->errors[1], t->why[0], t->why[1]);
	guest_sees_changes(t);
	counters(t);
	for (v = 0; v < NVCPU; v++)
		sl_vcpu_close(&t->vc[v]);
	close(t->vm); /* the last reference: VM_DESTROY, unpin, withdraw */
	munmap(t->mem, (size_t)(NSLOTS + 1) * SLOT_SIZE);
	munmap(t->ctrl, GJ_CTRL_SIZE);
}

int main(int argc, char **argv)
{
	struct vmt t = {0};
	struct hc_hv_stats hs;
	struct slat_module_stats ms;
	int rounds = argc > 1 ? atoi(argv[1]) : ROUNDS, rc;

	t.sys = sl_open();
	for (t.round = 1; t.round <= rounds; t.round++) {
		t.seed = 0x5eed0000u + t.round * 0x1234567u;
		t.failed = 0;
		round_run(&t);
		sl_say("vmtest round %d: %s", t.round, t.failed ? "FAILED" : "ok");
	}
	rc = sl_hv_stats(t.sys, &hs);
	if (rc)
		sl_die("vmtest: HV_STATS: %s", strerror(-rc));
	sl_mod_stats(t.sys, &ms);
	bool clean = hs.deposited == hs.withdrawn && hs.used == 0 && hs.free == 0 && hs.vms == 0 &&
		     ms.pinned_pages == 0 && ms.deposited_now == 0;
	if (!clean)
		checks_failed++;
	sl_say("vmtest: HV_STATS after %d rounds: deposited %llu, withdrawn %llu, free %llu, used "
	       "%llu, vms %llu (created %llu, destroyed %llu); module: pinned %llu, held by Slat "
	       "%llu, %llu deposits: %s",
	       rounds, (unsigned long long)hs.deposited, (unsigned long long)hs.withdrawn,
	       (unsigned long long)hs.free, (unsigned long long)hs.used, (unsigned long long)hs.vms,
	       (unsigned long long)hs.vms_created, (unsigned long long)hs.vms_destroyed,
	       (unsigned long long)ms.pinned_pages, (unsigned long long)ms.deposited_now,
	       (unsigned long long)ms.deposits, clean ? "every page accounted for" : "LEAK");
	sl_say("vmtest: %s (%d rounds, %d failed checks)", checks_failed ? "FAIL" : "PASS", rounds,
	       checks_failed);
	return checks_failed ? 1 : 0;
}
