/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ustack.h - a bounded copy of user memory (the user stack) into a buffer
 * in a map value, for unwinding by call frame information in user space.
 * Shared by the sampling program (sample.bpf.c) and the crossing records
 * of the user-function timing programs (timing.h).
 */
#ifndef TICKPROF_USTACK_H
#define TICKPROF_USTACK_H

#include "common.h"

#define USTACK_PAGE 4096

/*
 * ustack_copy copies want bytes of user memory from addr into buf at pos
 * (buf holds cap bytes; cap and max are constants where it is inlined, max
 * the most it copies): to the end of addr's page, then whole pages, until
 * want or an unmapped page, so that a copy of the stack stops exactly where
 * the stack's mapping ends. It returns the bytes copied.
 */
static __always_inline __u32 ustack_copy(__u8 *buf, __u32 cap, __u32 max, __u32 pos,
					 __u64 addr, __u32 want)
{
	__u32 got = 0, at, piece;
	__u64 sz;
	int i;

	if (want > max)
		want = max;
	piece = USTACK_PAGE - (addr & (USTACK_PAGE - 1));
	for (i = 0; i < max / USTACK_PAGE + 1; i++) {
		if (got >= want)
			break;
		if (piece > want - got)
			piece = want - got;
		/* The empty asm keeps clang from passing another copy of the
		 * size than the one checked, so the verifier sees its bounds. */
		sz = piece;
		asm volatile("" : "+r"(sz));
		at = pos + got;
		if (sz == 0 || sz > USTACK_PAGE || at > cap - USTACK_PAGE)
			break;
		asm volatile("" : "+r"(sz));
		if (bpf_probe_read_user(&buf[at], sz, (void *)(addr + got)) != 0)
			break;
		got += piece;
		piece = USTACK_PAGE;
	}
	return got;
}

#endif /* TICKPROF_USTACK_H */
