// SPDX-License-Identifier: Apache-2.0
//
// slat-fuzz [SEED [CALLS]]: random and hostile raw hypercalls (needs
// slat.ko allow_raw_calls=1 and root for /proc/self/pagemap). Arguments come
// from: Slat's own pages (slat.region= on the command line, else /proc/iomem
// "Reserved"), the frames of a victim VM made through the normal ioctls,
// bad and huge ids and counts, unaligned, out-of-range and wrapping addresses,
// and the fuzzer's scratch page. Afterwards Slat answers VERSION, the victim's
// vCPU finds its pattern intact, and every page is back. Seeded: the same
// seed makes the same calls. Prints the calls per status code.
//
// What it never passes (the primary's kernel is trusted with these, and a
// success would take memory the primary is using): a primary page other than
// the scratch page where Slat writes or takes pages (DEPOSIT, list, run, regs
// and stats pages), primary frames in slot lists other than the fuzzer's own
// donor pages (and those only into VMs that share rather than take them: a
// donated page the primary later touched would fault), PSCI / SMCCC-standard
// function ids (arm64: those would power the machine off), and the victim's
// VM id in calls that change a VM (it is attacked through its frames).
#include "slatlib.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define VSLOTS	     4
#define VSLOT_SZ     0x10000u
#define VSLOT_GPA(i) (0x100000u * (i))
#define MAX_FUZZ_VMS 64
#define NSTATUS	     18 /* 0, -1..-16, other */

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int sys;
static uint64_t slat_lo, slat_hi;	/* Slat's region */
static uint64_t victim_pa[VSLOTS * 16]; /* victim frames (physical addresses) */
static unsigned nvictim;
static uint64_t scratch_pa;
static uint64_t *scratch;
static uint32_t victim_id;
static uint64_t fuzz_vms[MAX_FUZZ_VMS];
static bool fuzz_vm_shares[MAX_FUZZ_VMS]; /* not DONATE: donor frames may go in */
static unsigned nfuzz_vms;
#define NDONOR 64
static uint64_t donor_pfn[NDONOR]; /* the fuzzer's own pages, never touched again */
static uint64_t counts[NSTATUS];
static uint64_t accepted[HC_FN_COUNT]; /* status 0, per function number */
static uint64_t slot_ops_ok[HC_SLOT_OP_COUNT];

static uint64_t pagemap_pa(void *va)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0 || pread(fd, &e, 8, (uintptr_t)va / 4096 * 8) != 8)
		sl_die("fuzz: /proc/self/pagemap: %s", strerror(errno));
	close(fd);
	if (!(e >> 63) || !(e & ((1ull << 55) - 1)))
		sl_die("fuzz: no frame number in pagemap (not root?)");
	return (e & ((1ull << 55) - 1)) << 12;
}

static void find_slat(void)
{
	char line[512];
	FILE *f = fopen("/proc/cmdline", "r");
	char *p;

	if (f && fgets(line, sizeof(line), f) && (p = strstr(line, "slat.region="))) {
		unsigned long long b, s;

		if (sscanf(p, "slat.region=%llx,%llx", &b, &s) == 2) {
			slat_lo = b;
			slat_hi = b + s;
		}
	}
	if (f)
		fclose(f);
	if (!slat_hi)
		sl_die("fuzz: no slat.region= on the kernel command line");
}

/* A page no call may succeed with: Slat's, the victim's, or not a page of RAM. */
static uint64_t pick_hostile_page(void)
{
	switch (rnd() % 7) {
	case 0:
	case 1:
		return slat_lo + (rnd() % ((slat_hi - slat_lo) / 4096)) * 4096;
	case 2:
	case 3:
		return victim_pa[rnd() % nvictim];
	case 4:
		return (slat_lo + rnd() % (slat_hi - slat_lo)) | 1 << (rnd() % 12); /* unaligned */
	case 5:
		return (1ull << 52) - 4096 * (rnd() % 4); /* at and below the top */
	default:
		return rnd() % 2 ? ~0ull << (rnd() % 13) : (1ull << 44) + (rnd() % 4096) * 4096;
	}
}

