#include <stdlib.h>
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) double work(int n) { volatile double x = 0; for (int i = 0; i < n; i++) x += i * 0.5; return x; }
__attribute__((noinline)) void burst(void) { for (int i = 0; i < 200; i++) work(2000 + rand() % 500); }
int main(void) { srand(getpid()); for (;;) { burst(); usleep(100000); } }
