// Command timed is the Go target of tickprof's Go timing tests. It prints
// "ready", waits for SIGUSR1 (so probes can be attached first), makes a
// known number of calls to each timed function, prints one line per
// function with the calls it made (and, for Work, its own time.Since mean,
// which also holds nest's few hundred nanoseconds), and exits.
//
//	timed [-calls N] [-for DURATION] [-goroutines G] [-now]
//
// With -now it starts at once (for `tickprof time -- timed -now`).
//
// Work grows its goroutine's stack (deep recursion inside the call) and
// blocks (channel receive, time.Sleep), on many goroutines with
// GOMAXPROCS >= 2, so goroutines move between threads and stacks move
// while calls are in flight.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tickprof/tickprof/testdata/go/targetkit"
)

var sink atomic.Int64

// grow recurses n levels with a 512-byte frame each: 64 levels need 32 KB,
// four times a new goroutine's stack, so the runtime moves the stack.
//
//go:noinline
func grow(n int) int {
	var pad [512]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return grow(n-1) + int(pad[n%len(pad)])
}

// Work is the main timed function.
//
//go:noinline
func Work(i int, tokens <-chan struct{}) int {
	r := grow(64)
	<-tokens
	if i%2 == 0 {
		time.Sleep(200 * time.Microsecond)
	}
	return r + grow(16)
}

// nest calls Work d calls deep. Its frame is small, so each level moves SP
// by a few dozen bytes and, over the values of d, Work's own stack check is
// the one that first fails on a new goroutine's stack for some d: Work's
// prologue then runs twice, around runtime.morestack.
//
//go:noinline
func nest(d, i int, tokens <-chan struct{}) int {
	if d <= 0 {
		return Work(i, tokens)
	}
	return nest(d-1, i, tokens) + 1
}

// Counter has a method on a pointer receiver.
type Counter struct{ n int }

// Add is a pointer-receiver method.
//
//go:noinline
func (c *Counter) Add(x int) { c.n += x }

// Number is the constraint of Max.
type Number interface{ ~int | ~float64 }

// Max is generic: int and float64 give two instantiations.
//
//go:noinline
func Max[T Number](a, b T) T {
	if a > b {
		return a
	}
	return b
}

// classify has several return sites.
//
//go:noinline
func classify(i int) string {
	switch {
	case i%7 == 0:
		return "seven"
	case i%3 == 0:
		sink.Add(3)
		return "three"
	case i%2 == 0:
		sink.Add(2)
		return "two"
	}
	sink.Add(1)
	return "other"
}

// risky panics when i is a multiple of 5.
//
//go:noinline
func risky(i int) int {
	if i%5 == 0 {
		panic(fmt.Sprintf("risky %d", i))
	}
	return i * 2
}

// safe calls risky and recovers.
//
//go:noinline
func safe(i int) (r int) {
	defer func() {
		if recover() != nil {
			r = -1
		}
	}()
	return risky(i)
}

// leave ends its goroutine with runtime.Goexit: its RET never runs.
//
//go:noinline
func leave(wg *sync.WaitGroup) {
	defer wg.Done()
	sink.Add(1)
	runtime.Goexit()
}

// huge has a frame above the runtime's StackBig (4 KB): its stack check is
// a longer sequence with two jumps to morestack.
//
//go:noinline
func huge(i int) int {
	var a [8192]byte
	a[i%len(a)] = byte(i)
	return int(a[(i*7)%len(a)]) + grow(1)
}

// half is inlined where it is called directly; halfFn keeps an
// out-of-line copy that indirect calls run.
func half(x int) int { return x / 2 }

var halfFn = half

// mustFail only panics: it has no RET, so it cannot be timed.
//
//go:noinline
func mustFail(s string) { panic("mustFail: " + s) }

// tiny is inlined into main: it has no code of its own.
func tiny(x int) int { return x + 1 }

func main() {
	if len(os.Args) > 100 {
		mustFail(os.Args[1])
	}
	calls := flag.Int("calls", 2000, "calls of Work")
	gs := flag.Int("goroutines", 64, "goroutines running Work at once")
	now := targetkit.NowFlag()
	atLeast := flag.Duration("for", 0, "keep calling Work (past -calls) until this long has passed")
	flag.Parse()
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	targetkit.Gate(*now)

	// Work on fresh goroutines, gs at a time, fed tokens in bursts.
	began := time.Now()
	tokens := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case tokens <- struct{}{}:
			case <-stop:
				return
			}
			if i%16 == 15 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	var total atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, *gs)
	n := 0
	for ; n < *calls || time.Since(began) < *atLeast; n++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			t0 := time.Now()
			sink.Add(int64(nest(i%256, i, tokens)))
			total.Add(int64(time.Since(t0)))
			<-sem
		}(n)
	}
	wg.Wait()
	close(stop)
	fmt.Printf("Work calls=%d mean_ns=%.0f\n", n, float64(total.Load())/float64(n))

	c := &Counter{}
	for i := 0; i < 1000; i++ {
		c.Add(i)
	}
	fmt.Printf("Add calls=1000 sum=%d\n", c.n)

	var mi int
	var mf float64
	for i := 0; i < 500; i++ {
		mi = Max(mi, i)
	}
	for i := 0; i < 300; i++ {
		mf = Max(mf, float64(i))
	}
	fmt.Printf("Max calls_int=500 calls_float64=300 max=%d %g\n", mi, mf)

	kinds := map[string]int{}
	for i := 0; i < 1000; i++ {
		kinds[classify(i)]++
	}
	fmt.Printf("classify calls=1000 kinds=%d\n", len(kinds))

	recovered := 0
	for i := 1; i <= 500; i++ {
		if safe(i) < 0 {
			recovered++
		}
	}
	fmt.Printf("safe calls=500 panics=%d\n", recovered)

	var lw sync.WaitGroup
	for i := 0; i < 10; i++ {
		lw.Add(1)
		go leave(&lw)
	}
	lw.Wait()
	fmt.Println("leave calls=10")

	for i := 0; i < 10; i++ {
		sink.Add(int64(half(i) + halfFn(i)))
	}
	fmt.Println("half calls=20 inlined=10")

	for i := 0; i < 100; i++ {
		sink.Add(int64(huge(i)))
	}
	fmt.Println("huge calls=100")
	sink.Add(int64(tiny(len(kinds))))
}
