// Command gooff is a Go target for tickprof's off-CPU tests: one goroutine
// (chanWorker) blocks on a channel fed every PERIOD, another (mutexWorker)
// on a sync.Mutex that a third (feeder) holds for HOLD of every PERIOD; each computes for SPIN after it gets
// through. Each measures its own blocked time and writes "key value" lines
// to OUT: chan_blocked_ns, mutex_blocked_ns, mutex_sleep_ns (the second
// goroutine's sleeps before each lock), chan_wall_ns and mutex_wall_ns
// (each goroutine's whole life), wall_ns, chan_max_ns and mutex_max_ns
// (the longest single wait of each).
//
// Usage: gooff OUT PERIOD HOLD SPIN ROUNDS
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

var sink uint64

// chanMax and mutexMax are the longest single waits.
var chanMax, mutexMax time.Duration

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

// feeder holds mu for hold of every period, then sends on ch at the
// period's end.
//
//go:noinline
func feeder(ch chan<- struct{}, mu *sync.Mutex, period, hold time.Duration, rounds int) {
	next := time.Now()
	for i := 0; i < rounds; i++ {
		next = next.Add(period)
		mu.Lock()
		time.Sleep(time.Until(next.Add(-period + hold)))
		mu.Unlock()
		time.Sleep(time.Until(next))
		ch <- struct{}{}
	}
}

// chanWorker receives from ch and computes for work, rounds times; it
// returns its time blocked and its whole life.
//
//go:noinline
func chanWorker(ch <-chan struct{}, work time.Duration, rounds int) (blocked, life time.Duration) {
	t := time.Now()
	for i := 0; i < rounds; i++ {
		d := waitChan(ch)
		blocked += d
		chanMax = max(chanMax, d)
		spin(work)
	}
	return blocked, time.Since(t)
}

// mutexWorker sleeps so as to arrive while mu is held, takes it and
// computes for work, rounds times; it returns its time blocked, its time
// asleep and its whole life.
//
//go:noinline
func mutexWorker(mu *sync.Mutex, sleep, work time.Duration, rounds int) (blocked, slept, life time.Duration) {
	t0 := time.Now()
	for i := 0; i < rounds; i++ {
		t := time.Now()
		time.Sleep(sleep)
		slept += time.Since(t)
		d := waitMutex(mu)
		blocked += d
		mutexMax = max(mutexMax, d)
		spin(work)
	}
	return blocked, slept, time.Since(t0)
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
	var chanBlocked, chanWall, mutexBlocked, mutexSleep, mutexWall time.Duration
	start := time.Now()
	wg.Add(3)
	go func() { defer wg.Done(); feeder(ch, &mu, period, hold, rounds) }()
	go func() { defer wg.Done(); chanBlocked, chanWall = chanWorker(ch, work, rounds) }()
	go func() {
		defer wg.Done()
		mutexBlocked, mutexSleep, mutexWall = mutexWorker(&mu, period-hold, work, rounds)
	}()
	wg.Wait()
	wall := time.Since(start)
	out := fmt.Sprintf("chan_blocked_ns %d\nmutex_blocked_ns %d\nmutex_sleep_ns %d\nchan_wall_ns %d\nmutex_wall_ns %d\nwall_ns %d\nchan_max_ns %d\nmutex_max_ns %d\n",
		chanBlocked.Nanoseconds(), mutexBlocked.Nanoseconds(), mutexSleep.Nanoseconds(),
		chanWall.Nanoseconds(), mutexWall.Nanoseconds(), wall.Nanoseconds(), chanMax.Nanoseconds(), mutexMax.Nanoseconds())
	if err := os.WriteFile(os.Args[1], []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
