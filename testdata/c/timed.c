/*
 * timed.c - a target for tickprof's timing tests: functions whose true
 * duration is set by spinning on the monotonic clock, one that sleeps, a
 * recursive one, threads. Each function measures its own time with
 * clock_gettime, and the program prints the mean at the end, so a test can
 * compare tickprof's numbers with the target's own.
 *
 * usage: timed [-g] [-t THREADS] [-r DEPTH] [-x MS] FUNC CALLS
 *   FUNC   spin1us | spin20us | spin500us | sleep2ms | recurse | getpid | empty
 *          | migrate | fork
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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

static long calls_per_thread;
static int depth = 16;
static void (*func)(void);
static long moved = -1; /* migrate: calls that ended on another CPU */

TIMED_SPIN(tp_spin1us, 1000)
TIMED_SPIN(tp_spin20us, 20000)
TIMED_SPIN(tp_spin500us, 500000)

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

/* tp_migrate moves its thread to the next CPU in the middle of the call,
 * so that its exit runs on another CPU than its entry. */
__attribute__((noinline)) void tp_migrate(void)
{
	long t0 = now_ns();
	int cpu = sched_getcpu(), n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	spin(5000);
	CPU_ZERO(&set);
	CPU_SET(n > 1 ? (cpu + 1) % n : 0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	spin(5000);
	if (sched_getcpu() != cpu)
		__atomic_add_fetch(&moved, 1, __ATOMIC_RELAXED);
	record(now_ns() - t0);
}

/* tp_fork forks in the middle of the call: the child returns from it (through
 * its copy of the return probe) and exits while the parent's call is still in
 * flight at the same stack address. Only the parent's call counts. */
__attribute__((noinline)) int tp_fork(void)
{
	long t0 = now_ns();
	pid_t pid = fork();

	if (pid == 0)
		return 0;
	if (pid > 0)
		waitpid(pid, NULL, 0);
	record(now_ns() - t0);
	return 1;
}

static void call_fork(void)
{
	if (tp_fork() == 0)
		_exit(0);
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
	else if (!strcmp(name, "migrate")) { func = tp_migrate; moved = 0; }
	else if (!strcmp(name, "fork")) func = call_fork;
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
	printf("calls=%ld inner_mean_ns=%.1f", inner_calls,
	       inner_calls ? inner_sum_ns / inner_calls : 0.0);
	if (moved >= 0)
		printf(" moved=%ld", moved);
	printf("\n");
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
