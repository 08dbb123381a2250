// Package targetkit is what tickprof's Go test targets share: the start
// gate (print "ready", wait for SIGUSR1 so that probes are attached before
// the first call) and the one-duration command line of the sampling
// targets.
package targetkit

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// NowFlag defines -now on the default flag set: start at once instead of
// waiting for SIGUSR1.
func NowFlag() *bool {
	return flag.Bool("now", false, "start at once instead of waiting for SIGUSR1")
}

// Gate prints "ready" and, unless now, waits for SIGUSR1.
func Gate(now bool) {
	start := make(chan os.Signal, 1)
	signal.Notify(start, syscall.SIGUSR1)
	fmt.Println("ready")
	if !now {
		<-start
	}
}

// DurationArg returns the program's one argument, a duration, or exits
// with status 2 saying what is wrong (name is the program's).
func DurationArg(name string) time.Duration {
	if len(os.Args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s DURATION\n", name)
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return d
}
