/*
 * inlined.c - a hot function inlined into its caller, for the symbolizer's
 * tests. Built -O2 -g: mix (the hot loop) is inlined into work, and step
 * (which calls work) is inlined into level, so that a sample in the loop
 * lies in mix inside work, and the return address of work's call lies in
 * step inside level.
 *
 * inlined SECONDS [ROUNDS [EXECS]]: print "ready pid=N", then call work
 * (ROUNDS rounds of mix each, 4096 by default) through level and step for
 * SECONDS seconds, print "calls=N", and, while EXECS is positive, exec
 * itself again with EXECS one less (the same process in a new memory map).
 * Also built -rdynamic, so that work and level keep their names in .dynsym
 * when the binary is stripped (the tests put its DWARF in a debug file).
 * matrix-cflags: -O2 -rdynamic
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile long rounds = 4096;

/* mix is the hot loop; it is inlined into work. */
static inline __attribute__((always_inline)) unsigned long mix(unsigned long x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

/* work is the function timed by the tests: a real function, probed. */
__attribute__((noinline, noclone)) unsigned long work(unsigned long x)
{
	return mix(x, rounds) ^ (x >> 3);
}

/* step calls work; it is inlined into level. */
static inline __attribute__((always_inline)) unsigned long step(unsigned long x)
{
	return work(x) + 1;
}

__attribute__((noinline, noclone)) unsigned long level(unsigned long n)
{
	unsigned long s = 0;

	for (unsigned long i = 0; i < n; i++)
		s += step(i ^ sink);
	return s;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1, end;
	long calls = 0, execs = argc > 3 ? atol(argv[3]) : 0;
	char left[32];

	if (argc > 2)
		rounds = atol(argv[2]);
	printf("ready pid=%d\n", getpid());
	fflush(stdout);
	end = now() + seconds;
	while (now() < end) {
		sink += level(64);
		calls += 64;
	}
	printf("calls=%ld\n", calls);
	fflush(stdout);
	if (execs > 0) {
		snprintf(left, sizeof(left), "%ld", execs - 1);
		execl("/proc/self/exe", argv[0], argv[1], argv[2], left, (char *)NULL);
		perror("exec");
		return 1;
	}
	return 0;
}
