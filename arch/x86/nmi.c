// SPDX-License-Identifier: Apache-2.0
//
// The guest's NMI blocking, kept by Slat (docs/x86-exits.md, "NMIs").
//
// Hardware blocks further NMIs from the delivery of an NMI until the next
// IRET; one NMI that arrives meanwhile is held pending and delivered right
// after that IRET, before the next instruction. Slat intercepts NMIs (its own
// kicks are NMIs) and injects the guest's: an injected NMI (SVM EVENTINJ)
// sets no blocking the CPU would keep for the guest, so the layer keeps it
// here and the back end applies the plan x86_nmi_plan() gives before each
// entry:
//
//   not blocked, pending, event slot free  -> inject; now blocked
//   blocked, IRET not reached              -> intercept IRET
//   IRET intercepted (the exit comes before the IRET runs: no NRIPS on SVM)
//                                          -> blocked until RIP moves past it
//   blocked at the IRET with one pending   -> let the IRET run alone
//                                             (single-step), then inject
//
// VT-x with virtual NMIs tracks the blocking itself (interruptibility state);
// its back end feeds that in as `blocked` and asks for an NMI-window exit
// instead of stepping. Pure functions: unit-tested hosted.
#include "arch/x86/vcpu.h"

void x86_nmi_raise(struct x86_nmi_state *s)
{
	s->pending = true; // as in hardware, NMIs that arrive while one is held merge
}

void x86_nmi_at_iret(struct x86_nmi_state *s, uint64_t rip)
{
	if (!s->blocked)
		return;
	s->iret_seen = true;
	s->iret_rip = rip;
}

void x86_nmi_progress(struct x86_nmi_state *s, uint64_t rip)
{
	// An exit at another RIP than the intercepted IRET: the IRET completed.
	if (s->iret_seen && rip != s->iret_rip) {
		s->blocked = false;
		s->iret_seen = false;
	}
}

struct x86_nmi_plan x86_nmi_plan(struct x86_nmi_state *s, bool slot_free)
{
	struct x86_nmi_plan p = {0};

	if (s->pending && !s->blocked && slot_free) {
		p.inject = true;
		s->pending = false;
		s->blocked = true;
		s->iret_seen = false;
	}
	p.intercept_iret = s->blocked && !s->iret_seen;
	p.step_over_iret = s->pending && s->blocked && s->iret_seen;
	p.want_window = s->pending && !p.inject;
	return p;
}

void x86_nmi_reset(struct x86_nmi_state *s)
{
	*s = (struct x86_nmi_state){0};
}
