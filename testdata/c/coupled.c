/*
 * coupled.c - targets that keep time with the clock, for the tests of
 * tickprof's clocks (internal/loader/coupling_test.go): where a call starts is not
 * independent of the kernel's tick, which a fixed-grid clock needs.
 *
 * usage: coupled [-g] pll N
 *          N times: sleep to the next 4 ms boundary of CLOCK_MONOTONIC,
 *          then call tp_pll_work, which spins 100 us (a phase-locked loop)
 *        coupled [-g] burst THREADS ROUNDS WORK_US HOGS
 *          HOGS CPU-bound child processes run throughout; THREADS threads
 *          wait at a barrier ROUNDS times, and every time they are
 *          released together each calls tp_burst_work, which spins
 *          WORK_US us: the released threads queue behind the hogs and get
 *          the CPU when the scheduler tick preempts them
 * With -g it prints "ready" and waits for SIGUSR1 (the tracer attaches
 * first). It makes its calls, prints "calls=N inner_mean_ns=X" (the functions' own mean by
 * clock_gettime) and exits, ending the hogs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

static pthread_barrier_t barrier;
static long rounds, work_ns;

TIMED_SPIN(tp_pll_work, 100000)
TIMED_SPIN(tp_burst_work, work_ns)

static void *burst_worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		pthread_barrier_wait(&barrier);
		tp_burst_work();
	}
	return NULL;
}

int main(int argc, char **argv)
{

	setvbuf(stdout, NULL, _IOLBF, 0);
	int gate = gate_flag(&argc, &argv);
	if (argc < 3 || (strcmp(argv[1], "pll") && strcmp(argv[1], "burst")) ||
	    (!strcmp(argv[1], "burst") && argc != 6)) {
		fprintf(stderr, "usage: coupled [-g] pll N | coupled [-g] burst THREADS ROUNDS WORK_US HOGS\n");
		return 2;
	}
	if (gate)
		wait_gate();

	if (!strcmp(argv[1], "pll")) {
		long n = atol(argv[2]);
		const long period = 4000000;
		for (long i = 0; i < n; i++) {
			long next = (now_ns() / period + 1) * period;
			struct timespec ts = { next / 1000000000L, next % 1000000000L };
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			tp_pll_work();
		}
	} else {
		int threads = atoi(argv[2]), hogs = atoi(argv[5]);
		pid_t hog[16];
		pthread_t tid[64];

		rounds = atol(argv[3]);
		work_ns = atol(argv[4]) * 1000;
		if (threads > 64)
			threads = 64;
		if (hogs > 16)
			hogs = 16;
		for (int i = 0; i < hogs; i++) {
			hog[i] = fork();
			if (hog[i] == 0) {
				/* Never outlive the target, nor run past 2 minutes. */
				long end = now_ns() + 120000000000L;
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				if (getppid() == 1)
					_exit(0);
				while (now_ns() < end)
					for (volatile int x = 0; x < 100000; x++)
						;
				_exit(0);
			}
		}
		pthread_barrier_init(&barrier, NULL, threads);
		for (int i = 0; i < threads; i++)
			pthread_create(&tid[i], NULL, burst_worker, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(tid[i], NULL);
		for (int i = 0; i < hogs; i++) {
			if (hog[i] > 0) {
				kill(hog[i], SIGKILL);
				waitpid(hog[i], NULL, 0);
			}
		}
	}
	printf("calls=%ld inner_mean_ns=%.1f\n", inner_calls,
	       inner_calls ? inner_sum_ns / inner_calls : 0.0);
	return 0;
}
