/*
 * probeset.c - a target for tickprof's probe-set tests.
 *
 * usage: probeset [-g] MODE CALLS
 *   MODE   loop: call tp_locked and tp_plain CALLS times (0: forever)
 *          fork: call tp_forks CALLS times; each forks a child that
 *                returns from tp_forks too, then exits
 *   -g     wait for SIGUSR1 before the first call (attach by -p first)
 * Output (stdout, at the end): calls=N
 *
 * tp_locked starts with a LOCK-prefixed instruction, which the kernel's
 * uprobe analysis refuses (errno 524); tp_plain is an ordinary function.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target.h"

volatile long tp_lock_count;

/* tp_locked: lock incq tp_lock_count(%rip); ret */
__asm__(".globl tp_locked\n"
	".type tp_locked, @function\n"
	"tp_locked:\n"
	"\tlock incq tp_lock_count(%rip)\n"
	"\tret\n"
	".size tp_locked, .-tp_locked\n");
void tp_locked(void);

__attribute__((noinline)) long tp_plain(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

__attribute__((noinline)) int tp_forks(void)
{
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		exit(1);
	}
	return p; /* the child returns 0 through this function too */
}

int main(int argc, char **argv)
{
	int gate = gate_flag(&argc, &argv);
	if (argc != 3) {
		fprintf(stderr, "usage: probeset [-g] loop|fork CALLS\n");
		return 2;
	}
	long calls = atol(argv[2]), n = 0, acc = 0;
	if (gate)
		wait_gate();
	if (strcmp(argv[1], "loop") == 0) {
		for (; calls == 0 || n < calls; n++) {
			tp_locked();
			acc += tp_plain(n);
		}
	} else if (strcmp(argv[1], "fork") == 0) {
		for (; calls == 0 || n < calls; n++) {
			if (tp_forks() == 0)
				_exit(0);
			wait(NULL);
		}
	} else {
		fprintf(stderr, "unknown mode %s\n", argv[1]);
		return 2;
	}
	printf("calls=%ld acc=%ld\n", n, acc & 1);
	return 0;
}
