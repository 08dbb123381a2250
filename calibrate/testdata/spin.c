/*
 * spin.c - a test target for the overhead correction: spin() spins about
 * 200 ns on clock_gettime, and the program measures its own mean duration
 * without probes on spin_copy(), the same code under another name, timed
 * in blocks of 64 calls so that the clock reads cost nothing per call.
 *
 * usage: spin SECONDS OUTFILE
 * Every 50 ms it writes the unprobed mean (ns per call) to OUTFILE and
 * sleeps 5 ms outside any call (as the calibration target does).
 * build: gcc -O2 -fno-omit-frame-pointer -fno-ipa-icf -fcf-protection=none
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

volatile unsigned long sink, sink_copy;

__attribute__((noinline)) void spin(void)
{
	long t0 = now_ns();
	while (now_ns() - t0 < 200)
		;
	sink++;
}

__attribute__((noinline)) void spin_copy(void)
{
	long t0 = now_ns();
	while (now_ns() - t0 < 200)
		;
	sink_copy++;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s SECONDS OUTFILE\n", argv[0]);
		return 2;
	}
	long end = now_ns() + (long)(atof(argv[1]) * 1e9);
	long rest = now_ns() + 50000000L;
	double own_sum = 0, own_n = 0;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
	while (now_ns() < end) {
		for (int i = 0; i < 64; i++)
			spin();
		long t0 = now_ns();
		for (int i = 0; i < 64; i++)
			spin_copy();
		own_sum += now_ns() - t0;
		own_n += 64;
		if (now_ns() >= rest) {
			FILE *f = fopen(tmp, "w");
			if (f) {
				fprintf(f, "%.3f %.0f\n", own_sum / own_n, own_n);
				fclose(f);
				rename(tmp, argv[2]);
			}
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
			rest = now_ns() + 50000000L;
		}
	}
	return 0;
}
