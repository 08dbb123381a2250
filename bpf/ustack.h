/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
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

/* Bytes kept above the process's start_stack (argc, the first argv
 * pointers) in a copy of the main thread's stack: _start's frame, whose
 * return address is undefined in its call frame information, lies below it,
 * so an unwinder reads nothing higher. */
#define USTACK_ABOVE 256

/* Kernel types read here, relocated by CO-RE (the ___ustack flavour keeps
 * them apart from other partial definitions of the same structs). */
struct mm_struct___ustack {
	unsigned long start_stack;
} __attribute__((preserve_access_index));

struct task_struct___ustack {
	struct mm_struct___ustack *mm;
} __attribute__((preserve_access_index));

/*
 * ustack_end is where a copy of the current task's user stack from sp may
 * stop: on the main thread's stack (sp below the process's start_stack by
 * less than max), USTACK_ABOVE bytes above start_stack, so that the argv
 * and environment strings and the auxiliary vector between it and the
 * mapping's end (several KiB in a usual environment) are not copied with
 * every sample; elsewhere (a thread's stack, a Go stack, an alternate
 * signal stack) no bound (~0): the copy ends at max or at the mapping's end.
 */
static __always_inline __u64 ustack_end(__u64 sp, __u32 max)
{
	struct task_struct___ustack *t = (void *)bpf_get_current_task();
	__u64 top = BPF_CORE_READ(t, mm, start_stack);

	if (top == 0 || sp >= top || top - sp >= max)
		return ~0ULL;
	return top + USTACK_ABOVE;
}

/*
 * ustack_copy copies want bytes of user memory from addr into buf at pos
 * (buf holds cap bytes; cap and max are constants where it is inlined, max
 * the most it copies): to the end of addr's page, then whole pages, until
 * want, an unmapped page, or the page holding end (ustack_end), so that a
 * copy of the stack stops where the stack's mapping ends or, on the main
 * thread, a page above its live part. It returns the bytes copied. (end
 * only stops the loop, at a page's end: a variable length inside the loop
 * makes the verifier walk far more states.)
 */
static __always_inline __u32 ustack_copy(__u8 *buf, __u32 cap, __u32 max, __u32 pos, __u64 addr,
					 __u32 want, __u64 end)
{
	__u32 got = 0, at, piece;
	__u64 sz;
	int i;

	if (want > max)
		want = max;
	piece = USTACK_PAGE - (addr & (USTACK_PAGE - 1));
	for (i = 0; i < max / USTACK_PAGE + 1; i++) {
		if (got >= want || addr + got >= end)
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
