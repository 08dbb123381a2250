/*
 * coverage.c - the C targets of tickprof's coverage suite (bench/coverage):
 * ordinary call patterns, each probed function timing itself inside, on
 * every call, so that the suite knows the truth tickprof's interval must
 * hold.
 *
 * Every probed function reads CLOCK_MONOTONIC at its first and at its last
 * statement and stores the difference. That inner time misses the parts of
 * the two clock reads outside the two readings (together about one read),
 * the prologue, the store and the return: the truth is the inner time plus
 * clock_ns, the cost of one read measured in a loop at the start (a few
 * tens of ns; the remaining few instructions are the truth's own error).
 *
 * usage: coverage -o TRUTH [-s SECONDS] MODE [ARG]
 *   sleep US    cov_handler (about 10 us) after each sleep of US microseconds
 *   b2b         cov_short, 1-3 us (uniform, from a fixed seed), back to back
 *   contend H   cov_handler back to back while H threads of this process spin
 *               (more runnable threads than CPUs when H >= the CPUs)
 *   tiny        cov_tiny (about 100 ns: two clock reads and 16 multiply-adds)
 *               back to back
 *   getppid     getppid(2) back to back
 *   read        read(2) of 64 bytes from /dev/zero back to back
 *   -s          how long to call (default 5 s); the program then exits
 *   -o          the truth file, written at the exit
 *
 * The truth file has one key=value per line: calls, mean_ns (inner mean
 * plus clock_ns), inner_mean_ns, clock_ns and, when every duration was
 * kept (at most MAXKEPT calls), p50_ns, p90_ns, p99_ns and p99.9_ns: the
 * order statistics X_(ceil(n p)) of the durations (plus clock_ns), the
 * definition tickprof's quantiles estimate. The syscall modes write calls
 * only: their truth is the exact clock of the same run (--validate).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../c/target.h"

#define MAXKEPT (1L << 23)

static long *kept;         /* every inner duration while they fit */
static long ncalls;        /* probed calls made */
static double inner_sum;   /* sum of the inner durations */
static volatile int stop;  /* tells the spinning threads to end */
static volatile unsigned long sink;
static unsigned long long rs = 0x9E3779B97F4A7C15ULL;

/* keep records one call's inner duration. Only the calling thread
 * (main) makes probed calls, so no lock is needed. */
static void keep(long ns)
{
	if (ncalls < MAXKEPT)
		kept[ncalls] = ns;
	ncalls++;
	inner_sum += ns;
}

/* uniform returns a draw in [0, 1) of xorshift64*: a known sequence. */
static double uniform(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return ((rs * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}

__attribute__((noinline)) void cov_handler(void)
{
	long t0 = now_ns();
	spin(10000);
	keep(now_ns() - t0);
}

__attribute__((noinline)) void cov_short(long ns)
{
	long t0 = now_ns();
	spin(ns);
	keep(now_ns() - t0);
}

__attribute__((noinline)) void cov_tiny(void)
{
	long t0 = now_ns();
	unsigned long x = sink;
	for (int i = 0; i < 16; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
	keep(now_ns() - t0);
}

/* clock_cost returns the cost of one now_ns(), in ns: the least mean over
 * 50 loops of 2,000 reads (a loop that other work preempted counts the
 * preemption, which the missing part of a call almost never holds). */
static double clock_cost(void)
{
	const long n = 2000;
	double best = 1e9;

	for (int b = 0; b < 50; b++) {
		long t0 = now_ns();
		for (long i = 0; i < n; i++)
			now_ns();
		double c = (double)(now_ns() - t0) / (n + 1);
		if (c < best)
			best = c;
	}
	return best;
}

static void *spinner(void *arg)
{
	unsigned long x = (unsigned long)arg;
	while (!stop)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink += x;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* quantile returns X_(ceil(n p)) of the sorted kept durations. */
static long quantile(double p)
{
	double np = ncalls * p - 1e-9;
	long k = (long)np;

	if (k < np)
		k++; /* ceil */
	if (k < 1)
		k = 1;
	return kept[k - 1];
}

static int write_truth(const char *path, double cc, long syscalls)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	if (syscalls >= 0) {
		fprintf(f, "calls=%ld\n", syscalls);
		return fclose(f) != 0;
	}
	double inner = ncalls ? inner_sum / ncalls : 0;
	fprintf(f, "calls=%ld\nmean_ns=%.1f\ninner_mean_ns=%.1f\nclock_ns=%.1f\n", ncalls, inner + cc, inner, cc);
	if (ncalls > 0 && ncalls <= MAXKEPT) {
		qsort(kept, ncalls, sizeof(*kept), cmp);
		fprintf(f, "p50_ns=%.1f\np90_ns=%.1f\np99_ns=%.1f\np99.9_ns=%.1f\n", quantile(0.5) + cc,
			quantile(0.9) + cc, quantile(0.99) + cc, quantile(0.999) + cc);
	}
	return fclose(f) != 0;
}

/* run calls the mode's function until seconds have passed and returns the
 * syscalls made (-1 for the user-function modes), or -2 on bad input. */
static long run(const char *mode, long arg, double seconds)
{
	long end = now_ns() + (long)(seconds * 1e9), n = 0;
	char buf[64];

	if (!strcmp(mode, "sleep")) {
		struct timespec ts = { arg / 1000000, (arg % 1000000) * 1000 };
		while (now_ns() < end) {
			nanosleep(&ts, NULL);
			cov_handler();
		}
	} else if (!strcmp(mode, "b2b")) {
		while (now_ns() < end)
			cov_short(1000 + (long)(2000 * uniform()));
	} else if (!strcmp(mode, "contend")) {
		pthread_t tid[64];
		if (arg < 1 || arg > 64)
			return -2;
		for (long i = 0; i < arg; i++)
			pthread_create(&tid[i], NULL, spinner, (void *)(i + 1));
		while (now_ns() < end)
			cov_handler();
		stop = 1;
		for (long i = 0; i < arg; i++)
			pthread_join(tid[i], NULL);
	} else if (!strcmp(mode, "tiny")) {
		while (now_ns() < end)
			cov_tiny();
	} else if (!strcmp(mode, "getppid")) {
		for (; now_ns() < end; n++)
			getppid();
		return n;
	} else if (!strcmp(mode, "read")) {
		int fd = open("/dev/zero", O_RDONLY);
		if (fd < 0)
			return -2;
		for (; now_ns() < end; n++)
			if (read(fd, buf, sizeof(buf)) != sizeof(buf))
				return -2;
		close(fd);
		return n;
	} else {
		return -2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	double seconds = 5;
	int opt;

	while ((opt = getopt(argc, argv, "o:s:")) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 's': seconds = atof(optarg); break;
		default: return 2;
		}
	}
	if (!out || optind >= argc || seconds <= 0) {
		fprintf(stderr, "usage: coverage -o TRUTH [-s SECONDS] MODE [ARG]\n");
		return 2;
	}
	kept = malloc(MAXKEPT * sizeof(*kept));
	if (!kept)
		return 1;
	double cc = clock_cost();
	long sys = run(argv[optind], optind + 1 < argc ? atol(argv[optind + 1]) : 0, seconds);
	if (sys == -2) {
		fprintf(stderr, "coverage: bad mode or argument: %s\n", argv[optind]);
		return 2;
	}
	return write_truth(out, cc, sys);
}
