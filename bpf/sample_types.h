/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* The sampling programs' kernel types beyond common.h (the shared types and
 * UAPI constants): the perf_event program context with its x86-64 struct
 * pt_regs in UAPI layout (read directly, not relocated by CO-RE), so that
 * sample.bpf.c needs neither vmlinux.h nor the host's asm headers. */
#ifndef TICKPROF_SAMPLE_TYPES_H
#define TICKPROF_SAMPLE_TYPES_H

#include "common.h"

#define BPF_RB_AVAIL_DATA 0

/* x86-64 struct pt_regs (UAPI layout) and the perf_event program context. */
struct sample_pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

struct bpf_perf_event_data {
	struct sample_pt_regs regs;
	__u64 sample_period;
	__u64 addr;
};

#endif
