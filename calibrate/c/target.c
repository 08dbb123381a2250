/*
 * target.c - tickprof's calibration target: an empty function to time, so
 * that what tickprof measures on it is its own probe overhead T_ovhd
 * (Lilja 6.2.1), and a loop on the emptiest system call.
 *
 * usage: target MODE SECONDS
 *   user     call cal_empty() in a loop (first instruction push %rbp,
 *            which the kernel's uprobe code emulates)
 *   stepped  call cal_empty_stepped() in a loop (first instruction xor,
 *            which the kernel must single-step)
 *   small    call cal_small() in a loop: a second near-empty target, a
 *            few instructions after the same push %rbp, so that the
 *            calibration sees whether T_ovhd depends on the target
 *   syscall  call getppid() through syscall(2) in a loop
 *   spin     call cal_spin() in a loop: a function that does real work
 *            (it spins about 200 ns on clock_gettime), so that T_ovhd is
 *            also measured on a target that is not empty. Its own mean
 *            duration is measured without probes on cal_spin_copy(), the
 *            same code under another name, timed in blocks of 64 calls;
 *            the mean (ns per call) and the count are written to OUTFILE
 *            every 50 ms: usage target spin SECONDS OUTFILE
 *   pattern FUNC GAP_NS HOW SECONDS OUTFILE
 *            call FUNC (empty: cal_empty; stepped: cal_empty_stepped;
 *            handler:NS: cal_handler, NS ns of work that times itself)
 *            once per gap of GAP_NS, spent sleeping (HOW sleep) or
 *            spinning (HOW spin): the call patterns of the in-call
 *            overhead model. OUTFILE gets "MEAN_NS CALLS", cal_handler's
 *            own mean duration (0 0 for the empty functions).
 * Every 50 ms it sleeps 5 ms (outside any timed call), so that when
 * calibrate runs it at a real-time priority (no preemption by ordinary
 * tasks) it never uses up the kernel's real-time budget and gets throttled.
 * build: gcc -O2 -fno-omit-frame-pointer -o target target.c
 * (-fno-ipa-icf would keep cal_spin and cal_spin_copy apart; they differ
 * in the variable they store to, so gcc cannot merge them anyway.)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* An empty function with the usual frame-pointer prologue: its first
 * instruction, push %rbp, is one the uprobe code emulates. Written in
 * assembly so that no compiler drops the frame. */
__asm__(".text\n"
	".globl cal_empty\n"
	".type cal_empty, @function\n"
	"cal_empty:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size cal_empty, .-cal_empty\n");
void cal_empty(void);

/* An empty function whose first instruction is not emulated by the
 * uprobe code (no push, no branch): every probe hit single-steps it. */
__asm__(".text\n"
	".globl cal_empty_stepped\n"
	".type cal_empty_stepped, @function\n"
	"cal_empty_stepped:\n"
	"\txor %eax, %eax\n"
	"\tret\n"
	".size cal_empty_stepped, .-cal_empty_stepped\n");
void cal_empty_stepped(void);

/* A near-empty function that is not cal_empty: the same emulated first
 * instruction, then a short dependent chain (a few cycles) and a store. */
__asm__(".text\n"
	".globl cal_small\n"
	".type cal_small, @function\n"
	"cal_small:\n"
	"\tpush %rbp\n"
	"\tmov %rsp, %rbp\n"
	"\tmov cal_small_sink(%rip), %rax\n"
	"\tadd $3, %rax\n"
	"\txor $5, %rax\n"
	"\tadd $7, %rax\n"
	"\tmov %rax, cal_small_sink(%rip)\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size cal_small, .-cal_small\n");
void cal_small(void);
unsigned long cal_small_sink;

static long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

volatile unsigned long cal_spin_sink, cal_spin_copy_sink;

/* About 200 ns of work: spins on the clock, so probes before it do not
 * change how long its body takes. */
__attribute__((noinline)) void cal_spin(void)
{
	long t0 = now_ns();
	while (now_ns() - t0 < 200)
		;
	cal_spin_sink++;
}

/* cal_spin under another name, never probed: its mean is the truth that
 * cal_spin's measured time is compared with. */
__attribute__((noinline)) void cal_spin_copy(void)
{
	long t0 = now_ns();
	while (now_ns() - t0 < 200)
		;
	cal_spin_copy_sink++;
}

/* spin_loop runs mode spin: probed calls of cal_spin, and blocks of
 * unprobed cal_spin_copy whose mean it writes to out. */
