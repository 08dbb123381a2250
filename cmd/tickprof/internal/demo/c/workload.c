/*
 * workload.c - the workload of `tickprof demo`: three functions of known
 * duration, each called in a loop by its own thread:
 *
 *   demo_short   spins about 5 us on the monotonic clock
 *   demo_medium  spins about 25 us
 *   demo_sleep   sleeps 1 ms (nanosleep; the true time includes wake-up)
 *
 * Every function measures its own duration with clock_gettime between its
 * first and last statement, so the truth excludes the probes' trap cost
 * that falls outside that span. At the end (after SECONDS, or on SIGTERM
 * or SIGINT) it writes one line per function:
 *
 *   truth func=demo_short calls=N mean_ns=X sd_ns=S
 *
 * to FILE (-t FILE) or to stdout.
 *
 * usage: workload [-t FILE] [SECONDS]     (default 60 s)
 * build: gcc -O2 -g -fno-omit-frame-pointer -pthread -o workload workload.c
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct truth {
	const char *name;
	long calls;
	double sum, sumsq;
};

static volatile sig_atomic_t stop;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void note(struct truth *t, long ns)
{
	/* Each thread owns its struct: no lock needed. */
	t->calls++;
	t->sum += (double)ns;
	t->sumsq += (double)ns * (double)ns;
}

static __attribute__((noinline)) void spin_until(long end)
{
	while (now_ns() < end)
		;
}

__attribute__((noinline)) long demo_short(void)
{
	long t0 = now_ns();
	spin_until(t0 + 5000);
	return now_ns() - t0;
}

__attribute__((noinline)) long demo_medium(void)
{
	long t0 = now_ns();
	spin_until(t0 + 25000);
	return now_ns() - t0;
}

__attribute__((noinline)) long demo_sleep(void)
{
	long t0 = now_ns();
	struct timespec ts = { 0, 1000000 };
	nanosleep(&ts, NULL);
	return now_ns() - t0;
}

struct worker {
	long (*fn)(void);
	struct truth t;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	while (!stop)
		note(&w->t, w->fn());
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	double secs = 60;
	int opt;
	while ((opt = getopt(argc, argv, "t:")) != -1) {
		if (opt == 't') {
			out = optarg;
		} else {
			fprintf(stderr, "usage: %s [-t FILE] [SECONDS]\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		secs = atof(argv[optind]);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	struct worker ws[] = {
		{ demo_short, { "demo_short", 0, 0, 0 } },
		{ demo_medium, { "demo_medium", 0, 0, 0 } },
		{ demo_sleep, { "demo_sleep", 0, 0, 0 } },
	};
	enum { NW = sizeof ws / sizeof ws[0] };
	pthread_t th[NW];
	for (int i = 0; i < NW; i++)
		if (pthread_create(&th[i], NULL, run, &ws[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	long end = now_ns() + (long)(secs * 1e9);
	while (!stop && now_ns() < end) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	stop = 1;
	for (int i = 0; i < NW; i++)
		pthread_join(th[i], NULL);

	FILE *f = stdout;
	if (out && !(f = fopen(out, "w"))) {
		perror(out);
		return 1;
	}
	for (int i = 0; i < NW; i++) {
		struct truth *t = &ws[i].t;
		double mean = t->calls ? t->sum / t->calls : 0;
		double var = t->calls > 1 ? (t->sumsq - t->calls * mean * mean) / (t->calls - 1) : 0;
		fprintf(f, "truth func=%s calls=%ld mean_ns=%.1f sd_ns=%.1f\n", t->name, t->calls, mean,
			sqrt(var > 0 ? var : 0));
	}
	if (f != stdout)
		fclose(f);
	return 0;
}
