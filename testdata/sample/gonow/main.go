// Command gonow is a sampling target that spends its time reading the clock
// (time.Now: the vDSO's clock_gettime, which Go calls on the thread's
// system stack). Usage: gonow DURATION
package main

import (
	"fmt"
	"time"

	"github.com/tickprof/tickprof/testdata/go/targetkit"
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
	d := targetkit.DurationArg("gonow")
	fmt.Println(spinNow(d) >= 0)
}
