/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * qhist_math.h - the bucket layout of the quantile histograms (qhist.h),
 * identical to Go's histogram.Index (bpf/qhist_math_test.go checks the two
 * agree on the host): values below TP_QH_EXACT ns have a bucket each; every
 * power of two [2^k, 2^(k+1)) above is cut into TP_QH_SUB geometric
 * sub-buckets at 2^k x 2^(j/16), read from the 13 bits from the leading
 * one (m in [4096, 8192)) against round(4096 x 2^(j/16)); a bucket is at
 * most 4.45% of its lower bound wide from 4096 ns up (4.5% from 1024 ns);
 * values from 2^(TP_QH_MAX_LOG2+1) ns (~69 s) share the last bucket.
 *
 * No loop and no table: the octave from tp_log2, then the 15 threshold
 * comparisons four at a time in 16-bit lanes (tp_qh_sub).
 */
#ifndef TICKPROF_QHIST_MATH_H
#define TICKPROF_QHIST_MATH_H

#include "timing_math.h"

#define TP_QH_SUB_BITS 4
#define TP_QH_SUB (1 << TP_QH_SUB_BITS)
#define TP_QH_EXACT_BITS 5
#define TP_QH_EXACT (1 << TP_QH_EXACT_BITS)
#define TP_QH_MANT_BITS 12
#define TP_QH_MAX_LOG2 35
#define TP_QH_BUCKETS (TP_QH_EXACT + (TP_QH_MAX_LOG2 - TP_QH_EXACT_BITS + 1) * TP_QH_SUB + 1)

/*
 * The sub-bucket thresholds on m, round(4096 x 2^(j/16)) for j = 1..15
 * (and 0x7fff, above every m), four to a word in 16-bit lanes.
 */
#define TP_QH_PACK(a, b, c, d) ((__u64)(a) | (__u64)(b) << 16 | (__u64)(c) << 32 | (__u64)(d) << 48)
#define TP_QH_T0 TP_QH_PACK(4277, 4467, 4664, 4871)
#define TP_QH_T1 TP_QH_PACK(5087, 5312, 5547, 5793)
#define TP_QH_T2 TP_QH_PACK(6049, 6317, 6597, 6889)
#define TP_QH_T3 TP_QH_PACK(7194, 7512, 7845, 0x7fff)
#define TP_QH_LANES 0x0001000100010001ULL
#define TP_QH_TOPS 0x8000800080008000ULL

/*
 * tp_qh_sub is the number of thresholds at or below m (m < 2^15), that is
 * the sub-bucket: in each 16-bit lane, (m | 0x8000) - t keeps its top bit
 * exactly when m >= t (no lane borrows from the next, since t < 0x8000);
 * the four words' top bits are summed lane by lane, then across lanes by
 * a multiplication (SWAR: four comparisons per subtraction, no branch, no
 * loop, no table).
 */
static __always_inline __u32 tp_qh_sub(__u64 m)
{
	__u64 x = (m | 0x8000) * TP_QH_LANES, z;

	z = ((x - TP_QH_T0) & TP_QH_TOPS) >> 15;
	z += ((x - TP_QH_T1) & TP_QH_TOPS) >> 15;
	z += ((x - TP_QH_T2) & TP_QH_TOPS) >> 15;
	z += ((x - TP_QH_T3) & TP_QH_TOPS) >> 15;
	return (__u32)((z * TP_QH_LANES) >> 48);
}

/* tp_qh_index_log2 is the bucket of a duration of v ns, < TP_QH_BUCKETS,
 * given k = tp_log2(v) (the caller has it from the log2 histogram). */
static __always_inline __u32 tp_qh_index_log2(__u64 v, __u32 k)
{
	__u64 m;

	if (v < TP_QH_EXACT)
		return (__u32)v;
	if (k > TP_QH_MAX_LOG2)
		return TP_QH_BUCKETS - 1;
	if (k >= TP_QH_MANT_BITS)
		m = v >> (k - TP_QH_MANT_BITS);
	else
		m = v << (TP_QH_MANT_BITS - k);
	return TP_QH_EXACT + ((k - TP_QH_EXACT_BITS) << TP_QH_SUB_BITS) + tp_qh_sub(m);
}

/* tp_qh_index is the bucket of a duration of v ns, < TP_QH_BUCKETS. */
static __always_inline __u32 tp_qh_index(__u64 v)
{
	return tp_qh_index_log2(v, tp_log2(v));
}

#endif /* TICKPROF_QHIST_MATH_H */
