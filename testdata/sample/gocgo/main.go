// Command gocgo is a sampling target whose time is spent in C called from
// Go (cgo), the C built -O2 -fomit-frame-pointer with unwind tables, and in
// Go called back from C:
//
//	main.main -> main.callC -> C c_spin -> c_mid -> c_leaf
//	main.main -> main.callCGo -> C c_calls_go -> main.goBack -> main.goSpin
//
// Usage: gocgo DURATION
package main

/*
#cgo CFLAGS: -O2 -fomit-frame-pointer -fasynchronous-unwind-tables
extern void goBack(int);
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long c_leaf(unsigned long n) {
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += (i * i) ^ (s >> 3);
	return s;
}
__attribute__((noinline)) static unsigned long c_mid(unsigned long n) {
	unsigned long r = c_leaf(n);
	sink = r;
	return r + 1;
}
__attribute__((noinline)) static void c_spin(unsigned long n) { sink = c_mid(n) + 1; }
__attribute__((noinline)) static void c_calls_go(int n) { goBack(n); sink++; }
*/
import "C"

import (
	"time"

	"github.com/tickprof/tickprof/testdata/go/targetkit"
)

//export goBack
func goBack(n C.int) { sink += goSpin(int(n)) }

var sink int

//go:noinline
func goSpin(n int) int {
	s := 0
	for i := 0; i < n*1000; i++ {
		s += i ^ (s >> 3)
	}
	return s
}

//go:noinline
func callC() { C.c_spin(2000000) }

//go:noinline
func callCGo() { C.c_calls_go(2000) }

func main() {
	d := targetkit.DurationArg("gocgo")
	for end := time.Now().Add(d); time.Now().Before(end); {
		callC()
		callCGo()
	}
}
