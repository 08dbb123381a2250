// Command gonow is a sampling target that spends its time reading the clock
// (time.Now: the vDSO's clock_gettime, which Go calls on the thread's
// system stack). Usage: gonow DURATION
package main

import (
	"fmt"
	"os"
	"time"
)

//go:noinline
func spinNow(d time.Duration) int64 {
	var s int64
	for end := time.Now().Add(d); ; {
		t := time.Now()
		s += t.UnixNano() & 1
		if t.After(end) {
			return s
		}
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gonow DURATION")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(spinNow(d) >= 0)
}
