/* periodic: work whose phase follows CLOCK_MONOTONIC with a given period,
 * for the locking test of tickprof sample.
 * Usage: periodic SECONDS PERIOD_NS [SHARE_A [OUTFILE]]
 * It runs phase_a in the first SHARE_A (default 0.5) of every PERIOD_NS of
 * the monotonic clock and phase_b in the rest: the same code, busy all
 * the time. A sampling clock whose period is PERIOD_NS (or divides it)
 * sees it at one phase only. At every change of phase it reads its own
 * thread CPU clock and writes to OUTFILE (or stdout) the CPU time spent in
 * each phase, its truth:
 *   cpu_a NS
 *   cpu_b NS
 *   switches N
 * Each phase function loops over chunks of work of about a microsecond
 * and reads the monotonic clock between them, so that almost every sample
 * of a phase has that phase's function as its leaf (or the clock read, the
 * same in both phases, called from it). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static unsigned long long cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The work is written out in each function so that its time is the
 * function's own; each returns the time it saw past its end. */
#define PHASE(name)                                                                \
	__attribute__((noinline)) unsigned long long name(unsigned long long end) \
	{                                                                          \
		unsigned long long t;                                              \
		while ((t = now_ns()) < end) {                                     \
			unsigned long x = sink;                                    \
			for (int i = 0; i < 300; i++)                              \
				x = x * 6364136223846793005UL + 1442695040888963407UL; \
			sink = x;                                                  \
		}                                                                  \
		return t;                                                          \
	}
PHASE(phase_a)
PHASE(phase_b)

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5)
		return 2;
	unsigned long long t = now_ns();
	unsigned long long end = t + (unsigned long long)(atof(argv[1]) * 1e9);
	unsigned long long period = strtoull(argv[2], 0, 10);
	double share = argc > 3 ? atof(argv[3]) : 0.5;
	if (period == 0 || share <= 0 || share >= 1)
		return 2;
	unsigned long long split = (unsigned long long)(share * period);
	unsigned long long cpu[2] = {0, 0}, switches = 0;
	unsigned long long c0 = cpu_ns();
	while (t < end) {
		unsigned long long base = t - t % period;
		int b = t - base >= split;
		t = b ? phase_b(base + period) : phase_a(base + split);
		unsigned long long c1 = cpu_ns();
		cpu[b] += c1 - c0;
		c0 = c1;
		switches++;
	}
	FILE *out = argc > 4 ? fopen(argv[4], "w") : stdout;
	if (!out)
		return 1;
	fprintf(out, "cpu_a %llu\ncpu_b %llu\nswitches %llu\n", cpu[0], cpu[1], switches);
	return fclose(out) != 0;
}
