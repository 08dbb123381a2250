// Command chanwait is the Go target of tickprof's coverage suite
// (bench/coverage): a goroutine blocks on a channel receive that another
// goroutine feeds every -period, then calls Work, about -work of
// arithmetic that times itself with the runtime's monotonic clock
// (runtime.nanotime, what time.Now reads) at its first and last statement.
// After -for it writes the truth file -o, in the format of
// testdata/coverage/coverage.c: calls, mean_ns, inner_mean_ns, clock_ns
// and the quantiles p50_ns, p90_ns, p99_ns and p99.9_ns (order statistics
// X_(ceil(n p)) of the durations), each duration being the inner time plus
// clock_ns, the cost of one clock read (the parts of the two reads outside
// the readings).
//
//	chanwait -o TRUTH [-for 5s] [-period 1ms] [-work 10us]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's monotonic clock (one vDSO read).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

var (
	durations []int64 // every call's inner duration (only the receiver calls Work)
	sink      uint64
)

// Work spins on arithmetic until d has passed and records its own duration.
//
//go:noinline
func Work(d int64) {
	t0 := nanotime()
	x := sink
	for nanotime()-t0 < d {
		for i := 0; i < 32; i++ {
			x = x*6364136223846793005 + uint64(i)
		}
	}
	sink = x
	durations = append(durations, nanotime()-t0)
}

// clockCost returns the cost of one nanotime in ns: the least mean over 50
// loops of 2,000 reads (a loop that was preempted counts the preemption).
func clockCost() float64 {
	best := math.Inf(1)
	for b := 0; b < 50; b++ {
		t0 := nanotime()
		for i := 0; i < 2000; i++ {
			nanotime()
		}
		best = min(best, float64(nanotime()-t0)/2001)
	}
	return best
}

func main() {
	out := flag.String("o", "", "truth file, written at the exit")
	dur := flag.Duration("for", 5*time.Second, "how long to call Work")
	period := flag.Duration("period", time.Millisecond, "period of the feeding goroutine's sends")
	work := flag.Duration("work", 10*time.Microsecond, "time Work spins")
	flag.Parse()
	if *out == "" || *dur <= 0 || *period <= 0 {
		fmt.Fprintln(os.Stderr, "usage: chanwait -o TRUTH [-for D] [-period D] [-work D]")
		os.Exit(2)
	}
	cc := clockCost()
	durations = make([]int64, 0, int(*dur / *period)+1024)
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(*period)
		defer tick.Stop()
		for {
			<-tick.C
			select {
			case ch <- struct{}{}:
			case <-done:
				return
			}
		}
	}()
	end := nanotime() + int64(*dur)
	for nanotime() < end {
		<-ch
		Work(int64(*work))
	}
	close(done)
	if err := writeTruth(*out, cc); err != nil {
		fmt.Fprintln(os.Stderr, "chanwait:", err)
		os.Exit(1)
	}
}

// writeTruth writes the truth file.
func writeTruth(path string, cc float64) error {
	n := len(durations)
	if n == 0 {
		return fmt.Errorf("no calls")
	}
	var sum float64
	for _, d := range durations {
		sum += float64(d)
	}
	slices.Sort(durations)
	q := func(p float64) float64 {
		k := max(int(math.Ceil(float64(n)*p-1e-9)), 1)
		return float64(durations[k-1]) + cc
	}
	s := fmt.Sprintf("calls=%d\nmean_ns=%.1f\ninner_mean_ns=%.1f\nclock_ns=%.1f\np50_ns=%.1f\np90_ns=%.1f\np99_ns=%.1f\np99.9_ns=%.1f\n",
		n, sum/float64(n)+cc, sum/float64(n), cc, q(0.5), q(0.9), q(0.99), q(0.999))
	return os.WriteFile(path, []byte(s), 0o644)
}
