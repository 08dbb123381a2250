/*
 * target.h - what tickprof's C test targets share: the monotonic clock in
 * ns, a spin of a set length, the record of every call's own duration
 * (its mean is what a test compares tickprof's numbers with), a function
 * that spins and records its own time (TIMED_SPIN), and the start gate
 * (-g) that lets the tracer attach before the first call.
 */
#ifndef TICKPROF_TARGET_H
#define TICKPROF_TARGET_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TARGET_UNUSED __attribute__((unused))

static pthread_mutex_t mu TARGET_UNUSED = PTHREAD_MUTEX_INITIALIZER;
static double inner_sum_ns TARGET_UNUSED;
static long inner_calls TARGET_UNUSED;

/* now_ns reads CLOCK_MONOTONIC in ns. */
static TARGET_UNUSED long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* record adds one call's own duration to the mean the target prints. */
static TARGET_UNUSED void record(long ns)
{
	pthread_mutex_lock(&mu);
	inner_sum_ns += ns;
	inner_calls++;
	pthread_mutex_unlock(&mu);
}

/* spin returns after ns of the monotonic clock. */
static TARGET_UNUSED void spin(long ns)
{
	long t0 = now_ns();
	while (now_ns() - t0 < ns)
		;
}

/* TIMED_SPIN defines the probed function name: it spins for ns (an
 * expression, read at each call) and records its own duration. */
#define TIMED_SPIN(name, ns)                      \
	__attribute__((noinline)) void name(void) \
	{                                         \
		long t0 = now_ns();               \
		spin(ns);                         \
		record(now_ns() - t0);            \
	}

/* gate_flag removes a leading -g from the arguments and returns 1 when
 * there was one (the target then waits at wait_gate), else 0. */
static TARGET_UNUSED int gate_flag(int *argc, char ***argv)
{
	if (*argc > 1 && strcmp((*argv)[1], "-g") == 0) {
		(*argc)--;
		(*argv)++;
		return 1;
	}
	return 0;
}

/* wait_gate prints "ready pid=N" and waits for SIGUSR1 (the tracer has
 * attached). */
static TARGET_UNUSED void wait_gate(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready pid=%d\n", getpid());
	fflush(stdout);
	sigwait(&set, &sig);
}

#endif
