/*
 * longjmp.c - calls whose exits are lost: lj_inner leaves by longjmp to
 * the setjmp in its caller lj_outer, so its return is never seen, and
 * lj_outer returns normally past it. A thread's stack of entries then has
 * lj_inner's on top when lj_outer's exit comes: the exit must find
 * lj_outer's entry below it and count lj_inner's as an orphan.
 *
 * usage: longjmp CALLS   (waits for SIGUSR1 after printing "ready")
 * Output: sum=S want=W
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "target.h"

static jmp_buf env;

__attribute__((noinline, used)) void lj_inner(long i)
{
	__asm__ volatile("" ::: "memory");
	if (i >= 0)
		longjmp(env, 1);
}

__attribute__((noinline, used)) long lj_outer(long i)
{
	volatile long r = i;

	if (setjmp(env) == 0) {
		lj_inner(i);
		r = -1;
	}
	return r + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	wait_gate();
	long sum = 0, want = 0;
	for (long i = 0; i < n; i++) {
		sum += lj_outer(i);
		want += i + 1;
	}
	printf("sum=%ld want=%ld\n", sum, want);
	return sum == want ? 0 : 1;
}
