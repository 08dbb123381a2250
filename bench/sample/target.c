/* Fixed CPU-bound work for the sampling benchmark: ITER rounds through a
 * few nested frame-pointer functions. Prints the wall and CPU time of the
 * work in ns: "wall_ns N cpu_ns N".
 * Build: gcc -O1 -fno-omit-frame-pointer -fno-inline -o target target.c */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) void leaf_done(void) { __asm__ volatile(""); }

__attribute__((noinline)) void leaf(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
	leaf_done();
}

__attribute__((noinline)) void mid(unsigned long n) { leaf(n); leaf(n / 2); }
__attribute__((noinline)) void top(unsigned long n) { mid(n); leaf(n / 4); }

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	long long w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
	for (long r = 0; r < rounds; r++)
		top(100000);
	long long w1 = ns(CLOCK_MONOTONIC), c1 = ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("wall_ns %lld cpu_ns %lld\n", w1 - w0, c1 - c0);
	return 0;
}
