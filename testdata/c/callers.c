/*
 * callers.c - a timed function reached through callers that keep no
 * frame pointer. Built -O2 -fomit-frame-pointer: each caller keeps six
 * values live across its call, so the compiler gives one of them rbp, and a
 * frame-pointer walk at the timed function's return reads that value as a
 * frame; only call frame information leads from tp_frameless_work to main.
 *
 * callers -g N NS: print "ready pid=N", wait for SIGUSR1 (target.h), then
 * call tp_frameless_work N times (each spins NS ns) through level3 ->
 * level2 -> level1, and print "calls=N".
 * matrix-cflags: -O2 -fomit-frame-pointer
 */
#include <stdlib.h>

#include "target.h"

static volatile long in[6] = {1, 2, 3, 4, 5, 6};
static volatile long sink;

__attribute__((noinline)) void tp_frameless_work(long ns)
{
	spin(ns);
}

/* LEVEL defines a caller that holds six loaded values across its call of
 * NEXT and uses them after it (no tail call, no rematerialization). */
#define LEVEL(NAME, NEXT)                                                        \
	__attribute__((noinline)) long NAME(long ns, long a)                    \
	{                                                                        \
		long v0 = in[0] + a, v1 = in[1] * a, v2 = in[2] ^ a;             \
		long v3 = in[3] - a, v4 = in[4] + 2 * a, v5 = in[5] * 3 + a;     \
		NEXT;                                                            \
		sink = v0 ^ v1 ^ v2 ^ v3 ^ v4 ^ v5;                              \
		return v0 + v1 * v2 + v3 * v4 + v5;                              \
	}

LEVEL(level1, tp_frameless_work(ns))
LEVEL(level2, level1(ns, a + 1))
LEVEL(level3, level2(ns, a + 1))

int main(int argc, char **argv)
{
	long n = 100, ns = 200000, i, s = 0;
	int a = 1;

	if (argc > a && argv[a][0] == '-' && argv[a][1] == 'g') {
		wait_gate();
		a++;
	}
	if (argc > a)
		n = atol(argv[a]);
	if (argc > a + 1)
		ns = atol(argv[a + 1]);
	for (i = 0; i < n; i++)
		s += level3(ns, i);
	printf("calls=%ld sum=%ld\n", n, s);
	return 0;
}
