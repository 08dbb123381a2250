//go:build ignore

/*
 * target.c - the benchmark's workload: a ~200 ns function called in a loop.
 *
 * usage: target CALLS
 * Waits for a line on stdin (so probes can be attached first), calls
 * bench_fn CALLS times and prints "ns_per_call=X" measured with
 * CLOCK_MONOTONIC around the whole loop, then
 * "chunk_median_ns_per_call=Y": the median over chunks of CHUNK calls of
 * each chunk's time per call, which a burst of other work on the machine
 * (an interrupt, a preemption, a neighbour's cache traffic) moves only when
 * it lasts for half the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHUNK 1000

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

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
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
	long chunks = n / CHUNK;
	double *per = calloc(chunks + 1, sizeof(double));
	if (!per)
		return 1;
	double t0 = now_ns(), tc = t0;
	for (long c = 0; c < chunks; c++) {
		for (long i = 0; i < CHUNK; i++)
			bench_fn();
		double t = now_ns();
		per[c] = (t - tc) / CHUNK;
		tc = t;
	}
	for (long i = chunks * CHUNK; i < n; i++)
		bench_fn();
	double t1 = now_ns();
	printf("ns_per_call=%.2f\n", (t1 - t0) / n);
	if (chunks > 0) {
		qsort(per, chunks, sizeof(double), cmp);
		printf("chunk_median_ns_per_call=%.2f\n", per[chunks / 2]);
	}
	return 0;
}
