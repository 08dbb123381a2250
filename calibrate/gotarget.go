package calibrate

import (
	"context"
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
