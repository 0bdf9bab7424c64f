// SPDX-License-Identifier: GPL-2.0
/*
 * KVM_GET/SET_VCPU_EVENTS on x86 (docs/kvm-api.md, "vCPU events"): the
 * events a vCPU holds between two runs, so that a VMM saves and restores
 * them (a migration, state_test, sync_regs_test). Slat keeps them in the
 * register page since ABI 1.11 (hc_regs_x86.event, shadow, nmi); the module
 * adds the NMIs it has not yet given to Slat. Written from KVM's api.rst
 * (4.31, KVM_GET_VCPU_EVENTS) and the selftests' use of it.
 *
 * Slat holds one event in delivery at a time, as the CPU does: an exception,
 * an NMI or an external interrupt (struct kvm_vcpu_events' three "injected"
 * flags); a VMM setting two of them at once is refused (-EINVAL), where KVM
 * would keep an interrupt queued behind an exception. Slat has no SMM: any
 * SMM state other than "not in SMM, none pending" is -EINVAL.
 */
#include <linux/uaccess.h>
#include <linux/slab.h>

#include "slat_kvm.h"
#include "slat_kvm_irq.h"

#define EVENT_VECTOR(e) ((e)&0xffu)
#define EVENT_TYPE(e)	((e)&HC_EVENT_TYPE_MASK)
/* #BP and #OF: KVM never reports them (the guest's INT3 / INTO runs again). */
#define SOFT_EXCEPTION(nr) ((nr) == 3 || (nr) == 4)

#define EVENTS_GET_FLAGS                                                                           \
	(KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SHADOW | KVM_VCPUEVENT_VALID_SMM)
#define EVENTS_SET_FLAGS                                                                           \
	(EVENTS_GET_FLAGS | KVM_VCPUEVENT_VALID_SIPI_VECTOR | KVM_VCPUEVENT_VALID_PAYLOAD |        \
	 KVM_VCPUEVENT_VALID_TRIPLE_FAULT)

/* ABI 1.11: Slat's register page carries the event state. */
bool slat_kvm_x86_events_ok(void)
{
	return (slat_hv_version & 0xffff) >= 11;
}

/* An NMI the module holds (not yet offered) or offered and not yet taken. */
static bool module_nmi_pending(struct slat_kvm_vcpu *v)
{
	struct hc_run *hr = page_address(v->vc->run);

	return atomic_read(slat_kvm_x86_nmis(v)) > 0 || hr->nmi;
}

static void events_to_kvm(struct slat_kvm_vcpu *v, const struct hc_regs_x86 *r,
			  struct kvm_vcpu_events *e)
{
	u32 ev = r->event & HC_EVENT_VALID ? r->event : 0;

	memset(e, 0, sizeof(*e));
	if (ev && EVENT_TYPE(ev) == HC_EVENT_EXC) {
		e->exception.nr = EVENT_VECTOR(ev);
		e->exception.injected = !SOFT_EXCEPTION(e->exception.nr);
		e->exception.has_error_code = !!(ev & HC_EVENT_ERR);
		e->exception.error_code = r->event_error;
	}
	if (ev && EVENT_TYPE(ev) == HC_EVENT_EXTINT) {
		e->interrupt.injected = 1;
		e->interrupt.nr = EVENT_VECTOR(ev);
	}
	e->interrupt.shadow = r->shadow;
	e->nmi.injected = ev && EVENT_TYPE(ev) == HC_EVENT_NMI;
	e->nmi.pending = (r->nmi & HC_NMI_HELD) || module_nmi_pending(v);
	e->nmi.masked = !!(r->nmi & HC_NMI_BLOCKED);
	e->flags = EVENTS_GET_FLAGS;
}

