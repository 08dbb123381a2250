// SPDX-License-Identifier: Apache-2.0
/* Two threads passing a byte back and forth over two pipes, N round trips:
 * two context switches per hop when they share a CPU, the worst case for a
 * program on sched_switch. Prints the switches per second it caused
 * (2 per round trip at least) and its elapsed time in ns. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long n;

static void *pong(void *arg)
{
	char c;
	(void)arg;
	for (long i = 0; i < n; i++)
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			abort();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	struct timespec t0, t1;
	char c = 'x';

	n = argc > 1 ? atol(argv[1]) : 200000;
	if (pipe(ab) || pipe(ba))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&th, NULL, pong, NULL);
	for (long i = 0; i < n; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			abort();
	pthread_join(th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("elapsed_ns %.0f\nround_trips_per_s %.0f\n", ns, n / ns * 1e9);
	return 0;
}
