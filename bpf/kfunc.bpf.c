//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * kfunc.bpf.c - entry and exit programs for kernel functions (-k).
 *
 *   kf_kprobe_entry / kf_kprobe_exit   kprobe + kretprobe, attached once
 *                                      per function with the target index
 *                                      as the BPF cookie.
 *   kf_fentry / kf_fexit               fentry + fexit (BPF trampolines),
 *                                      for kernels without kprobes. A
 *                                      tracing program is bound to one
 *                                      function at load time, so the
 *                                      loader loads this pair once per
 *                                      function with kf_target set.
 *
 * Kernel functions recurse and nest, so the entry state is timing.h's
 * per-thread stack in task storage (tp_task_enter / tp_task_exit); an
 * interrupt that runs a probed function nests inside the interrupted
 * thread's calls and completes first, so the stack discipline holds there
 * too. The crossing records carry the kernel stack of the caller.
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Target index of the fentry/fexit pair (set per load). */
volatile const __u32 kf_target = 0;

SEC("kprobe")
int kf_kprobe_entry(struct pt_regs *ctx)
{
	if (!tp_pid_ok())
		return 0;
	return tp_task_enter((__u32)bpf_get_attach_cookie(ctx));
}

SEC("kretprobe")
int kf_kprobe_exit(struct pt_regs *ctx)
{
	if (!tp_pid_ok())
		return 0;
	return tp_task_exit(ctx, (__u32)bpf_get_attach_cookie(ctx), 0);
}

SEC("fentry/vfs_read")
int kf_fentry(void *ctx)
{
	if (!tp_pid_ok())
		return 0;
	return tp_task_enter(kf_target);
}

SEC("fexit/vfs_read")
int kf_fexit(void *ctx)
{
	if (!tp_pid_ok())
		return 0;
	return tp_task_exit(ctx, kf_target, 0);
}