/* A page Slat writes (WITHDRAW list, run, regs and stats pages). */
static uint64_t pick_out_page(void)
{
	return rnd() % 2 ? scratch_pa : pick_hostile_page();
}

/* A page Slat only reads (SET_REGS): low RAM of the primary is fine too. */
static uint64_t pick_in_page(void)
{
	return rnd() % 3 ? pick_out_page() : (rnd() % 64) * 4096;
}

static uint64_t pick_count(void)
{
	static const uint64_t v[] = {0,	    1,	   2,	   511,	   512,	       513,   65535,
				     65536, 65537, 262144, 262145, 1ull << 32, ~0ull, 1ull << 40};
	return rnd() % 3 ? v[rnd() % (sizeof(v) / sizeof(v[0]))] : rnd();
}

static uint64_t pick_vm(void)
{
	switch (rnd() % 6) {
	case 0:
		return 0;
	case 1:
		return HC_VM_MAX + (rnd() % 3);
	case 2:
		return rnd();
	case 3:
		return victim_id;
	default:
		return nfuzz_vms ? fuzz_vms[rnd() % nfuzz_vms] : rnd() % 8;
	}
}

/* Frame numbers a slot list may name: never the primary's own memory. */
static uint64_t pick_list_entry(void)
{
	switch (rnd() % 4) {
	case 0:
		return (slat_lo >> 12) + rnd() % ((slat_hi - slat_lo) >> 12);
	case 1:
		return victim_pa[rnd() % nvictim] >> 12;
	case 2:
		return (1ull << 40) + rnd() % 1000; /* beyond RAM */
	default:
		return rnd() | 1ull << 63; /* beyond 2^52 */
	}
}

static uint64_t pick_fn(void)
{
	unsigned r = rnd() % 20;

	if (r < 15)
		return HC_FN(rnd() % (HC_FN_COUNT + 2));
	if (r == 15)
		return HC_FN(HC_LOG_READ + rnd() % 2); /* and the first unknown number */
	if (r == 16)
		return HC_FN(rnd() & HC_FN_NUM_MASK);
	if (r == 17)
		return HC_FN(rnd() % HC_FN_COUNT) | HC_FN_SVE_HINT;
	if (r == 18)
		return (rnd() << 32) | HC_FN(rnd() % HC_FN_COUNT); /* x86: upper half set */
	return 0x86000000u | (rnd() & 0xffff);			   /* SMC32 vendor-hyp range */
}

static bool mutating(uint64_t fn)
{
	uint32_t n = fn & HC_FN_NUM_MASK;

	return n != HC_VM_STATS && n != HC_VCPU_GET_REGS;
}

/* Is `vm` a fuzz VM that shares (may be given the fuzzer's donor frames)? */
static bool shares(uint64_t vm)
{
	for (unsigned i = 0; i < nfuzz_vms; i++)
		if (fuzz_vms[i] == vm)
			return fuzz_vm_shares[i];
	return false;
}

/*
 * SLOT_SET, shaped by op half of the time so that DELETE and MOVE get past
 * the decoder; ADDs into a sharing fuzz VM may list a run of donor frames
 * (then they can succeed, and later DELETEs and MOVEs with them).
 */