/* What KVM refuses, and what Slat cannot hold (two events, SMM, soft ones). */
static int events_check(const struct kvm_vcpu_events *e)
{
	bool exc = e->exception.injected;

	if (e->flags & ~EVENTS_SET_FLAGS)
		return -EINVAL;
	/* Neither is enabled (KVM_CAP_EXCEPTION_PAYLOAD, _TRIPLE_FAULT_EVENT). */
	if (e->flags & (KVM_VCPUEVENT_VALID_PAYLOAD | KVM_VCPUEVENT_VALID_TRIPLE_FAULT))
		return -EINVAL;
	if (exc && (e->exception.nr > 31 || e->exception.nr == 2))
		return -EINVAL;
	if (exc + !!e->interrupt.injected + !!e->nmi.injected > 1)
		return -EINVAL;
	if (e->interrupt.injected && e->interrupt.soft)
		return -EINVAL; /* an INT n in delivery: KVM needs its length too */
	if ((e->flags & KVM_VCPUEVENT_VALID_SHADOW) &&
	    (e->interrupt.shadow & ~(KVM_X86_SHADOW_INT_MOV_SS | KVM_X86_SHADOW_INT_STI)))
		return -EINVAL;
	if ((e->flags & KVM_VCPUEVENT_VALID_SMM) &&
	    (e->smi.smm || e->smi.pending || e->smi.smm_inside_nmi || e->smi.latched_init))
		return -EINVAL;
	return 0;
}

static void events_from_kvm(const struct kvm_vcpu_events *e, struct hc_regs_x86 *r)
{
	r->event = r->event_error = 0;
	if (e->exception.injected) {
		r->event = HC_EVENT_VALID | HC_EVENT_EXC | e->exception.nr;
		if (e->exception.has_error_code) {
			r->event |= HC_EVENT_ERR;
			r->event_error = e->exception.error_code;
		}
	} else if (e->interrupt.injected) {
		r->event = HC_EVENT_VALID | HC_EVENT_EXTINT | e->interrupt.nr;
	} else if (e->nmi.injected) {
		r->event = HC_EVENT_VALID | HC_EVENT_NMI | 2;
	}
	if (e->flags & KVM_VCPUEVENT_VALID_SHADOW)
		r->shadow = e->interrupt.shadow;
	/* Without VALID_NMI_PENDING the pending NMIs stay as they are. */
	if (e->flags & KVM_VCPUEVENT_VALID_NMI_PENDING)
		r->nmi = e->nmi.pending ? HC_NMI_HELD : 0;
	r->nmi = (r->nmi & HC_NMI_HELD) | (e->nmi.masked ? HC_NMI_BLOCKED : 0);
}

/* Slat took the new state: the module's own NMIs follow it. */
static void events_applied(struct slat_kvm_vcpu *v, const struct kvm_vcpu_events *e,
			   const struct hc_regs_x86 *r)
{
	struct hc_run *hr = page_address(v->vc->run);

	if (e->flags & KVM_VCPUEVENT_VALID_NMI_PENDING) {
		atomic_set(slat_kvm_x86_nmis(v), 0); /* Slat holds the one pending now */
		hr->nmi = 0;
	}
	hr->nmi_state = r->nmi; /* what x86_offer_nmi reads before the next entry */
}

/*
 * KVM_GET/SET_VCPU_EVENTS on a kernel copy. Every field not named above is
 * KVM's answer for a vCPU that has none of it (sipi_vector 0, no SMM); a
 * set's sipi_vector is taken and not used (the next STARTUP brings its own
 * vector, and KVM uses the stored one only for it).
 */
static int events_k(struct slat_kvm_vcpu *v, struct kvm_vcpu_events *e, bool set)
{
	struct hc_regs_x86 *r;
	int rc = set ? events_check(e) : 0;

	if (rc)
		return rc;
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	rc = slat_vcpu_regs_k(v->vc, r, false);
	if (!rc && !(r->flags & HC_REGS_X86_EVENTS))
		rc = -EIO; /* a Slat that says 1.11 fills them */
	if (!rc && set) {
		events_from_kvm(e, r);
		r->flags |= HC_REGS_X86_KEEP_PENDING; /* an IN still completes */
		rc = slat_vcpu_regs_k(v->vc, r, true);
		if (!rc)
			events_applied(v, e, r);
	} else if (!rc) {
		events_to_kvm(v, r, e);
	}
	kfree(r);
	return rc;
}

