//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * cost.bpf.c - the user-function timing programs taken apart, for
 * bench/bpfcost: each pair (cost_eN entry, cost_xN exit) adds one piece of
 * tp_uentry/tp_uexit (timing.bpf.c) to the one before, so that the
 * difference of their run times per call is what that piece costs. Built
 * with the jiffies clock, as the per-call budget is stated for it.
 *
 *   0  empty programs
 *   1  + bpf_get_attach_cookie (the target index)
 *   2  + the thread's entry stack: bpf_get_current_task_btf and
 *        bpf_task_storage_get (created at entry, looked up at exit)
 *   3  + bpf_jiffies64 at entry and exit, the push and the pop
 *   4  tp_task_enter / tp_task_exit: + the per-CPU counters lookup and
 *        the accounting (n, sum c, sum c^2)
 *   5  tp_task_enter_frame / tp_task_uexit, as tp_uentry/tp_uexit were: the
 *        exit finds its entry by the frame and calls no cookie helper
 *   6  tp_frame_enter / tp_frame_uexit, as tp_uentry/tp_uexit: the entry
 *        readings kept in an array slot named by the call's frame, with
 *        no task storage (tp_filter_tgid set by the benchmark)
 *   t  bpf_get_current_task_btf alone (beside 1: what it adds)
 *   s  a uprobe session program (below)
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

__u64 cost_sink;

SEC("uprobe")
int cost_e0(struct pt_regs *ctx)
{
	return 0;
}
SEC("uretprobe")
int cost_x0(struct pt_regs *ctx)
{
	return 0;
}

/* 0m  the empty programs on a multi-uprobe link, as tickprof attaches
 *     user functions where the kernel has them (6.6+): the floor that
 *     tickprof's own configurations compare with. */
SEC("uprobe.multi")
int cost_em(struct pt_regs *ctx)
{
	return 0;
}
SEC("uretprobe.multi")
int cost_xm(struct pt_regs *ctx)
{
	return 0;
}

/* The bodies that an entry and an exit program of one variant share; a
 * constant argument says which of the two it is. Inlined, so each program
 * is what it was written out by hand. */

/* 1: the target index only. */
static __always_inline int cost_cookie(struct pt_regs *ctx)
{
	cost_sink += (__u32)bpf_get_attach_cookie(ctx);
	return 0;
}

/* The thread's entry stack: created at entry (flags
 * BPF_LOCAL_STORAGE_GET_F_CREATE), looked up at exit (0). */
static __always_inline struct tp_tstack *cost_tstack(__u64 flags)
{
	return bpf_task_storage_get(&tp_tasks, bpf_get_current_task_btf(), 0, flags);
}

/* 2: the target index and the thread's entry stack. */
static __always_inline int cost_storage(struct pt_regs *ctx, __u64 flags)
{
	__u32 target = (__u32)bpf_get_attach_cookie(ctx);
	struct tp_tstack *st = cost_tstack(flags);
	if (st)
		cost_sink += st->depth + target;
	return 0;
}

/* t: the target index and bpf_get_current_task_btf. */
static __always_inline int cost_task(struct pt_regs *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();

	cost_sink += (__u32)bpf_get_attach_cookie(ctx);
	if (t)
		cost_sink++;
	return 0;
}

SEC("uprobe")
int cost_e1(struct pt_regs *ctx)
{
	return cost_cookie(ctx);
}
SEC("uretprobe")
int cost_x1(struct pt_regs *ctx)
{
	return cost_cookie(ctx);
}

SEC("uprobe")
int cost_e2(struct pt_regs *ctx)
{
	return cost_storage(ctx, BPF_LOCAL_STORAGE_GET_F_CREATE);
}
SEC("uretprobe")
int cost_x2(struct pt_regs *ctx)
{
	return cost_storage(ctx, 0);
}

SEC("uprobe")
int cost_e3(struct pt_regs *ctx)
{
	__u32 target = (__u32)bpf_get_attach_cookie(ctx);
	struct tp_tstack *st = cost_tstack(BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u32 slot;

	if (!st)
		return 0;
	slot = st->depth & (TP_MAX_DEPTH - 1);
	st->target[slot] = target;
	st->tick[slot] = bpf_jiffies64();
	st->depth++;
	return 0;
}
SEC("uretprobe")
int cost_x3(struct pt_regs *ctx)
{
	__u32 target = (__u32)bpf_get_attach_cookie(ctx);
	__u64 tick = bpf_jiffies64();
	struct tp_tstack *st = cost_tstack(0);
	__u32 slot;

	if (!st || st->depth == 0)
		return 0;
	slot = (st->depth - 1) & (TP_MAX_DEPTH - 1);
	st->depth--;
	cost_sink += tick - st->tick[slot] + st->target[slot] + target;
	return 0;
}

SEC("uprobe")
int cost_e4(struct pt_regs *ctx)
{
	return tp_task_enter((__u32)bpf_get_attach_cookie(ctx));
}
SEC("uretprobe")
int cost_x4(struct pt_regs *ctx)
{
	return tp_task_exit(ctx, (__u32)bpf_get_attach_cookie(ctx), BPF_F_USER_STACK);
}

SEC("uprobe")
int cost_e5(struct pt_regs *ctx)
{
	return tp_task_enter_frame((__u32)bpf_get_attach_cookie(ctx), ctx->sp);
}
SEC("uretprobe")
int cost_x5(struct pt_regs *ctx)
{
	return tp_task_uexit(ctx, BPF_F_USER_STACK);
}

SEC("uprobe")
int cost_e6(struct pt_regs *ctx)
{
	return tp_frame_enter((__u32)bpf_get_attach_cookie(ctx), ctx->sp);
}
SEC("uretprobe")
int cost_x6(struct pt_regs *ctx)
{
	return tp_frame_uexit(ctx, BPF_F_USER_STACK, 0); /* as the multi-link program */
}

SEC("uprobe")
int cost_et(struct pt_regs *ctx)
{
	return cost_task(ctx);
}
SEC("uretprobe")
int cost_xt(struct pt_regs *ctx)
{
	return cost_task(ctx);
}

/* s  one uprobe.session program at entry and return (uprobe_multi session
 *    link, 6.13+): the kernel keeps an 8-byte cookie per call between the
 *    two runs (bpf_session_cookie), so no thread stack is needed; the
 *    target index is the attach cookie, read at return. */
extern __u64 *bpf_session_cookie(void) __ksym;
extern _Bool bpf_session_is_return(void) __ksym;

SEC("uprobe.session")
int cost_s(struct pt_regs *ctx)
{
	__u64 *slot = bpf_session_cookie();
	struct tp_counts *c;
	__u32 target;
	__u64 d;

	if (!bpf_session_is_return()) {
		*slot = bpf_jiffies64();
		return 0; /* 0: run at return too */
	}
	d = bpf_jiffies64() - *slot;
	target = (__u32)bpf_get_attach_cookie(ctx);
	c = bpf_map_lookup_elem(&tp_counters, &target);
	if (c)
		tp_account(ctx, c, target, d, 0, d, BPF_F_USER_STACK);
	return 0;
}
