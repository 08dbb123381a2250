/*
 * qdist.c - a target whose calls have a known duration distribution and
 * which records its own durations, for tickprof's quantile tests.
 *
 * tp_qwork spins for a duration drawn from a bimodal law (80% lognormal
 * with median 200 us, 20% lognormal with median 1.5 ms, both with log
 * standard deviation 0.3) and measures its own duration with
 * clock_gettime. At the end the program prints the empirical quantiles of
 * its own measurements (the order statistic X_(ceil(n p))).
 *
 * usage: qdist [-g] CALLS SEED
 *   -g  wait for SIGUSR1 before the first call (attach by -p first)
 * Output: "ready pid=N" (with -g), then at the end
 *   calls=N q50=X q90=X q99=X q999=X min=X max=X mean=X
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

static long *own;
static long nown;

__attribute__((noinline)) void tp_qwork(long ns)
{
	long t0 = now_ns(), t;

	while ((t = now_ns()) - t0 < ns)
		;
	own[nown++] = t - t0;
}

/* xorshift64* and Box-Muller: a known law from a seed, no libc state. */
static unsigned long long rs;
static double unif(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return ((rs * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
}

static double gauss(void)
{
	return sqrt(-2 * log(unif())) * cos(2 * M_PI * unif());
}

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static long q(double p)
{
	long k = (long)ceil(nown * p - 1e-9);
	if (k < 1)
		k = 1;
	return own[k - 1];
}

int main(int argc, char **argv)
{
	int gate = gate_flag(&argc, &argv);
	long calls;

	if (argc != 3) {
		fprintf(stderr, "usage: qdist [-g] CALLS SEED\n");
		return 2;
	}
	calls = atol(argv[1]);
	rs = strtoull(argv[2], NULL, 10) * 0x9E3779B97F4A7C15ULL + 1;
	own = calloc(calls, sizeof(*own));
	if (!own)
		return 1;
	if (gate)
		wait_gate();
	for (long i = 0; i < calls; i++) {
		double med = unif() < 0.8 ? 200000 : 1500000;
		tp_qwork((long)(med * exp(0.3 * gauss())));
	}
	double sum = 0;
	for (long i = 0; i < nown; i++)
		sum += own[i];
	qsort(own, nown, sizeof(*own), cmp);
	printf("calls=%ld q50=%ld q90=%ld q99=%ld q999=%ld min=%ld max=%ld mean=%.1f\n", nown,
	       q(0.5), q(0.9), q(0.99), q(0.999), own[0], own[nown - 1], sum / nown);
	fflush(stdout);
	return 0;
}
