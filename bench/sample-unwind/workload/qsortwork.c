/* A CPU-bound work for the unwinding cost benchmark (slowdown.sh), built
 * -O2 -fomit-frame-pointer: ROUNDS times, sort a 2,048-element array (8 KiB,
 * cache-resident, so that the run's CPU time depends little on other load
 * on the machine) with libc's qsort, which Debian builds without frame
 * pointers, calling back into a comparator here; several frameless levels
 * under main. Stopped (SIGSTOP) right after exec so that a profiler can
 * attach before the work starts; SIGCONT starts it. Prints
 * "wall_ns N cpu_ns N" (CLOCK_PROCESS_CPUTIME_ID), as bench/agent/work.c.
 * usage: qsortwork ROUNDS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LEN 2048

static volatile unsigned sink;

static int cmp(const void *a, const void *b)
{
	/* A latency-bound multiply chain, as bench/sample/target.c's leaf:
	 * most of the time, and little of it in mispredicted branches. */
	unsigned long x = *(const unsigned *)a, y = *(const unsigned *)b;
	for (int i = 0; i < 64; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		y = y * 6364136223846793005UL + 1442695040888963407UL;
	}
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static void sort_once(unsigned *v, unsigned seed)
{
	for (int i = 0; i < LEN; i++)
		v[i] = (i + seed) * 40503u;
	qsort(v, LEN, sizeof *v, cmp);
	sink += v[LEN / 2];
}

__attribute__((noinline)) static void level2(unsigned *v, unsigned seed) { sort_once(v, seed); }
__attribute__((noinline)) static void level1(unsigned *v, unsigned seed) { level2(v, seed * 3 + 1); }

static long long ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	static unsigned v[LEN];
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	raise(SIGSTOP);
	long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int r = 0; r < rounds; r++)
		level1(v, r);
	printf("wall_ns %lld cpu_ns %lld\n", ns(CLOCK_MONOTONIC) - w0, ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
