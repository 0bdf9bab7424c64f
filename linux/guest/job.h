/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The secondary payloads' job protocol (linux/guest/x86.S and arm64.S, linux/tests/). One
 * 64-byte mailbox per vCPU at GJ_MAILBOX + index * 64 in the control slot;
 * the VMM posts a job by bumping seq; the vCPU runs it, writes the results,
 * and reports seq through a "ucall": x86 OUT to GJ_PORT, arm64 a 32-bit
 * store to GJ_UCALL (an address no slot maps: an MMIO exit). A seq of
 * 0xffffffff reports a vCPU that waited GJ_SPIN polls with no new job.
 *
 * Words are 32-bit, aligned (arm64 runs with the MMU off: Device memory).
 * Pattern word at offset off of a job: (pbase + off) ^ seed ^ (tag << 24).
 */
#ifndef SLAT_GUEST_JOB_H
#define SLAT_GUEST_JOB_H

#define GJ_CODE	     0x0     /* the payload is loaded at gpa 0 (entry) */
#define GJ_MAILBOX   0x8000  /* mailboxes, 64 bytes each, up to 64 vCPUs */
#define GJ_CTRL_SIZE 0x10000 /* the control slot: code + mailboxes */
#define GJ_PORT	     0x5c0
#define GJ_UCALL     0xf0000000
#define GJ_SPIN	     0x1000000
#define GJ_IDLE	     0xffffffff

#define GJ_OP_WRITE 1
#define GJ_OP_CHECK 2
#define GJ_OP_QUIT  4 /* halt (HLT / WFI) */

/* Mailbox field offsets (all 32-bit). */
#define GJ_SEQ	  0
#define GJ_OPF	  4
#define GJ_GPA	  8
#define GJ_PBASE  12
#define GJ_LEN	  16 /* bytes */
#define GJ_STRIDE 20 /* bytes between words touched; 0 means 4 */
#define GJ_SEED	  24
#define GJ_TAG	  28
#define GJ_DONE	  32
#define GJ_ERRORS 36
#define GJ_FIRST  40 /* first bad address */
#define GJ_WORDS  44 /* words touched */

#endif
