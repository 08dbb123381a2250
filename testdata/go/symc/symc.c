/* symc: a small C program for the symtab tests. Line numbers matter: gcc
 * gives a function's entry the line of its opening brace, and the tests
 * expect spin at line 10, helper at 17 and main at 22. */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

long spin(long n)
{
	for (long i = 0; i < n; i++)
		sink += i;
	return sink;
}

static long helper(long n)
{
	return spin(n) + 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	printf("%ld\n", helper(n));
	return 0;
}
