// sysloop: a target for the syscall and kernel-function tests. It prints
// "ready", waits for SIGUSR1 (so a tracer attaches first and counts from
// the very first call), makes an exactly known sequence of system calls
// through syscall(2) (no libc caching or batching), prints "done" and
// exits with exit_group.
//
//   sysloop getppid N          N getppid
//   sysloop mix                7 getppid, 3 getpid, 5 close(-1), 2 umask
//   sysloop nanosleep N US     N nanosleep of US microseconds
//   sysloop pipe N US          N blocking reads on a pipe whose writer (a
//                              child process) sleeps US microseconds first
//   sysloop readfile N PATH    N read(2) of 64 bytes from PATH (opened before
//                              the start), each followed by lseek to 0 and
//                              0-7 getppid (a pause of random length)
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static void wait_start(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	syscall(SYS_nanosleep, &ts, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 0;
	char buf[64];
	long i;

	if (strcmp(mode, "pipe") == 0) {
		long us = argc > 3 ? atol(argv[3]) : 1000;
		int go[2], data[2];

		if (pipe(go) || pipe(data))
			return 2;
		if (fork() == 0) {
			for (i = 0; i < n; i++) {
				if (syscall(SYS_read, go[0], buf, 1) != 1)
					_exit(3);
				sleep_us(us);
				syscall(SYS_write, data[1], "x", 1);
			}
			_exit(0);
		}
		wait_start();
		for (i = 0; i < n; i++) {
			syscall(SYS_write, go[1], "g", 1);
			if (syscall(SYS_read, data[0], buf, 1) != 1)
				return 4;
		}
	} else if (strcmp(mode, "readfile") == 0) {
		int fd = open(argc > 3 ? argv[3] : "/proc/self/stat", O_RDONLY);

		if (fd < 0)
			return 2;
		wait_start();
		unsigned int seed = 1;

		for (i = 0; i < n; i++) {
			long k, spins = rand_r(&seed) % 8;

			syscall(SYS_read, fd, buf, sizeof(buf));
			syscall(SYS_lseek, fd, 0, SEEK_SET);
			/* A random pause keeps the calls asynchronous with any
			 * tick: a loop of fixed period can lock its phase to a
			 * tick:DUR grid (most of all under an emulator), which
			 * the estimator's premise excludes. */
			for (k = 0; k < spins; k++)
				syscall(SYS_getppid);
		}
	} else {
		long us = argc > 3 ? atol(argv[3]) : 1000;

		wait_start();
		if (strcmp(mode, "getppid") == 0) {
			for (i = 0; i < n; i++)
				syscall(SYS_getppid);
		} else if (strcmp(mode, "nanosleep") == 0) {
			for (i = 0; i < n; i++)
				sleep_us(us);
		} else if (strcmp(mode, "mix") == 0) {
			for (i = 0; i < 7; i++)
				syscall(SYS_getppid);
			for (i = 0; i < 3; i++)
				syscall(SYS_getpid);
			for (i = 0; i < 5; i++)
				syscall(SYS_close, -1);
			for (i = 0; i < 2; i++)
				syscall(SYS_umask, 022);
		} else {
			return 2;
		}
	}
	/* One write for "done", then exit_group (entry only). */
	syscall(SYS_write, 1, "done\n", 5);
	syscall(SYS_exit_group, 0);
	return 0;
}
