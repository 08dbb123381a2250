/* interp: a JIT-less bytecode interpreter, for the unwinding tests of
 * tickprof sample. Usage: interp SECONDS
 * Built -O2 -fomit-frame-pointer -fasynchronous-unwind-tables. A stack
 * machine runs a bytecode program computing fib(N) recursively; its CALL
 * instruction recurses into the dispatch loop (interp_run) as CPython's
 * eval loop does, so the native stack holds interp_run once per bytecode
 * call level, with the op handlers (op_add, op_lt, op_hash) called from
 * it. The native frames are those a profiler must recover: the handlers,
 * the dispatch loop at every level, main. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { PUSH, ARG, ADD, SUB, LT, JZ, CALL, RET, HASH };

struct insn {
	int op, arg;
};

volatile unsigned long sink;

__attribute__((noinline)) long op_add(long a, long b) { return a + b; }
__attribute__((noinline)) long op_lt(long a, long b) { return a < b; }

/* Some work per call, so that handlers hold a share of the samples. */
__attribute__((noinline)) long op_hash(long a)
{
	unsigned long x = (unsigned long)a;
	for (int i = 0; i < 30; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink += x;
	return a;
}

/* fib(n): if n < 2 return n; return fib(n-1) + fib(n-2) */
static const struct insn fib[] = {
	{ARG, 0}, {PUSH, 2}, {LT, 0}, {JZ, 6}, {ARG, 0}, {RET, 0},
	{ARG, 0}, {PUSH, 1}, {SUB, 0}, {CALL, 0},
	{ARG, 0}, {PUSH, 2}, {SUB, 0}, {CALL, 0},
	{ADD, 0}, {HASH, 0}, {RET, 0},
};

__attribute__((noinline)) long interp_run(const struct insn *code, long arg)
{
	long stack[16];
	int sp = 0;
	for (int pc = 0;; pc++) {
		const struct insn *in = &code[pc];
		switch (in->op) {
		case PUSH: stack[sp++] = in->arg; break;
		case ARG: stack[sp++] = arg; break;
		case ADD: sp--; stack[sp - 1] = op_add(stack[sp - 1], stack[sp]); break;
		case SUB: sp--; stack[sp - 1] = stack[sp - 1] - stack[sp]; break;
		case LT: sp--; stack[sp - 1] = op_lt(stack[sp - 1], stack[sp]); break;
		case JZ: if (!stack[--sp]) pc = in->arg - 1; break;
		case CALL: stack[sp - 1] = interp_run(code, stack[sp - 1]); break;
		case HASH: stack[sp - 1] = op_hash(stack[sp - 1]); break;
		case RET: return stack[sp - 1];
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: interp SECONDS\n");
		return 2;
	}
	double secs = atof(argv[1]);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += interp_run(fib, 18);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
