/* sys: a syscall-heavy target for tickprof sample tests. Usage: sys SECONDS
 * Loops on getppid and a one-byte write to /dev/null, so most of its CPU
 * time is spent in the kernel. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void do_syscalls(int fd)
{
	for (int i = 0; i < 1000; i++) {
		syscall(SYS_getppid);
		if (write(fd, "x", 1) != 1)
			exit(1);
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	int fd = open("/dev/null", O_WRONLY);
	struct timespec t0, t;
	if (fd < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		do_syscalls(fd);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
