//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * qhbench.bpf.c - the cost of one update of the quantile histogram
 * (qhist.h's tp_qh_add_to), for bench/qhist/qhbench_test.go: syscall programs run with
 * BPF_PROG_TEST_RUN loop QH_N times over durations spread across the
 * buckets (1 us to 1 ms) with the update (qh_add) and without it (qh_none,
 * which consumes the same durations); with run-time statistics enabled,
 * (run time - run time of qh_none) / QH_N is the cost of one update.
 * qh_add_linear is the same update with the earlier layout's index (16
 * linear sub-buckets per octave, two shifts), kept as the reference the
 * geometric layout's cost is compared with in the same run. qh_add_refine
 * adds the refinement check and bin count (tp_qr_add). ns_acct, ns_acct_q
 * and ns_acct_qr are the whole exact-clock accounting of a call
 * (timing.h's tp_account_ns into target 0's counters: sums, min, max, the
 * log2 histogram) without and with the quantile histogram, and with its
 * refinement.
 */
#include "timing.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define QH_N 1000

__u64 qh_sink;

static __always_inline __u64 qh_dur(__u64 i)
{
	return 1000 + ((i * 2654435761ULL) & ((1 << 20) - 1));
}

/* The earlier linear layout: 16 buckets below 16 ns, then 16 linear
 * sub-buckets per octave (same bucket count). */
static __always_inline __u32 qh_index_linear(__u64 v)
{
	__u32 k;

	if (v < 16)
		return (__u32)v;
	k = tp_log2(v);
	if (k > TP_QH_MAX_LOG2)
		return TP_QH_BUCKETS - 1;
	return ((k - 3) << 4) + (__u32)(v >> (k - 4)) - 16;
}

static long loop_add_linear(__u64 i, void *c)
{
	__u64 d = qh_dur(i);

	*(__u64 *)c += d;
	tp_qh_count(0, qh_index_linear(d));
	return 0;
}

LOOP_PROG(qh_add_linear, QH_N, loop_add_linear, qh_sink)

static long loop_none(__u64 i, void *c)
{
	*(__u64 *)c += qh_dur(i);
	return 0;
}

static long loop_add(__u64 i, void *c)
{
	__u64 d = qh_dur(i);

	*(__u64 *)c += d;
	tp_qh_add_to(0, d, tp_log2(d), 0);
	return 0;
}

LOOP_PROG(qh_none, QH_N, loop_none, qh_sink)

LOOP_PROG(qh_add, QH_N, loop_add, qh_sink)

/* The update with the refinement check (tp_qr_add): the bench's test
 * configures a window on some buckets, so both paths (bucket refined or
 * not) run. */
static long loop_add_refine(__u64 i, void *c)
{
	__u64 d = qh_dur(i);

	*(__u64 *)c += d;
	tp_qh_add_to(0, d, tp_log2(d), 1);
	return 0;
}

LOOP_PROG(qh_add_refine, QH_N, loop_add_refine, qh_sink)

/* The exact-clock accounting of a call (tp_account_ns) into target 0's
 * counters, without the quantile histogram (q 0), with it (1) and with the
 * refinement (2). */
static __always_inline void loop_acct(__u64 i, void *c, __u32 q)
{
	__u32 zero = 0;
	struct tp_counts *ct = bpf_map_lookup_elem(&tp_counters, &zero);
	__u64 d = qh_dur(i);

	*(__u64 *)c += d;
	if (!ct)
		return;
	tp_account_ns(ct, 0, d, q != 0, q == 2);
}

static long loop_acct0(__u64 i, void *c)
{
	loop_acct(i, c, 0);
	return 0;
}

static long loop_acct1(__u64 i, void *c)
{
	loop_acct(i, c, 1);
	return 0;
}

static long loop_acct2(__u64 i, void *c)
{
	loop_acct(i, c, 2);
	return 0;
}

LOOP_PROG(ns_acct, QH_N, loop_acct0, qh_sink)

LOOP_PROG(ns_acct_q, QH_N, loop_acct1, qh_sink)

LOOP_PROG(ns_acct_qr, QH_N, loop_acct2, qh_sink)
