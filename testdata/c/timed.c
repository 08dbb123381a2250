/*
 * timed.c - a target for tickprof's timing tests: functions whose true
 * duration is set by spinning on the monotonic clock, one that sleeps, a
 * recursive one, threads. Each function measures its own time with
 * clock_gettime, and the program prints the mean at the end, so a test can
 * compare tickprof's numbers with the target's own.
 *
 * usage: timed [-g] [-t THREADS] [-r DEPTH] [-x MS] FUNC CALLS
 *   FUNC   spin1us | spin20us | spin500us | sleep2ms | recurse | getpid | empty
 *   CALLS  calls per thread (0: call forever)
 *   -g     wait for SIGUSR1 before the first call (attach by -p first)
 *   -t     threads (default 1)
 *   -r     recursion depth for recurse (default 16)
 *   -x     exit after MS milliseconds, in the middle of calls
 * Output (stdout, and appended to the file $TIMED_OUT if set, at the end):
 *   calls=N inner_mean_ns=X
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

static long calls_per_thread;
static int depth = 16;
static void (*func)(void);

__attribute__((noinline)) void tp_spin1us(void)
{
	long t0 = now_ns();
	spin(1000);
	record(now_ns() - t0);
}

__attribute__((noinline)) void tp_spin20us(void)
{
	long t0 = now_ns();
	spin(20000);
	record(now_ns() - t0);
}

__attribute__((noinline)) void tp_spin500us(void)
{
	long t0 = now_ns();
	spin(500000);
	record(now_ns() - t0);
}

__attribute__((noinline)) void tp_sleep2ms(void)
{
	long t0 = now_ns();
	struct timespec ts = { 0, 2000000 };
	nanosleep(&ts, NULL);
	record(now_ns() - t0);
}

__attribute__((noinline)) void tp_empty(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int tp_recurse(int d)
{
	int r = 0;
	spin(2000);
	if (d > 1)
		r = tp_recurse(d - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static void call_recurse(void)
{
	tp_recurse(depth);
}

static void call_getpid(void)
{
	getpid();
}

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; calls_per_thread == 0 || i < calls_per_thread; i++)
		func();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1, gate = 0, opt, exit_ms = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "gt:r:x:")) != -1) {
		switch (opt) {
		case 'g': gate = 1; break;
		case 't': threads = atoi(optarg); break;
		case 'r': depth = atoi(optarg); break;
		case 'x': exit_ms = atoi(optarg); break;
		default: return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: timed [-g] [-t THREADS] [-r DEPTH] FUNC CALLS\n");
		return 2;
	}
	const char *name = argv[optind];
	calls_per_thread = atol(argv[optind + 1]);
	if (!strcmp(name, "spin1us")) func = tp_spin1us;
	else if (!strcmp(name, "spin20us")) func = tp_spin20us;
	else if (!strcmp(name, "spin500us")) func = tp_spin500us;
	else if (!strcmp(name, "sleep2ms")) func = tp_sleep2ms;
	else if (!strcmp(name, "recurse")) func = call_recurse;
	else if (!strcmp(name, "getpid")) func = call_getpid;
	else if (!strcmp(name, "empty")) func = tp_empty;
	else { fprintf(stderr, "unknown function %s\n", name); return 2; }

	if (gate)
		wait_gate();
	pthread_t tid[64];
	if (threads > 64) threads = 64;
	for (int i = 0; i < threads; i++)
		pthread_create(&tid[i], NULL, worker, NULL);
	if (exit_ms > 0) {
		struct timespec ts = { exit_ms / 1000, (exit_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		_exit(3); /* mid-call: the workers are inside their functions */
	}
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	printf("calls=%ld inner_mean_ns=%.1f\n", inner_calls,
	       inner_calls ? inner_sum_ns / inner_calls : 0.0);
	const char *out = getenv("TIMED_OUT");
	if (out) {
		FILE *f = fopen(out, "a");
		if (f) {
			fprintf(f, "calls=%ld inner_mean_ns=%.1f\n", inner_calls,
				inner_calls ? inner_sum_ns / inner_calls : 0.0);
			fclose(f);
		}
	}
	return 0;
}
