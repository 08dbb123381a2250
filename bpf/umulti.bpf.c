//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * umulti.bpf.c - the user-function entry and exit programs of timing.bpf.c
 * as uprobe.multi programs (attach type BPF_TRACE_UPROBE_MULTI, Linux 6.6+).
 *
 * One multi-uprobe link attaches a program to thousands of offsets in one
 * bpf(BPF_LINK_CREATE) call and detaches them with one grace period, where
 * single uprobe links cost a perf event and a grace period each. The
 * cookie of each offset is given in the link's cookie array, so
 * bpf_get_attach_cookie returns the target index as for single links.
 * The bodies are tp_uentry's and tp_uexit's (TP_UPROBE_PAIR, timing.h);
 * the exit needs no process check: the multi-uprobe link filters by
 * process at return too.
 * The programs are a separate object so that kernels without multi-uprobe
 * links never load them; they share timing.h's maps with the session
 * (loader.Session.LoadShared).
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

TP_UPROBE_PAIR(tp_uentry_multi, "uprobe.multi", tp_uexit_multi, "uretprobe.multi", 0)

/* The echo of an entry probe (echo.h) on multi-uprobe links. */
SEC("uprobe.multi")
int tp_uecho_multi(struct pt_regs *ctx)
{
	return tp_echo_hit(ctx);
}

/* An empty program: the loader attaches it, limited to its own process, at
 * every offset of a binary it has mapped (and never runs) to ask the
 * kernel which instructions it can probe, before attaching the timing
 * programs anywhere. */
SEC("uprobe.multi")
int tp_check_multi(struct pt_regs *ctx)
{
	return 0;
}