long slat_kvm_x86_vcpu_events(struct slat_kvm_vcpu *v, struct kvm_vcpu_events __user *up, bool set)
{
	struct kvm_vcpu_events e;
	int rc;

	if (!slat_kvm_x86_events_ok())
		return -ENOTTY;
	if (set && copy_from_user(&e, up, sizeof(e)))
		return -EFAULT;
	rc = events_k(v, &e, set);
	if (!rc && !set && copy_to_user(up, &e, sizeof(e)))
		rc = -EFAULT;
	return rc;
}

/*
 * kvm_run's sync_regs (KVM_CAP_SYNC_REGS, api.rst 5: "kvm_valid_regs",
 * "kvm_dirty_regs"): at the start of KVM_RUN the sets named in kvm_dirty_regs
 * are taken from run->s.regs as their SET ioctls would take them (each bit
 * cleared once taken; a refusal ends KVM_RUN with -EINVAL), and on every way
 * out of KVM_RUN the sets named in kvm_valid_regs are written there as their
 * GET ioctls give them. A bit KVM does not define: -EINVAL. The VMM's page is
 * copied before it is used (it may change it meanwhile).
 */
static int sync_taken(struct kvm_run *kr, u64 bit, int rc)
{
	if (!rc)
		WRITE_ONCE(kr->kvm_dirty_regs, READ_ONCE(kr->kvm_dirty_regs) & ~bit);
	return rc;
}

int slat_kvm_arch_run_begin(struct slat_kvm_vcpu *v)
{
	struct kvm_run *kr = page_address(v->run);
	u64 valid = READ_ONCE(kr->kvm_valid_regs), dirty = READ_ONCE(kr->kvm_dirty_regs);
	struct kvm_sync_regs *s;
	int rc = 0;

	if ((valid | dirty) & ~(u64)SLAT_KVM_X86_SYNC_FIELDS)
		return -EINVAL;
	if ((valid | dirty) && !slat_kvm_x86_events_ok())
		return -EINVAL; /* KVM_CAP_SYNC_REGS says 0 */
	if (!dirty)
		return 0;
	s = kmemdup(&kr->s.regs, sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	if (dirty & KVM_SYNC_X86_REGS)
		rc = sync_taken(kr, KVM_SYNC_X86_REGS, slat_kvm_x86_regs_k(v, &s->regs, true));
	if (!rc && (dirty & KVM_SYNC_X86_SREGS))
		rc = sync_taken(kr, KVM_SYNC_X86_SREGS, slat_kvm_x86_sregs_k(v, &s->sregs, true));
	if (!rc && (dirty & KVM_SYNC_X86_EVENTS))
		rc = sync_taken(kr, KVM_SYNC_X86_EVENTS, events_k(v, &s->events, true));
	kfree(s);
	return rc ? -EINVAL : 0;
}

void slat_kvm_arch_run_end(struct slat_kvm_vcpu *v)
{
	struct kvm_run *kr = page_address(v->run);
	u64 valid = READ_ONCE(kr->kvm_valid_regs);
	struct kvm_sync_regs *s;

	if (!valid || (valid & ~(u64)SLAT_KVM_X86_SYNC_FIELDS) || !slat_kvm_x86_events_ok())
		return;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return;
	if ((valid & KVM_SYNC_X86_REGS) && !slat_kvm_x86_regs_k(v, &s->regs, false))
		kr->s.regs.regs = s->regs;
	if ((valid & KVM_SYNC_X86_SREGS) && !slat_kvm_x86_sregs_k(v, &s->sregs, false))
		kr->s.regs.sregs = s->sregs;
	if ((valid & KVM_SYNC_X86_EVENTS) && !events_k(v, &s->events, false))
		kr->s.regs.events = s->events;
	kfree(s);
}
