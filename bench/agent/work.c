/* bench/sample/target.c's fixed work, stopped (SIGSTOP) right after exec so
 * that a profiler can attach to the process, by PID or by executable name,
 * before the work starts; SIGCONT starts it. Prints "wall_ns N cpu_ns N".
 * Build: gcc -O1 -fno-omit-frame-pointer -fno-inline -o work work.c */
#include <signal.h>
#define main target_main
#include "../sample/target.c"
#undef main

int main(int argc, char **argv)
{
	raise(SIGSTOP);
	return target_main(argc, argv);
}
