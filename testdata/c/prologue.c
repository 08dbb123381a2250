/*
 * prologue.c - functions with hand-written entry blocks, for the placement
 * of entry probes on instructions the kernel emulates. Each function
 * returns a value the caller checks, so a return address the probes
 * corrupted shows as a crash or a wrong sum.
 *
 *   pl_sub_first    sub $0x18,%rsp first (as sqlite3_prepare_v2): the
 *                   probe must stay on it
 *   pl_mov_push     two register moves, then push %rbx: the probe moves to
 *                   the push
 *   pl_test_je      test, then a conditional jump: the probe moves to the
 *                   jump
 *   pl_loop_head    a loop that jumps back to its second instruction: the
 *                   probe must stay on the first
 *   pl_callee       what pl_sub_first calls
 *
 * usage: prologue CALLS   (waits for SIGUSR1 after printing "ready")
 * Output: sum=S want=W
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "target.h"

long pl_sub_first(long a);
long pl_mov_push(long a);
long pl_test_je(long a);
long pl_loop_head(long a);

__attribute__((noinline, used)) long pl_callee(long a)
{
	__asm__ volatile("" ::: "memory");
	return a + 1;
}

__asm__(
	".text\n"
	".globl pl_sub_first\n"
	".type pl_sub_first, @function\n"
	"pl_sub_first:\n"
	"	sub $0x18, %rsp\n"
	"	mov %rdi, %rcx\n"
	"	push %rcx\n"
	"	pop %rdi\n"
	"	call pl_callee\n"
	"	add $0x18, %rsp\n"
	"	ret\n"
	".size pl_sub_first, .-pl_sub_first\n"

	".globl pl_mov_push\n"
	".type pl_mov_push, @function\n"
	"pl_mov_push:\n"
	"	mov %rdi, %rax\n"
	"	xor %ecx, %ecx\n"
	"	push %rbx\n"
	"	lea 2(%rax,%rcx,1), %rbx\n"
	"	mov %rbx, %rax\n"
	"	pop %rbx\n"
	"	ret\n"
	".size pl_mov_push, .-pl_mov_push\n"

	".globl pl_test_je\n"
	".type pl_test_je, @function\n"
	"pl_test_je:\n"
	"	mov %rdi, %rax\n"
	"	test %rdi, %rdi\n"
	"	je 1f\n"
	"	add $3, %rax\n"
	"1:	ret\n"
	".size pl_test_je, .-pl_test_je\n"

	".globl pl_loop_head\n"
	".type pl_loop_head, @function\n"
	"pl_loop_head:\n"
	"	xor %eax, %eax\n"
	"2:	add $1, %rax\n"
	"	cmp $4, %rax\n"
	"	jl 2b\n"
	"	add %rdi, %rax\n"
	"	ret\n"
	".size pl_loop_head, .-pl_loop_head\n"
);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	wait_gate();
	long sum = 0, want = 0;
	for (long i = 0; i < n; i++) {
		sum += pl_sub_first(i) + pl_mov_push(i) + pl_test_je(i) + pl_loop_head(i);
		want += (i + 1) + (i + 2) + (i ? i + 3 : 0) + (i + 4);
	}
	printf("sum=%ld want=%ld\n", sum, want);
	return sum == want ? 0 : 1;
}
