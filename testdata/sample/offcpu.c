// SPDX-License-Identifier: Apache-2.0
/* A thread that spends a known share of its wall time blocked in read(2)
 * on a pipe, for `sample --off-cpu` and `--wall`.
 *
 *   offcpu OUT PERIOD_US COMPUTE_US CYCLES [DELAY_MS LINGER_MS]
 *
 * A feeder thread writes one byte to a pipe every PERIOD_US microseconds
 * (on an absolute schedule); the worker thread reads it (blocking until it
 * comes: wait_byte), then computes for COMPUTE_US (spin), CYCLES times.
 * The worker measures its own time blocked in read and its wall time and
 * writes them as "key value" lines to OUT: blocked_ns, compute_ns,
 * worker_ns, reads. DELAY_MS and LINGER_MS (default 0) are sleeps before the
 * threads start and after OUT is written, so that a tracer can attach to
 * the process first and read its symbols before it exits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static long period_us, compute_us, cycles;
static volatile unsigned long sink;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *feeder(void *arg)
{
	struct timespec next;
	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long i = 0; i < cycles; i++) {
		next.tv_nsec += period_us * 1000;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		if (write(fds[1], "x", 1) != 1)
			abort();
	}
	return NULL;
}

__attribute__((noinline)) static long long wait_byte(void)
{
	char c;
	long long t0 = now_ns();
	if (read(fds[0], &c, 1) != 1)
		abort();
	return now_ns() - t0;
}

__attribute__((noinline)) static void spin(long long ns)
{
	long long end = now_ns() + ns;
	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	pthread_t th;
	long long blocked = 0, computing = 0, t0, t;
	FILE *out;

	if (argc != 5 && argc != 7) {
		fprintf(stderr, "usage: offcpu OUT PERIOD_US COMPUTE_US CYCLES [DELAY_MS LINGER_MS]\n");
		return 2;
	}
	if (argc == 7)
		usleep(atol(argv[5]) * 1000);
	period_us = atol(argv[2]);
	compute_us = atol(argv[3]);
	cycles = atol(argv[4]);
	if (pipe(fds) != 0)
		return 1;
	t0 = now_ns();
	pthread_create(&th, NULL, feeder, NULL);
	for (long i = 0; i < cycles; i++) {
		blocked += wait_byte();
		t = now_ns();
		spin(compute_us * 1000LL);
		computing += now_ns() - t;
	}
	t = now_ns() - t0;
	pthread_join(th, NULL);
	out = fopen(argv[1], "w");
	if (!out)
		return 1;
	fprintf(out, "blocked_ns %lld\ncompute_ns %lld\nworker_ns %lld\nreads %ld\n", blocked,
		computing, t, cycles);
	fclose(out);
	if (argc == 7)
		usleep(atol(argv[6]) * 1000);
	return 0;
}
