/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * common.h - the few kernel types and constants tickprof's BPF programs
 * use, written by hand instead of a full vmlinux.h. Values match
 * include/uapi/linux/bpf.h; struct pt_regs is x86-64 and marked for CO-RE
 * relocation, so its field offsets are fixed up against the running
 * kernel's BTF at load time.
 */
#ifndef TICKPROF_COMMON_H
#define TICKPROF_COMMON_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef signed short __s16;
typedef unsigned int __u32;
typedef signed int __s32;
typedef unsigned long long __u64;
typedef signed long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u64 __be64;
typedef __u32 __wsum;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERF_EVENT_ARRAY = 4,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_LRU_PERCPU_HASH = 10,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

/* Map update flags. */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2

/* Map flags. */
#define BPF_F_NO_PREALLOC 1

/* bpf_*_storage_get flags. */
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

struct task_struct;

/* bpf_get_stackid / bpf_get_stack flags. */
#define BPF_F_SKIP_FIELD_MASK 0xffULL
#define BPF_F_USER_STACK (1ULL << 8)
#define BPF_F_FAST_STACK_CMP (1ULL << 9)
#define BPF_F_REUSE_STACKID (1ULL << 10)

/* bpf_ringbuf_submit / output flags. */
#define BPF_RB_NO_WAKEUP 1
#define BPF_RB_FORCE_WAKEUP 2

#define BPF_F_CURRENT_CPU 0xffffffffULL

/* x86-64 registers as saved on kernel entry (arch/x86/include/asm/ptrace.h). */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
} __attribute__((preserve_access_index));

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/*
 * LOOP_PROG defines the syscall program NAME that calls FN N times through
 * bpf_loop, FN adding into a local sum, and stores the sum in SINK so that
 * the loop is not optimized away: the harness of the in-BPF cost
 * measurements (calib.bpf.c, bench/qhist/qhbench.bpf.c). It expands where
 * SEC and bpf_loop are declared (after bpf_helpers.h).
 */
#define LOOP_PROG(NAME, N, FN, SINK)      \
	SEC("syscall")                    \
	int NAME(void *ctx)               \
	{                                 \
		__u64 acc = 0;            \
		bpf_loop(N, FN, &acc, 0); \
		SINK = acc;               \
		return 0;                 \
	}

/*
 * EMPTY_PROG defines the program NAME, in section SEC_NAME, that returns
 * at once: the floors that the benchmarks and the calibration compare
 * probes with (the cost of the attach point and of running a program).
 */
#define EMPTY_PROG(SEC_NAME, NAME) \
	SEC(SEC_NAME)              \
	int NAME(void *ctx)        \
	{                          \
		return 0;          \
	}

#endif /* TICKPROF_COMMON_H */
