/* SPDX-License-Identifier: GPL-2.0 */
/*
 * qhist.h - per-target, per-CPU log-linear histograms of exact durations,
 * for quantiles with intervals (Go: package histogram, which merges the
 * per-CPU copies). Included by timing.h; tp_account calls tp_qh_add for
 * every call timed with the exact clock when tp_quantiles is set.
 *
 * Layout: qhist_math.h. Size: TP_QH_BUCKETS (529) x 8 bytes = 4232 bytes per target per CPU;
 * the loader sizes tp_qhist to the target count when quantiles are on and
 * to one element otherwise (100 targets on 2 CPUs: 846 KiB; on 64 CPUs:
 * 27 MiB).
 */
#ifndef TICKPROF_QHIST_H
#define TICKPROF_QHIST_H

#include "qhist_math.h"

/* Load-time constant: 1 to fill tp_qhist (exact clock only). */
volatile const __u32 tp_quantiles = 0;

struct tp_qhist {
	__u64 b[TP_QH_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct tp_qhist);
} tp_qhist SEC(".maps");

/* tp_qh_count counts a call in bucket i of target's histogram. */
static __always_inline void tp_qh_count(__u32 target, __u32 i)
{
	struct tp_qhist *h = bpf_map_lookup_elem(&tp_qhist, &target);

	/* Keep the bound check: the verifier must see i < TP_QH_BUCKETS. */
	asm volatile("" : "+r"(i));
	if (h && i < TP_QH_BUCKETS)
		h->b[i]++;
}

/* tp_qh_add counts a call of dns ns in target's histogram. */
static __always_inline void tp_qh_add(__u32 target, __u64 dns)
{
	tp_qh_count(target, tp_qh_index(dns));
}

#endif /* TICKPROF_QHIST_H */
