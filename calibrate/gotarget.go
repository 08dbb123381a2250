// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"context"
	"fmt"
	"os"
	"time"
)

// GoSymbol is the Go calibration target's symbol: tickprof times this
// empty function in a copy of itself (so no Go toolchain is needed) to
// measure the overhead of its RET-site probes for Go.
const GoSymbol = "github.com/tickprof/tickprof/calibrate.EmptyGo"

// EmptyGo does next to nothing: it calls emptyLeaf, which does nothing.
// The call gives it what most Go functions have, a stack-bound check in
// its prologue and a frame, so its probes sit where they sit in real code;
// neither function is ever inlined.
//
//go:noinline
func EmptyGo() { emptyLeaf() }

//go:noinline
func emptyLeaf() {}

// GoLoop calls EmptyGo in a loop for d (or until ctx ends): the Go
// calibration target's body, run by `tickprof calibrate` in a child copy of
// itself. Like the C target it rests 5 ms every 50 ms, outside any call,
// so that at a real-time priority it is never throttled.
func GoLoop(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	rest := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(end) && ctx.Err() == nil {
		for i := 0; i < 1000; i++ {
			EmptyGo()
		}
		if time.Now().After(rest) {
			time.Sleep(5 * time.Millisecond)
			rest = time.Now().Add(50 * time.Millisecond)
		}
	}
}

// GoHandlerSymbol is the Go calibration target's function with a body.
const GoHandlerSymbol = "github.com/tickprof/tickprof/calibrate.GoHandler"

// goHandler keeps GoHandler's own durations: the truth its in-call
// overhead is measured against.
var goHandler struct {
	sum   float64
	calls int64
	sink  uint64
}

// GoHandler works for body and measures its own duration from its first
// statement to its last.
//
//go:noinline
func GoHandler(body time.Duration) {
	t0 := time.Now()
	x := goHandler.sink
	for time.Since(t0) < body {
		x = x*6364136223846793005 + 1442695040888963407
	}
	goHandler.sink = x
	goHandler.sum += float64(time.Since(t0))
	goHandler.calls++
}

// GoPatternLoop calls EmptyGo (body 0) or GoHandler(body) once per gap for
// d (or until ctx ends), spending the gap parked (how "sleep": the
// goroutine blocks on a timer's channel, as on any channel receive) or
// spinning (how "spin"): the Go call patterns of the in-call overhead model
// (incall.go). With a body, out gets "MEAN_NS CALLS", GoHandler's own mean.
func GoPatternLoop(ctx context.Context, d, gap time.Duration, how string, body time.Duration, out string) error {
	end := time.Now().Add(d)
	write := time.Now()
	for time.Now().Before(end) && ctx.Err() == nil {
		if gap > 0 && how == "spin" {
			for t0 := time.Now(); time.Since(t0) < gap; {
			}
		} else if gap > 0 {
			<-time.After(gap)
		}
		if body > 0 {
			GoHandler(body)
		} else {
			EmptyGo()
		}
		if out != "" && time.Now().After(write) {
			if err := writeOwnMean(out, goHandler.sum, goHandler.calls); err != nil {
				return err
			}
			write = time.Now().Add(50 * time.Millisecond)
		}
	}
	return nil
}

// writeOwnMean replaces path with "MEAN_NS CALLS".
func writeOwnMean(path string, sum float64, calls int64) error {
	mean := 0.0
	if calls > 0 {
		mean = sum / float64(calls)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%.3f %d\n", mean, calls)), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