static void slot_args(uint64_t a[6])
{
	bool shaped = rnd() % 2;

	a[0] = pick_vm();
	a[1] = rnd() % 2 ? rnd() % 8 : pick_count();
	a[2] = rnd() % 5;
	a[3] = rnd() % 2 ? pick_hostile_page() : (rnd() % 64) << 21;
	a[4] = rnd() % 4 ? scratch_pa : pick_hostile_page();
	a[5] = pick_count();
	for (int i = 0; i < (int)HC_LIST_MAX; i++)
		scratch[i] = pick_list_entry();
	if (!shaped)
		return;
	if (a[2] == HC_SLOT_DELETE) {
		a[3] = a[4] = a[5] = 0;
	} else if (a[2] == HC_SLOT_MOVE) {
		a[3] = (rnd() % 64) << 21;
		a[4] = a[5] = 0;
	} else if (a[2] == HC_SLOT_ADD && shares(a[0])) {
		unsigned first = rnd() % NDONOR, n = 1 + rnd() % (NDONOR - first);

		a[3] = (rnd() % 64) << 21;
		a[4] = scratch_pa;
		a[5] = n;
		for (unsigned i = 0; i < n; i++)
			scratch[i] = donor_pfn[first + i];
	}
}

static void make_args(uint64_t fn, uint64_t a[6])
{
	uint32_t n = fn & HC_FN_NUM_MASK;

	memset(a, 0, 6 * sizeof(*a));
	if (rnd() % 8 == 0) /* a stray value in a register the call may not use */
		a[rnd() % 6] = pick_count();
	switch (n) {
	case HC_DEPOSIT: /* a success would take a page the primary uses */
		a[0] = pick_hostile_page();
		a[1] = pick_count();
		break;
	case HC_WITHDRAW:
		a[0] = pick_out_page();
		a[1] = pick_count();
		break;
	case HC_HV_STATS:
		a[0] = pick_out_page();
		break;
	case HC_LOG_READ: /* a position before, at or past the log's end */
		a[0] = pick_out_page();
		a[1] = rnd() % 2 ? rnd() % 65536 : pick_count();
		break;
	case HC_VM_CREATE:
		a[0] = rnd() % 4 == 0 ? rnd() : rnd() % 2;
		a[1] = rnd() % 3 ? 1 + rnd() % 4 : pick_count();
		break;
	case HC_SLOT_SET:
		slot_args(a);
		break;
	case HC_VM_STATS:
		a[0] = pick_vm();
		a[1] = pick_out_page();
		break;
	default: /* VM_DESTROY, VCPU_CREATE, VCPU_RUN, SET_REGS, GET_REGS, unknown */
		a[0] = pick_vm();
		a[1] = rnd() % 2 ? rnd() % 4 : pick_count();
		a[2] = n == HC_VCPU_SET_REGS ? pick_in_page() : pick_out_page();
		if (n == HC_VCPU_SET_REGS)
			for (int i = 0; i < (int)HC_LIST_MAX; i++)
				scratch[i] = rnd() % 2 ? 0 : rnd();
		/* Half of the time only the registers the call uses. */
		if (n == HC_VM_DESTROY && rnd() % 2)
			a[1] = a[2] = 0;
		if (n == HC_VCPU_CREATE && rnd() % 2)
			a[2] = 0;
	}
	/* The victim is attacked through its frames, never through its id. */
	if (mutating(fn) && n != HC_DEPOSIT && n != HC_WITHDRAW && n != HC_HV_STATS &&
	    n != HC_LOG_READ && n != HC_VM_CREATE && a[0] == victim_id)
		a[0] = HC_VM_MAX + 1;
}

static long raw(uint64_t fn, const uint64_t a[6], uint64_t r[3])
{
	/* Half of the calls get deposits on HC_E_NOMEM (VMs, vCPUs, slots). */
	struct slat_raw_call c = {.fn = fn, .flags = rnd() % 2 ? SLAT_RAW_DEPOSIT : 0};

	memcpy(c.a, a, sizeof(c.a));
	if (ioctl(sys, SLAT_RAW_CALL, &c) < 0)
		sl_die("fuzz: RAW_CALL: %s", strerror(errno));
	memcpy(r, c.r, sizeof(c.r));
	return c.status;
}

static void count(long st)
{
	counts[st <= 0 && st > -(NSTATUS - 1) ? -st : NSTATUS - 1]++;
}

