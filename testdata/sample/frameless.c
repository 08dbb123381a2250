/* frameless: CPU work reached through frameless code, for the unwinding
 * tests of tickprof sample. Usage: frameless SECONDS
 * Built -O2 -fomit-frame-pointer -fasynchronous-unwind-tables (no frame
 * pointers anywhere in it). For SECONDS it loops over: a chain of frameless
 * functions; qsort (libc) calling back into a comparator; a signal handler
 * doing work on a SIGPROF timer (its frames lie above the kernel's sigreturn
 * trampoline); clock_gettime through the vDSO; and strlen/memchr through the
 * PLT. A second thread burns in a frameless loop, so thread roots are seen.
 * matrix-cflags: -O2 -fomit-frame-pointer -fasynchronous-unwind-tables
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

volatile unsigned long sink;
static volatile int stop;

__attribute__((noinline)) unsigned long chain_leaf(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}
__attribute__((noinline)) unsigned long chain_mid(unsigned long x) { return chain_leaf(x + 1) ^ sink; }
__attribute__((noinline)) unsigned long chain_top(unsigned long x) { return chain_mid(x * 3) + sink; }

static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a * 2654435761u, y = *(const unsigned *)b * 2654435761u;
	return x < y ? -1 : x > y;
}
__attribute__((noinline)) void sort_some(void)
{
	static unsigned v[4096];
	for (int i = 0; i < 4096; i++)
		v[i] = i * 7919u;
	qsort(v, 4096, sizeof v[0], cmp);
	sink += v[100];
}

__attribute__((noinline)) void in_handler(int sig)
{
	for (int i = 0; i < 20; i++)
		sink += chain_leaf(sig + i);
}

__attribute__((noinline)) void clocks(void)
{
	struct timespec ts;
	for (int i = 0; i < 2000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
}

static char text[4096];
__attribute__((noinline)) void plt_calls(void)
{
	for (int i = 0; i < 2000; i++)
		sink += strlen(text + (i & 63)) + (memchr(text, 'x', 64 + (i & 7)) != 0);
}

static void *worker(void *arg)
{
	(void)arg;
	while (!stop)
		sink += chain_top(sink);
	return 0;
}

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	memset(text, 'a', sizeof text - 1);
	signal(SIGPROF, in_handler);
	struct itimerval it = {{0, 2000}, {0, 2000}};
	setitimer(ITIMER_PROF, &it, 0);
	pthread_t th;
	pthread_create(&th, 0, worker, 0);
	long long end = now() + (long long)(secs * 1e9);
	while (now() < end) {
		sink += chain_top(sink);
		sort_some();
		clocks();
		plt_calls();
	}
	stop = 1;
	pthread_join(th, 0);
	return 0;
}
