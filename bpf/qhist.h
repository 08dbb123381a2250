/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * qhist.h - per-target, per-CPU log-linear histograms of exact durations,
 * for quantiles with intervals (Go: package histogram, which merges the
 * per-CPU copies). Included by timing.h; tp_account calls tp_qh_add_to for
 * every call timed with the exact clock when tp_quantiles is set.
 *
 * Layout: qhist_math.h. Size: TP_QH_BUCKETS (529) x 8 bytes = 4232 bytes per target per CPU
 * (and the refinement's bins below, 2048 bytes per target per CPU);
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

/*
 * Refinement (Go: histogram.Refiner, internal/loader/qhist.go). At each refinement
 * look Go picks, per target, the buckets near the candidate order
 * statistics of the quantiles asked for and, in each, a window
 * [a, a + span) cut into equal bins; a call whose bucket is refined is
 * also counted in its bin, or in one of two bins for the bucket's parts
 * below and above the window, so the interval's ends are known to a bin
 * instead of a bucket.
 *
 * Two configurations per target, in the target's tp_qr_cfg element (key
 * target) beside the half in use, cur, and two bin pools (tp_qr_pool, key
 * 2 target + half): the programs use the half cur names; Go writes the
 * other half's configuration (rewriting the half in use with the same
 * bytes), zeroes its pool, then flips cur by a second write (all other
 * bytes unchanged), and reads the half it left (no longer written: its
 * counts are final). The half in use is read from the element the
 * programs look up anyway, so no lookup is spent on it. A half's pool is
 * thus never zeroed or reconfigured while the programs use it, except by
 * a program that read cur before a flip and is still between that read
 * and its increment a whole look later (Go flips at most once per poll).
 *
 * A slot's bin of a duration in the window is off + 1 + ((dns - a) * mul) >> 31 (mul =
 * ceil(2^31 / bin width), so no division; Go computes the same edges).
 * Sizes: tp_qr_pool 2 x TP_QR_BINS x 4 = 2048 bytes per target per CPU
 * (u32 bins: a half is zeroed every other look); tp_qr_cfg 8 + 2 x 1304
 * bytes per target, not per CPU.
 */
#define TP_QR_SLOTS 32
#define TP_QR_BINS 256
#define TP_QR_POS 536 /* TP_QH_BUCKETS rounded up to 8 bytes */

/* Load-time constant: 1 to refine (with tp_quantiles). */
volatile const __u32 tp_qrefine = 0;

struct tp_qr_slot {
	__u64 a;    /* first ns of the window */
	__u32 span; /* the window's length (ns) */
	__u32 mul;  /* ceil(2^31 / bin width) */
	__u32 off;  /* the bin of the bucket's calls below the window */
	__u32 end;  /* the bin of those above it */
};

struct tp_qr_cfg {
	__u32 cur; /* the half in use (bit 0) */
	__u32 pad;
	__u8 pos[2][TP_QR_POS]; /* per half and bucket: 0, or its slot + 1 */
	struct tp_qr_slot s[2][TP_QR_SLOTS];
};

struct tp_qr_pool {
	__u32 b[TP_QR_BINS];
};

/* A per-target array: tp_qr_cfg (shared) and tp_qr_pool (per CPU). */
#define TP_QR_MAP(name, kind, vtype)                       \
	struct {                                           \
		__uint(type, kind);                        \
		__uint(max_entries, 2); /* loader-sized */ \
		__type(key, __u32);                        \
		__type(value, vtype);                      \
	} name SEC(".maps")

TP_QR_MAP(tp_qr_cfg, BPF_MAP_TYPE_ARRAY, struct tp_qr_cfg);
TP_QR_MAP(tp_qr_pool, BPF_MAP_TYPE_PERCPU_ARRAY, struct tp_qr_pool);

/* tp_qr_add counts a call of dns ns, in bucket i, in its bin when bucket i
 * of target is refined. Called after the
 * bucket's count: Go reads the bins before the buckets, so every binned
 * call it reads is in the buckets it reads. */
static __always_inline void tp_qr_add(__u32 target, __u32 i, __u64 dns)
{
	struct tp_qr_cfg *c = bpf_map_lookup_elem(&tp_qr_cfg, &target);
	struct tp_qr_slot *s;
	struct tp_qr_pool *pl;
	__u32 half, key, p, k;
	__u64 d;

	asm volatile("" : "+r"(i));
	if (!c || i >= TP_QH_BUCKETS)
		return;
	half = c->cur & 1;
	p = c->pos[half][i];
	if (!p)
		return;
	s = &c->s[half][(p - 1) & (TP_QR_SLOTS - 1)];
	d = dns - s->a;
	if (dns < s->a)
		k = s->off; /* the bucket below the window */
	else if (d >= s->span)
		k = s->end; /* the bucket above it */
	else
		k = s->off + 1 + (__u32)((d * s->mul) >> 31);
	key = target * 2 + half;
	pl = bpf_map_lookup_elem(&tp_qr_pool, &key);
	if (pl)
		pl->b[k & (TP_QR_BINS - 1)]++;
}

/* tp_qh_add_to counts a call of dns ns (k = tp_log2(dns)) in target's
 * histogram and, when refine, in its refined bin. */
static __always_inline void tp_qh_add_to(__u32 target, __u64 dns, __u32 k, __u32 refine)
{
	__u32 i = tp_qh_index_log2(dns, k);

	tp_qh_count(target, i);
	if (refine)
		tp_qr_add(target, i, dns);
}

#endif /* TICKPROF_QHIST_H */
