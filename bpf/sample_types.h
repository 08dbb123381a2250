/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/* The sampling programs' kernel types beyond common.h (the shared types and
 * UAPI constants): the perf_event program context with its x86-64 struct
 * pt_regs in UAPI layout (read directly, not relocated by CO-RE), so that
 * sample.bpf.c needs neither vmlinux.h nor the host's asm headers; and the
 * ring-buffer records that sample.bpf.c and offcpu.bpf.c both write. */
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

/* Ring-buffer record kinds: the sampling program's (sample.bpf.c) and the
 * off-CPU program's (offcpu.bpf.c), which share the ring. */
#define REC_SAMPLE 1
#define REC_EXEC 2
#define REC_FORK 3 /* pid: the child; tid: the parent process */
#define REC_OFF_START 4
#define REC_OFF_END 5
#define REC_GO_START 6 /* offcpu.bpf.c: a goroutine parked (go_park) */
#define REC_GO_END 7   /* offcpu.bpf.c: it runs again (go_execute) */

/* Flags of struct sample_hdr. */
#define FLAG_KERN_FULL 1 /* kernel stack filled MAX_DEPTH: may be cut */
#define FLAG_USER_FULL 2 /* user stack filled MAX_DEPTH: may be cut */
#define FLAG_KERN_ERR 4  /* bpf_get_stack failed for the kernel stack */
#define FLAG_USER_ERR 8  /* bpf_get_stack failed for the user stack */
#define FLAG_SP_WORD 16  /* sp_word holds the word at the user stack pointer */
#define FLAG_REGS 32     /* user_ip/sp/bp hold the user registers */
#define FLAG_GO_CGO 64   /* go_frame/go_sp/go_len: a cgo call's goroutine stack */
#define FLAG_PY 128      /* a Python process's sample: py_len frames, py_err (python.h) */

/* Header of a sample record (both programs write them); the kernel
 * addresses, the user stack's copy, the goroutine stack's copy and the user
 * addresses follow. */
struct sample_hdr {
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__u32 cpu;
	__u64 time_ns;
	__u16 kern_len; /* number of kernel addresses */
	__u16 user_len; /* number of user addresses */
	__u32 flags;
	/* The word at the user stack pointer: the return address when the user
	 * leaf function has not set up a frame (frameless leaf or prologue),
	 * which the frame-pointer walk then skips. User space checks it. */
	__u64 sp_word;
	/* The user registers a call-frame-information unwinder starts from
	 * (FLAG_REGS), and the number of stack bytes copied from user_sp,
	 * which follow the addresses. */
	__u64 user_ip;
	__u64 user_sp;
	__u64 user_bp;
	__u32 stack_len;
	/* FLAG_GO_CGO: in a Go program's cgo or vDSO call, the copy above
	 * ends at the top of the system stack (go_frame, g0.sched.sp), and
	 * go_len bytes of the goroutine's stack from go_sp follow it. */
	__u32 go_len;
	__u64 go_frame;
	__u64 go_sp;
	/* FLAG_PY: py_len Python frames (struct py_frame) follow the user
	 * addresses; py_err says why they are missing or cut (PY_ERR_*). */
	__u16 py_len;
	__u16 py_err;
	__u32 py_pad;
};

#endif
