/* forker: a target whose child exits mid-run, for tickprof sample tests.
 * Usage: forker CHILD SECONDS
 * Forks a child that execs "CHILD SECONDS /dev/null" (the burn target) and
 * waits for it, then burns CPU itself in parent_spin for SECONDS. The
 * child's samples must survive its exit. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void parent_done(void) { __asm__ volatile(""); }

__attribute__((noinline)) void parent_spin(void)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < 100000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
	parent_done();
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execl(argv[1], argv[1], argv[2], "/dev/null", (char *)0);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	double secs = atof(argv[2]);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		parent_spin();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
