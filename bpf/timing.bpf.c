//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * timing.bpf.c - entry and exit programs for user functions.
 *
 * One uprobe and one uretprobe program serve every target: the loader
 * attaches them once per target with the target's index as the BPF
 * cookie. Both are BPF_PROG_TYPE_KPROBE programs. The work is in
 * timing.h: the entry readings kept by the call's frame (tp_frame_enter /
 * tp_frame_uexit, falling back to the thread's stack in task storage) and
 * the accounting shared with the syscall, kernel-function and Go programs
 * (tp_account).
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Puts struct tp_record in BTF so bpf2go generates its Go type. */
const struct tp_record *tp_unused_record __attribute__((unused));

/* No tp_pid_ok() here: the loader attaches each u(ret)probe with the
 * target's PID, and the kernel's uprobe filter (by mm) already keeps out
 * every other process; a second check would cost a helper call (~20 ns
 * here) per event. The exit checks the process (a child forked inside a
 * call returns through the single link's uretprobe). */
TP_UPROBE_PAIR(tp_uentry, "uprobe", tp_uexit, "uretprobe", 1)

/* The echo of an entry probe (echo.h): attached in echo windows on the
 * instruction after the entry probe's. */
SEC("uprobe")
int tp_uecho(struct pt_regs *ctx)
{
	return tp_echo_hit(ctx);
}

/* Empty programs: the probe-pair floor for the benchmark and
 * `tickprof calibrate`. */
SEC("uprobe")
int tp_empty_entry(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int tp_empty_exit(struct pt_regs *ctx)
{
	return 0;
}
