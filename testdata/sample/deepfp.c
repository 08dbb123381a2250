/* deepfp: CPU work at the bottom of a recursion deeper than the sampler's
 * stack copy, for the test of the frame-pointer continuation: 100 levels of
 * deep() with 512 bytes of locals each (about 60 KiB of stack, over the
 * 28 KiB copy), built with frame pointers. Usage: deepfp SECONDS
 * matrix-cflags: -O2 -fno-omit-frame-pointer
 */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noinline)) unsigned long deep(int n, unsigned long x)
{
	volatile char pad[512];
	pad[0] = (char)x;
	pad[511] = (char)n;
	if (n == 0) /* not a tail call: deep(0) keeps its frame */
		return leaf(x + pad[0]) + pad[511];
	return deep(n - 1, x + 1) + pad[511];
}

int main(int argc, char **argv)
{
	/* Whole seconds are enough here: the test asks for 2. */
	time_t end = time(0) + (argc > 1 ? atoi(argv[1]) : 2);
	while (time(0) < end)
		sink += deep(100, sink);
	return 0;
}
