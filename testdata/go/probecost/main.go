// Command probecost calls main.target in a loop and prints the loop's time
// per call, for measuring what probes on a Go function cost:
//
//	probecost [-calls N] [-now]
//
// It prints "ready" and waits for SIGUSR1 (unless -now), then prints
// "ns_per_call=X". main.target has the usual prologue (CMP SP, 16(R14);
// JBE) because it calls main.leaf.
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/tickprof/tickprof/testdata/go/targetkit"
)

var sink int

//go:noinline
func leaf(i int) int { return i*3 + 1 }

//go:noinline
func target(i int) int { return leaf(i) + 1 }

func main() {
	calls := flag.Int("calls", 20000, "calls of main.target")
	now := targetkit.NowFlag()
	flag.Parse()
	targetkit.Gate(*now)
	t0 := time.Now()
	for i := 0; i < *calls; i++ {
		sink += target(i)
	}
	el := time.Since(t0)
	fmt.Printf("ns_per_call=%.1f\n", float64(el.Nanoseconds())/float64(*calls))
}
