// Command gocpu is a Go target for tickprof sample tests: it profiles itself
// with runtime/pprof at a given rate while running five functions with
// different shares of the CPU, so that tickprof's shares can be compared
// with Go's own.
//
// Each call runs for milliseconds, longer than a sampling period: both
// profilers then sample the calls nearly systematically, and their shares
// agree more closely than two independent binomial samples would.
//
// Usage: gocpu RATE SECONDS OUT.pprof
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"
)

var sink uint64

// spin runs n rounds of a linear congruential generator; inlined into each
// caller so that the time is the caller's own.
func spin(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func work1() { spin(8000000) }

//go:noinline
func work2() { spin(6000000) }

//go:noinline
func work3() { spin(4000000) }

//go:noinline
func work4() { spin(3000000) }

//go:noinline
func work5() { spin(2000000) }

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: gocpu RATE SECONDS OUT.pprof")
		os.Exit(2)
	}
	rate, err1 := strconv.Atoi(os.Args[1])
	secs, err2 := strconv.ParseFloat(os.Args[2], 64)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "gocpu: bad RATE or SECONDS")
		os.Exit(2)
	}
	f, err := os.Create(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocpu:", err)
		os.Exit(1)
	}
	// Setting the rate first makes StartCPUProfile keep it (it prints a
	// warning that it cannot set it again).
	runtime.SetCPUProfileRate(rate)
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "gocpu:", err)
		os.Exit(1)
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for time.Now().Before(end) {
		work1()
		work2()
		work3()
		work4()
		work5()
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "gocpu:", err)
		os.Exit(1)
	}
}
