//go:build ignore

/*
 * target.c - a workload for timing under an overhead budget: THREADS
 * threads each call bud_fn (~100 ns of work; built -O0 so that its first instruction is push %rbp, which the kernel emulates) and then do WORK iterations of
 * other work, for SECONDS, and the program prints its own throughput. The
 * slowdown a profiler causes is this throughput without it over with it.
 * Two throughputs: calls per second of wall-clock time, and calls per
 * second of the process's CPU time. The probes' traps and programs run in
 * the calling thread and are charged to its CPU time; time the threads
 * spend preempted by other work on the machine is not, so the second is
 * the one a loaded machine leaves readable.
 *
 * usage: target THREADS SECONDS WORK
 * Waits for a line on stdin, runs, prints "calls_per_sec=X" and
 * "calls_per_cpu_sec=Y".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static long work_iters;
static double seconds;
static volatile int stop;

__attribute__((noinline)) void bud_fn(void)
{
	unsigned long x = sink;
	for (int i = 0; i < 40; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

static void *worker(void *arg)
{
	long *calls = arg;
	unsigned long x = 1;
	while (!stop) {
		bud_fn();
		for (long i = 0; i < work_iters; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
		(*calls)++;
	}
	sink += x;
	return NULL;
}

int main(int argc, char **argv)
{
	char line[16];
	if (argc != 4)
		return 2;
	int threads = atoi(argv[1]);
	seconds = atof(argv[2]);
	work_iters = atol(argv[3]);
	if (threads < 1 || threads > 64)
		return 2;
	if (!fgets(line, sizeof line, stdin))
		return 1;
	pthread_t tid[64];
	long calls[64] = { 0 };
	double t0 = now(), cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, &calls[i]);
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	stop = 1;
	long total = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		total += calls[i];
	}
	double wall = now() - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
	printf("calls_per_sec=%.1f\ncalls_per_cpu_sec=%.1f\n", total / wall, total / cpu);
	return 0;
}