static void fuzz_one(void)
{
	uint64_t fn = pick_fn(), a[6], r[3];
	long st;

	make_args(fn, a);
	st = raw(fn, a, r);
	count(st);
	if (st == HC_OK && (fn & HC_FN_NUM_MASK) < HC_FN_COUNT)
		accepted[fn & HC_FN_NUM_MASK]++;
	if (st == HC_OK && (fn & HC_FN_NUM_MASK) == HC_SLOT_SET)
		slot_ops_ok[a[2] % HC_SLOT_OP_COUNT]++;
	/* Any accepted form (SVE hint, arm64's ignored upper half) made a VM. */
	bool created = st == HC_OK && (fn & HC_FN_NUM_MASK) == HC_VM_CREATE;

	if (created && nfuzz_vms < MAX_FUZZ_VMS) {
		fuzz_vm_shares[nfuzz_vms] = !(a[0] & HC_VM_FLAG_DONATE);
		fuzz_vms[nfuzz_vms++] = r[0];
	} else if (created) {
		uint64_t d[6] = {r[0]};

		raw(HC_FN(HC_VM_DESTROY), d, r); /* keep at most MAX_FUZZ_VMS */
	}
}

static void cleanup(void)
{
	uint64_t a[6] = {0}, r[3];

	for (unsigned i = 0; i < nfuzz_vms; i++) {
		a[0] = fuzz_vms[i];
		raw(HC_FN(HC_VM_DESTROY), a, r);
	}
	a[0] = scratch_pa;
	a[1] = HC_LIST_MAX;
	for (int i = 0; i < 100000; i++) /* the module frees what this gives back */
		if (raw(HC_FN(HC_WITHDRAW), a, r) != HC_OK || r[0] == 0)
			break;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	long calls = argc > 2 ? atol(argv[2]) : 100000;
	struct sl_vcpu vc;
	struct sl_result res;
	struct hc_hv_stats hs;
	uint8_t *ctrl, *mem;
	uint64_t a[6] = {0}, r[3];
	int vm, rc, fails = 0;

	rng = seed * 0x9e3779b97f4a7c15ull | 1;
	sys = sl_open();
	find_slat();
	scratch = sl_alloc(4096);
	if (mlock(scratch, 4096))
		sl_die("fuzz: mlock: %s", strerror(errno));
	scratch_pa = pagemap_pa(scratch);
	uint8_t *donor = sl_alloc(NDONOR * 4096);
	memset(donor, 0x5a, NDONOR * 4096);
	if (mlock(donor, NDONOR * 4096))
		sl_die("fuzz: mlock: %s", strerror(errno));
	for (unsigned i = 0; i < NDONOR; i++)
		donor_pfn[i] = pagemap_pa(donor + i * 4096) >> 12;
	/* The victim: its pattern written, its frames known. */
	vm = sl_vm_create(sys);
	if (vm < 0)
		sl_die("fuzz: CREATE_VM: %s", strerror(-vm));
	victim_id = ioctl(vm, SLAT_VM_ID, 0);
	ctrl = sl_ctrl_setup(vm);
	mem = sl_alloc(VSLOTS * VSLOT_SZ);
	for (unsigned i = 0; i < VSLOTS; i++)
		if ((rc = sl_slot(vm, 1 + i, VSLOT_GPA(1 + i), VSLOT_SZ, mem + i * VSLOT_SZ)))
			sl_die("fuzz: victim slot: %s", strerror(-rc));
	if ((rc = sl_vcpu_create(vm, 0, ctrl, &vc)))
		sl_die("fuzz: victim vCPU: %s", strerror(-rc));
	struct sl_job wj = {GJ_OP_WRITE | GJ_OP_CHECK,
			    VSLOT_GPA(1),
			    VSLOT_GPA(1),
			    VSLOTS * 0x100000u - 0x100000u + VSLOT_SZ,
			    64,
			    (uint32_t)seed,
			    7};
	for (unsigned i = 0; i < VSLOTS; i++) {
		wj.gpa = wj.pbase = VSLOT_GPA(1 + i);
		wj.len = VSLOT_SZ;
		if (sl_run_job(&vc, &wj, &res) || res.errors)
			sl_die("fuzz: victim write job: %s (%u bad)", res.why, res.errors);
	}
	for (unsigned i = 0; i < VSLOTS * 16; i++)
		victim_pa[nvictim++] = pagemap_pa(mem + (size_t)i * 4096);
	sl_say("fuzz: seed %#llx, %ld calls; Slat region %#llx-%#llx, victim VM %u with %u frames, "
	       "scratch %#llx",
	       (unsigned long long)seed, calls, (unsigned long long)slat_lo,
	       (unsigned long long)slat_hi, victim_id, nvictim, (unsigned long long)scratch_pa);
	for (long i = 0; i < calls; i++)
		fuzz_one();
	cleanup();
	char line[400];
	int o = snprintf(line, sizeof(line), "fuzz: calls per status:");
	for (int s = 0; s < NSTATUS; s++)
		if (counts[s])
			o += snprintf(line + o, sizeof(line) - o, " %s%d=%llu",
				      s == NSTATUS - 1 ? "other" : "", s == NSTATUS - 1 ? 0 : -s,
				      (unsigned long long)counts[s]);
	sl_say("%s", line);
	o = snprintf(line, sizeof(line), "fuzz: accepted per function:");
	for (int f = 0; f < HC_FN_COUNT; f++)
		o += snprintf(line + o, sizeof(line) - o, " %d=%llu", f,
			      (unsigned long long)accepted[f]);
	sl_say("%s; slot ADD %llu, DELETE %llu, MOVE %llu", line,
	       (unsigned long long)slot_ops_ok[HC_SLOT_ADD],
	       (unsigned long long)slot_ops_ok[HC_SLOT_DELETE],
	       (unsigned long long)slot_ops_ok[HC_SLOT_MOVE]);
	long st = raw(HC_FN(HC_VERSION_FN), a, r);
	bool ver = st == HC_OK && r[0] >> 16 == HC_ABI_MAJOR;
	fails += !ver;
	sl_say("fuzz: Slat answers VERSION after the fuzz: status %ld, %#llx: %s", st,
	       (unsigned long long)r[0], ver ? "ok" : "FAILED");
	for (unsigned i = 0; i < VSLOTS; i++) {
		struct sl_job cj = {GJ_OP_CHECK,
				    VSLOT_GPA(1 + i),
				    VSLOT_GPA(1 + i),
				    VSLOT_SZ,
				    64,
				    (uint32_t)seed,
				    7};
		rc = sl_run_job(&vc, &cj, &res);
		bool ok = !rc && !res.errors && res.words == VSLOT_SZ / 64 && !res.mmio_exits;
		fails += !ok;
		sl_say("fuzz: victim slot %u: %u words checked, %u bad, %u MMIO exits %s: %s",
		       1 + i, res.words, res.errors, res.mmio_exits, res.why, ok ? "ok" : "FAILED");
	}
	sl_vcpu_close(&vc);
	close(vm);
	sl_hv_stats(sys, &hs);
	bool pool = hs.vms == 0 && hs.used == 0 && hs.free == 0 && hs.deposited == hs.withdrawn;
	fails += !pool;
	sl_say("fuzz: HV_STATS after: vms %llu, used %llu, free %llu, deposited %llu, withdrawn "
	       "%llu, calls %llu (%llu failed): %s",
	       (unsigned long long)hs.vms, (unsigned long long)hs.used, (unsigned long long)hs.free,
	       (unsigned long long)hs.deposited, (unsigned long long)hs.withdrawn,
	       (unsigned long long)hs.calls, (unsigned long long)hs.calls_failed,
	       pool ? "ok" : "FAILED");
	sl_say("fuzz: %s", fails ? "FAIL" : "PASS");
	return fails ? 1 : 0;
}