static int spin_loop(double seconds, const char *out)
{
	long end = now_ns() + (long)(seconds * 1e9);
	long rest = now_ns() + 50000000L, write = 0;
	double own_sum = 0, own_n = 0;
	char tmp[4096];

	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	while (now_ns() < end) {
		for (int i = 0; i < 64; i++)
			cal_spin();
		long t0 = now_ns();
		for (int i = 0; i < 64; i++)
			cal_spin_copy();
		own_sum += now_ns() - t0;
		own_n += 64;
		if (now_ns() >= write) {
			FILE *f = fopen(tmp, "w");
			if (!f || fprintf(f, "%.3f %.0f\n", own_sum / own_n, own_n) < 0 || fclose(f) != 0 ||
			    rename(tmp, out) != 0) {
				perror(out);
				return 1;
			}
			write = now_ns() + 50000000L;
		}
		if (now_ns() >= rest) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
			rest = now_ns() + 50000000L;
		}
	}
	return 0;
}

volatile unsigned long cal_handler_sink;
static double handler_sum;
static long handler_calls;
static long handler_ns = 5000;

/* handler_ns of work that measures its own duration from its first
 * instruction's clock read to its last: the truth that the in-call
 * overhead of a call with a body is measured against. */
__attribute__((noinline)) void cal_handler(void)
{
	long t0 = now_ns();
	while (now_ns() - t0 < handler_ns)
		cal_handler_sink++;
	handler_sum += now_ns() - t0;
	handler_calls++;
}

/* pattern_loop runs mode pattern. */
static int pattern_loop(const char *func, long gap, const char *how, double seconds, const char *out)
{
	void (*fn)(void);
	int spin = strcmp(how, "spin") == 0;
	if (strcmp(func, "empty") == 0)
		fn = cal_empty;
	else if (strcmp(func, "stepped") == 0)
		fn = cal_empty_stepped;
	else if (strncmp(func, "handler:", 8) == 0 && atol(func + 8) > 0) {
		fn = cal_handler;
		handler_ns = atol(func + 8);
	}
	else {
		fprintf(stderr, "pattern: unknown function %s\n", func);
		return 2;
	}
	if (!spin && strcmp(how, "sleep") != 0) {
		fprintf(stderr, "pattern: unknown gap %s: want sleep or spin\n", how);
		return 2;
	}
	long end = now_ns() + (long)(seconds * 1e9), write = 0;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	while (now_ns() < end) {
		if (gap > 0 && spin) {
			long t0 = now_ns();
			while (now_ns() - t0 < gap)
				;
		} else if (gap > 0) {
			struct timespec ts = { gap / 1000000000L, gap % 1000000000L };
			nanosleep(&ts, NULL);
		}
		fn();
		if (now_ns() >= write) {
			FILE *f = fopen(tmp, "w");
			double mean = handler_calls ? handler_sum / handler_calls : 0;
			if (!f || fprintf(f, "%.3f %ld\n", mean, handler_calls) < 0 || fclose(f) != 0 || rename(tmp, out) != 0) {
				perror(out);
				return 1;
			}
			write = now_ns() + 50000000L;
		}
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "spin") == 0)
		return spin_loop(atof(argv[2]), argv[3]);
	if (argc == 7 && strcmp(argv[1], "pattern") == 0)
		return pattern_loop(argv[2], atol(argv[3]), argv[4], atof(argv[5]), argv[6]);
	if (argc != 3) {
		fprintf(stderr, "usage: %s user|stepped|small|syscall SECONDS, or %s spin SECONDS OUTFILE, or %s pattern FUNC GAP_NS sleep|spin SECONDS OUTFILE\n", argv[0], argv[0], argv[0]);
		return 2;
	}
	double end = now() + atof(argv[2]);
	void (*fn)(void) = NULL;
	if (strcmp(argv[1], "user") == 0)
		fn = cal_empty;
	else if (strcmp(argv[1], "stepped") == 0)
		fn = cal_empty_stepped;
	else if (strcmp(argv[1], "small") == 0)
		fn = cal_small;
	else if (strcmp(argv[1], "syscall") != 0) {
		fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
		return 2;
	}
	double rest = now() + 0.05;
	while (now() < end) {
		for (int i = 0; i < 1000; i++) {
			if (fn)
				fn();
			else
				syscall(SYS_getppid);
		}
		if (now() >= rest) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
			rest = now() + 0.05;
		}
	}
	return 0;
}
