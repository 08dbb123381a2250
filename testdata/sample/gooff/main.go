// Command gooff is a Go target for tickprof's off-CPU tests: one goroutine
// blocks on a channel fed every PERIOD, another on a mutex that a third
// holds for HOLD of every PERIOD; each computes for SPIN after it gets
// through. Both run locked to their own threads (runtime.LockOSThread), so
// that a thread is off CPU exactly when its goroutine is parked. Each
// measures its own blocked time and writes "key value" lines to OUT:
// chan_blocked_ns, mutex_blocked_ns, mutex_sleep_ns (the second
// goroutine's sleeps before each lock), locked_parked_ns (the sum of the
// three: the locked threads' time parked), wall_ns.
//
// Usage: gooff OUT PERIOD HOLD SPIN ROUNDS
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

var sink uint64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := sink
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

//go:noinline
func waitChan(ch <-chan struct{}) time.Duration {
	t := time.Now()
	<-ch
	return time.Since(t)
}

//go:noinline
func waitMutex(mu *sync.Mutex) time.Duration {
	t := time.Now()
	mu.Lock()
	d := time.Since(t)
	mu.Unlock()
	return d
}

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: gooff OUT PERIOD HOLD SPIN ROUNDS")
		os.Exit(2)
	}
	period, _ := time.ParseDuration(os.Args[2])
	hold, _ := time.ParseDuration(os.Args[3])
	work, _ := time.ParseDuration(os.Args[4])
	rounds, _ := strconv.Atoi(os.Args[5])
	ch := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	var chanBlocked, mutexBlocked, mutexSleep time.Duration
	start := time.Now()
	wg.Add(3)
	go func() { // the feeder and lock holder
		defer wg.Done()
		next := time.Now()
		for i := 0; i < rounds; i++ {
			next = next.Add(period)
			mu.Lock()
			time.Sleep(time.Until(next.Add(-period + hold)))
			mu.Unlock()
			time.Sleep(time.Until(next))
			ch <- struct{}{}
		}
	}()
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for i := 0; i < rounds; i++ {
			chanBlocked += waitChan(ch)
			spin(work)
		}
	}()
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for i := 0; i < rounds; i++ {
			t := time.Now()
			time.Sleep(period - hold) // arrive while the lock is held
			mutexSleep += time.Since(t)
			mutexBlocked += waitMutex(&mu)
			spin(work)
		}
	}()
	wg.Wait()
	wall := time.Since(start)
	out := fmt.Sprintf("chan_blocked_ns %d\nmutex_blocked_ns %d\nmutex_sleep_ns %d\nlocked_parked_ns %d\nwall_ns %d\n",
		chanBlocked.Nanoseconds(), mutexBlocked.Nanoseconds(), mutexSleep.Nanoseconds(),
		(chanBlocked + mutexBlocked + mutexSleep).Nanoseconds(), wall.Nanoseconds())
	if err := os.WriteFile(os.Args[1], []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
