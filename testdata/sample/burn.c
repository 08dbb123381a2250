/* burn: two functions burning CPU in a 3:1 ratio of work, for tickprof
 * sample tests. Usage: burn SECONDS [OUTFILE]
 * Runs for SECONDS, calling burn_a (3 units of work) and burn_b (1 unit) in
 * turn, and writes to OUTFILE (or stdout) the CPU time each function took,
 * measured with CLOCK_THREAD_CPUTIME_ID around every call, less the mean
 * of an empty measurement (two clock reads back to back), so that the
 * clock's own system calls, which a sampler sees outside both functions,
 * are not counted as theirs:
 *   calls_a N
 *   ns_a T
 *   calls_b N
 *   ns_b T
 * Build: gcc -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
 *        -fno-inline -o burn burn.c */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long now_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long now_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A call makes the burn functions non-leaf, so gcc gives them a frame
 * pointer even where -mno-omit-leaf-frame-pointer is not honoured. */
__attribute__((noinline)) void burn_done(void) { __asm__ volatile(""); }

/* The loop is written out in each function so that all of a function's
 * time is its own (flat) time. */
#define SPIN(n)                                                                \
	do {                                                                   \
		unsigned long x = sink;                                        \
		for (unsigned long i = 0; i < (n); i++)                        \
			x = x * 6364136223846793005UL + 1442695040888963407UL; \
		sink = x;                                                      \
		burn_done();                                                   \
	} while (0)

/* Each pair of calls does a random amount of work (burn_a three times
 * burn_b's), so that the loop has no period a periodic sampling clock
 * could lock onto: with fixed work, one pass took about the sampling
 * period at 1999 Hz, successive samples fell at nearly the same point of
 * the pass, and the sampled share wandered far beyond its interval. */
static unsigned long work = 100000;

static void next_work(void)
{
	static unsigned long long lcg = 88172645463325252ULL;
	lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
	work = 50000 + (unsigned long)((lcg >> 33) % 100001); /* 50k..150k */
}

__attribute__((noinline)) void burn_a(void) { SPIN(3 * work); }
__attribute__((noinline)) void burn_b(void) { SPIN(work); }

/* empty_ns is the mean CPU time between two back-to-back clock reads:
 * what each measured interval holds besides the function called. */
static double empty_ns(void)
{
	long long sum = 0;
	enum { N = 2000 };
	for (int i = 0; i < N; i++) {
		long long t0 = now_cpu();
		long long t1 = now_cpu();
		sum += t1 - t0;
	}
	return (double)sum / N;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	double empty = empty_ns();
	long long end = now_wall() + (long long)(secs * 1e9);
	long long ns_a = 0, ns_b = 0, calls_a = 0, calls_b = 0;
	while (now_wall() < end) {
		next_work();
		long long t0 = now_cpu();
		burn_a();
		long long t1 = now_cpu();
		burn_b();
		long long t2 = now_cpu();
		ns_a += t1 - t0;
		ns_b += t2 - t1;
		calls_a++;
		calls_b++;
	}
	FILE *out = stdout;
	if (argc > 2 && !(out = fopen(argv[2], "w"))) {
		perror(argv[2]);
		return 1;
	}
	fprintf(out, "calls_a %lld\nns_a %.0f\ncalls_b %lld\nns_b %.0f\nempty_ns %.0f\n", calls_a,
		ns_a - empty * calls_a, calls_b, ns_b - empty * calls_b, empty);
	return fclose(out) != 0;
}
