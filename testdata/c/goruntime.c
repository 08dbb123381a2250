/* goruntime.c - C functions under the Go runtime's names that the
 * goroutine probes attach to (runtime.execute, runtime.ready and, unless
 * NOPARK is defined, runtime.gopark): internal/loader's
 * TestAttachGoAllOrNone. */
void execute(void) __asm__("runtime.execute");
void ready(void) __asm__("runtime.ready");
void execute(void) {}
void ready(void) {}
#ifndef NOPARK
void gopark(void) __asm__("runtime.gopark");
void gopark(void) {}
#endif
int main(void) { return 0; }
