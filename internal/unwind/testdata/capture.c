/* Test target of package unwind: captures its own registers and a copy of its
 * stack deep in a chain of frameless functions, in the mode argv[2] names,
 * and writes them to argv[1] (regs.bin: ip, sp, bp, then the stack bytes;
 * maps: /proc/self/maps). Built -O2 -fomit-frame-pointer
 * -fasynchronous-unwind-tables; fp.c is built without unwind tables and
 * with frame pointers. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
volatile int sink;

static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t lo, hi, end = sp + 4096;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

static void save(uint64_t ip, uint64_t sp, uint64_t bp)
{
	char path[4096];
	uint64_t end = stack_end(sp), n = end - sp;
	if (n > 65536)
		n = 65536;
	snprintf(path, sizeof path, "%s/regs.bin", dir);
	FILE *f = fopen(path, "w");
	fwrite(&ip, 8, 1, f);
	fwrite(&sp, 8, 1, f);
	fwrite(&bp, 8, 1, f);
	fwrite((void *)sp, 1, n, f);
	fclose(f);
	snprintf(path, sizeof path, "%s/maps", dir);
	FILE *in = fopen("/proc/self/maps", "r"), *out = fopen(path, "w");
	int c;
	while ((c = fgetc(in)) != EOF)
		fputc(c, out);
	fclose(in);
	fclose(out);
}

/* capture records the registers at its label and the stack above. The
 * stack copy is taken by save, whose frame lies below capture's. */
__attribute__((noinline)) void capture(void)
{
	uint64_t ip, sp, bp;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
	save(ip, sp, bp);
	sink++;
}

__attribute__((noinline)) int f3(int x) { capture(); return x + sink; }
__attribute__((noinline)) int f2(int x) { return f3(x + 1) * 2 + sink; }
__attribute__((noinline)) int f1(int x) { return f2(x + 1) * 3 + sink; }

static int calls;
__attribute__((noinline)) int cmp(const void *a, const void *b)
{
	if (calls++ == 3)
		capture();
	return *(const int *)a - *(const int *)b;
}
__attribute__((noinline)) int sort_it(void)
{
	int v[16];
	for (int i = 0; i < 16; i++)
		v[i] = (i * 7) % 16;
	qsort(v, 16, sizeof v[0], cmp);
	return v[3] + sink;
}

__attribute__((noinline)) void handler(int sig) { capture(); sink += sig; }
__attribute__((noinline)) int signal_me(int x)
{
	signal(SIGUSR1, handler);
	kill(getpid(), SIGUSR1);
	return x + sink;
}

int fp_middle(int x); /* fp.c: frame pointer, no unwind tables */
__attribute__((noinline)) int cfi_leaf(int x) { capture(); return x + sink; }

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	dir = argv[1];
	if (!strcmp(argv[2], "plain"))
		sink += f1(1);
	else if (!strcmp(argv[2], "qsort"))
		sink += sort_it();
	else if (!strcmp(argv[2], "signal"))
		sink += signal_me(1);
	else if (!strcmp(argv[2], "fp"))
		sink += fp_middle(1);
	else
		return 2;
	return 0;
}
