/*
 * usdt.c - a target for the USDT timing tests: USDT probe pairs (with
 * semaphores, so that a probe fires only while a tracer counts its
 * semaphore up, as CPython's and PostgreSQL's do) around calls whose true
 * duration is set by spinning, each call measuring its own time.
 *
 * usage: usdt [-g] MODE CALLS
 *   pair  tpusdt:work__entry / work__return around a 20 us spin, CALLS times
 *   py    probes shaped as CPython's, python:function__entry and
 *         function__return (filename, funcname, lineno), around "calls" of
 *         target (file /app/pkg/mod.py) that recurse to depth 3, each level
 *         spinning 20 us and calling other (file /app/pkg/other.py, 5 us)
 *         twice, with a decoy target in /app/notmod.py called between;
 *         CALLS top-level calls
 *   cost  CALLS calls of "other" (no work): prints ns_per_call=X, the cost
 *         of a Python-shaped call with its probes, timed or not
 *   -g    wait for SIGUSR1 before the first call
 * Output (stdout, and appended to $TIMED_OUT if set, at the end):
 *   calls=N inner_mean_ns=X    (target's calls, every level, each from
 *                               right after its entry probe to right
 *                               before its return probe)
 *   semaphores=E,R             (the entry and return semaphores at the end
 *                               of the calls: nonzero while attached)
 */
#define _GNU_SOURCE
#define _SDT_HAS_SEMAPHORES 1
#include <stdlib.h>
#include <sys/sdt.h>

#include "target.h"

unsigned short tpusdt_work__entry_semaphore __attribute__((section(".probes"))) __attribute__((used));
unsigned short tpusdt_work__return_semaphore __attribute__((section(".probes"))) __attribute__((used));
unsigned short python_function__entry_semaphore __attribute__((section(".probes")))
__attribute__((used));
unsigned short python_function__return_semaphore __attribute__((section(".probes")))
__attribute__((used));

__attribute__((noinline)) static void work(void)
{
	long t0;

	if (tpusdt_work__entry_semaphore)
		STAP_PROBE(tpusdt, work__entry);
	t0 = now_ns();
	spin(20000);
	record(now_ns() - t0);
	if (tpusdt_work__return_semaphore)
		STAP_PROBE(tpusdt, work__return);
}

/* py_call runs one "Python function" of file and name for ns, calling
 * body in between, with CPython's probes around it; with rec, it records
 * its own time from its entry probe to its return probe, as a Python
 * function reading time.perf_counter_ns() first and last would (the
 * probes of the functions it calls included). */
static void py_call(const char *file, const char *name, int line, long ns, void (*body)(int), int arg,
		    int rec)
{
	long t0;

	if (python_function__entry_semaphore)
		STAP_PROBE3(python, function__entry, file, name, line);
	t0 = now_ns();
	spin(ns);
	if (body)
		body(arg);
	if (rec)
		record(now_ns() - t0);
	if (python_function__return_semaphore)
		STAP_PROBE3(python, function__return, file, name, line);
}

static void other(int unused)
{
	(void)unused;
}

static void target(int depth);

static void target_body(int depth)
{
	py_call("/app/pkg/other.py", "other", 3, 5000, other, 0, 0);
	if (depth > 1)
		target(depth - 1);
	py_call("/app/pkg/other.py", "other", 3, 5000, other, 0, 0);
}

__attribute__((noinline)) static void target(int depth)
{
	py_call("/app/pkg/mod.py", "target", 10, 20000, target_body, depth, 1);
}

/* report prints the calls' own mean and the semaphores e and r. */
static void report(unsigned e, unsigned r)
{
	const char *out = getenv("TIMED_OUT");
	double mean = inner_calls ? inner_sum_ns / inner_calls : 0.0;

	printf("calls=%ld inner_mean_ns=%.1f\nsemaphores=%u,%u\n", inner_calls, mean, e, r);
	if (out) {
		FILE *f = fopen(out, "a");
		if (f) {
			fprintf(f, "calls=%ld inner_mean_ns=%.1f\n", inner_calls, mean);
			fclose(f);
		}
	}
}

int main(int argc, char **argv)
{
	int gated = gate_flag(&argc, &argv);
	int pair;
	long calls;

	if (argc != 3 || (strcmp(argv[1], "pair") && strcmp(argv[1], "py") && strcmp(argv[1], "cost"))) {
		fprintf(stderr, "usage: usdt [-g] pair|py|cost CALLS\n");
		return 2;
	}
	calls = atol(argv[2]);
	pair = strcmp(argv[1], "pair") == 0;
	if (gated)
		wait_gate();
	if (strcmp(argv[1], "cost") == 0) {
		long t0 = now_ns();

		for (long i = 0; i < calls; i++)
			py_call("/app/pkg/other.py", "other", 3, 0, NULL, 0, 0);
		printf("ns_per_call=%.1f\n", (double)(now_ns() - t0) / calls);
		return 0;
	}
	for (long i = 0; i < calls; i++) {
		if (pair) {
			work();
			continue;
		}
		target(3);
		py_call("/app/notmod.py", "target", 1, 2000, NULL, 0, 0);
	}
	if (pair)
		report(tpusdt_work__entry_semaphore, tpusdt_work__return_semaphore);
	else
		report(python_function__entry_semaphore, python_function__return_semaphore);
	return 0;
}
