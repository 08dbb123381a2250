/*
 * hwbreakpoint.c - what counting a function's calls with a hardware execute
 * breakpoint costs (docs/overhead.md, "What a budget allows on a ~100 ns
 * function"): a perf event of type PERF_TYPE_BREAKPOINT on the entry of a
 * ~100 ns function, counting only (no samples), against the same loop
 * without it. Every hit is a debug exception; in a VM it is also an exit.
 *
 * build and run: gcc -O1 -o /tmp/hwbreakpoint bench/hwbreakpoint/hwbreakpoint.c && /tmp/hwbreakpoint
 * (as root, or with perf_event_paranoid <= 1)
 */
#define _GNU_SOURCE
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

/* tiny is the function counted: 16 multiply-adds, like the coverage
 * suite's cov_tiny without its clock reads. */
__attribute__((noinline)) void tiny(void)
{
	unsigned long x = sink;
	for (int i = 0; i < 16; i++)
		x = x * 6364136223846793005UL + i;
	sink = x;
}

static long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* loop returns the mean ns per call of n calls of tiny. */
static double loop(long n)
{
	long t0 = now_ns();
	for (long i = 0; i < n; i++)
		tiny();
	return (double)(now_ns() - t0) / n;
}

int main(void)
{
	const long n = 200000;
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uintptr_t)tiny;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	int fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("perf_event_open");
		return 1;
	}
	for (int r = 0; r < 3; r++) {
		long long c = 0;
		double plain = loop(n);
		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		double bp = loop(n);
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		if (read(fd, &c, sizeof(c)) != sizeof(c))
			return 1;
		printf("plain %.1f ns a call; with the breakpoint counting %.1f ns a call (%lld of %ld calls counted)\n",
		       plain, bp, c, n);
	}
	return 0;
}
