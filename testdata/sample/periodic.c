/* periodic: work whose phase follows CLOCK_MONOTONIC with a given period,
 * for the aliasing test of tickprof sample. Usage: periodic SECONDS PERIOD_NS
 * It runs phase_a in the first half of every PERIOD_NS of the monotonic
 * clock and phase_b in the second half: the same code, so each holds half
 * of its CPU time. A sampling clock whose period is PERIOD_NS sees it at
 * one phase only. */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void work(void)
{
	unsigned long x = sink;
	for (int i = 0; i < 100; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}
__attribute__((noinline)) void phase_a(void) { work(); sink++; }
__attribute__((noinline)) void phase_b(void) { work(); sink++; }

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	unsigned long long end = now_ns() + (unsigned long long)(atof(argv[1]) * 1e9);
	unsigned long long period = strtoull(argv[2], 0, 10);
	for (unsigned long long t = now_ns(); t < end; t = now_ns()) {
		if (t % period < period / 2)
			phase_a();
		else
			phase_b();
	}
	return 0;
}
