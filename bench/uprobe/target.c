//go:build ignore

/*
 * target.c - the benchmark's workload: a ~200 ns function called in a loop.
 *
 * usage: target CALLS
 * Waits for a line on stdin (so probes can be attached first), calls
 * bench_fn CALLS times and prints "ns_per_call=X" measured with
 * CLOCK_MONOTONIC around the whole loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;
unsigned long spin_iters = 60;

__attribute__((noinline)) void bench_fn(void)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < spin_iters; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	char line[16];
	if (argc != 2 && argc != 3)
		return 2;
	long n = atol(argv[1]);
	if (argc == 3)
		spin_iters = strtoul(argv[2], NULL, 10);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		bench_fn();
	double t1 = now_ns();
	printf("ns_per_call=%.2f\n", (t1 - t0) / n);
	return 0;
}
