/*
 * target.c - the benchmark target of `make bench`.
 *
 * usage: target call N      call bench_fn (about 200 ns of arithmetic) N times
 *        target getppid N   call getppid N times
 *        target burn N      N rounds of arithmetic (CPU-bound, for sampling)
 * Prints: ns_per_iter=X iters=N mean_fn_ns=Y
 * (mean_fn_ns: bench_fn's own mean duration, timed with clock_gettime on
 * every 64th call; 0 for the other modes).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

volatile unsigned long sink;

/* About 200 ns of a dependent multiply-add chain the compiler cannot fold,
 * behind the usual frame-pointer prologue (push %rbp: an instruction the
 * kernel's uprobe code emulates, as for most C functions built with frame
 * pointers). In assembly so that every compiler gives the same code. */
__asm__(".text\n"
	".globl bench_fn\n"
	".type bench_fn, @function\n"
	"bench_fn:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tmov %rdi, %rax\n"
	"\tmov $150, %edx\n"
	"\tmovabs $6364136223846793005, %rcx\n"
	"\tmovabs $1442695040888963407, %rsi\n"
	"1:\timul %rcx, %rax\n"
	"\tadd %rsi, %rax\n"
	"\tdec %edx\n"
	"\tjnz 1b\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size bench_fn, .-bench_fn\n");
unsigned long bench_fn(unsigned long x);

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s call|getppid|burn N\n", argv[0]);
		return 2;
	}
	long n = atol(argv[2]);
	unsigned long x = 1;
	double fn_sum = 0;
	long fn_n = 0;
	long t0 = now_ns();
	if (strcmp(argv[1], "call") == 0) {
		for (long i = 0; i < n; i++) {
			if ((i & 63) == 0) {
				long a = now_ns();
				x = bench_fn(x);
				fn_sum += now_ns() - a;
				fn_n++;
			} else {
				x = bench_fn(x);
			}
		}
	} else if (strcmp(argv[1], "getppid") == 0) {
		for (long i = 0; i < n; i++)
			x += syscall(SYS_getppid);
	} else if (strcmp(argv[1], "burn") == 0) {
		for (long i = 0; i < n; i++)
			for (int j = 0; j < 1000; j++)
				x = x * 6364136223846793005UL + 1442695040888963407UL;
	} else {
		fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
		return 2;
	}
	long t1 = now_ns();
	sink = x;
	printf("ns_per_iter=%.2f iters=%ld mean_fn_ns=%.1f\n", (double)(t1 - t0) / n, n, fn_n ? fn_sum / fn_n : 0.0);
	return 0;
}
