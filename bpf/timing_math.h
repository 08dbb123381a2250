/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * timing_math.h - the overflow-free arithmetic of timing.h, in plain C so
 * that a host test (bpf/timing_math_test.go) compiles it with gcc and
 * checks it against 128-bit integers at the limits: a day of one-second
 * calls in ns, and the largest 64-bit durations.
 *
 * The includer provides __u32/__u64 and __always_inline.
 */
#ifndef TICKPROF_TIMING_MATH_H
#define TICKPROF_TIMING_MATH_H

/* tp_add_sq adds v*v to the 128-bit sum (*hi:*lo). Below 2^32 (4.3 s in
 * ns, every tick count) v*v fits in 64 bits: one multiplication and the
 * carry, where the full product takes three and two carries. */
static __always_inline void tp_add_sq(__u64 *lo, __u64 *hi, __u64 v)
{
	__u64 a = v >> 32, b = v & 0xffffffffULL;
	__u64 l = b * b, h, cross, add;

	if (a == 0) {
		*lo += l;
		if (*lo < l)
			(*hi)++;
		return;
	}
	h = a * a;
	cross = a * b;
	/* v^2 = a^2 2^64 + 2ab 2^32 + b^2 ; 2ab 2^32 = cross << 33 */
	h += cross >> 31;
	add = cross << 33;
	l += add;
	if (l < add)
		h++;
	*lo += l;
	if (*lo < l)
		h++;
	*hi += h;
}

/* tp_nonzero is 1 when x (below 2^63) is not 0, else 0, without a
 * branch: 0 - x then has its top bit set. The empty asm keeps the compiler
 * from turning it back into a comparison, which BPF has only as a jump. */
static __always_inline __u64 tp_nonzero(__u64 x)
{
	asm volatile("" : "+r"(x));
	return (0 - x) >> 63;
}

/* tp_log2 is floor(log2(v)) for v > 0, 0 for v == 0. Without a branch:
 * with one a halving step, the verifier followed every one of the 64
 * results, as a known constant, through the rest of the program (the
 * histogram updates after it), which multiplied the work of verifying
 * every program that times a call. */
static __always_inline __u32 tp_log2(__u64 v)
{
	__u64 r = 0, s;

	/* One halving step a line, as a table. */
	/* clang-format off */
	s = tp_nonzero(v >> 32) << 5; v >>= s; r |= s;
	s = tp_nonzero(v >> 16) << 4; v >>= s; r |= s;
	s = tp_nonzero(v >> 8) << 3;  v >>= s; r |= s;
	s = tp_nonzero(v >> 4) << 2;  v >>= s; r |= s;
	s = tp_nonzero(v >> 2) << 1;  v >>= s; r |= s;
	/* clang-format on */
	r |= (v >> 1);
	return (__u32)r;
}

#endif /* TICKPROF_TIMING_MATH_H */
