// Command symtarget prints, for a few functions of each kind, the name Go
// gives it and its entry address, as seen from inside the function. The
// symtab tests compare these with what they read from the binary.
package main

import (
	"fmt"
	"runtime"
)

// T has a method on a pointer receiver.
type T struct{ n int }

// List is a generic type with a method.
type List[E any] struct{ e []E }

func here() {
	pc, _, _, _ := runtime.Caller(1)
	f := runtime.FuncForPC(pc)
	_, line := f.FileLine(f.Entry())
	fmt.Printf("%s %#x %d\n", f.Name(), f.Entry(), line)
}

//go:noinline
func (t *T) Method(x int) int { here(); t.n += x; return t.n }

//go:noinline
func F[K comparable](k K) K { here(); return k }

//go:noinline
func (l *List[E]) Push(e E) { here(); l.e = append(l.e, e) }

//go:noinline
func plain() { here() }

func main() {
	t := &T{}
	l := &List[string]{}
	plain()
	t.Method(1)
	F(1)
	F("a")
	l.Push("x")
}
