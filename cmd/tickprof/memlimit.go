// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// agentMemoryLimit is the least soft limit on the Go heap of a long-running
// agent, unless GOMEMLIMIT says otherwise. Left to GOGC alone, the heap
// grows to twice its live size (22 MB with 20 watched processes, 40 MB at
// the first window's symbolization), and the agent's RSS sat at 90-100 MB.
const agentMemoryLimit = 48 << 20

// agentHeapRoom is the least room above the live heap the limit leaves. A
// fixed limit close to the live heap makes the collector run without end:
// with libc's separate debug file installed, one process's symbol and line
// tables were 39-44 MB live, and under a fixed 48 MiB limit the agent
// collected every 50 ms and spent 20% of a core on it (perf:
// runtime.scanObject and gcDrain were 80% of its samples).
const agentHeapRoom = 16 << 20

// limitAgentMemory keeps the Go heap near its live size unless the user
// set GOMEMLIMIT: a soft limit of the live heap plus a quarter (at least
// agentHeapRoom, at least agentMemoryLimit in all), set again after every
// collection (the live heap grows by tens of MB in a second when a
// process's symbol tables are first read) until ctx is done.
func limitAgentMemory(ctx context.Context) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(agentMemoryLimit)
	afterEachGC(ctx, func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			debug.SetMemoryLimit(heapLimit(int64(s[0].Value.Uint64())))
		}
	})
}

// gcSentinel is an object whose finalizer runs after the collection that
// finds it unreachable.
type gcSentinel struct{ _ [16]byte }

// afterEachGC calls f after every collection until ctx is done, from the
// finalizer goroutine: a fresh unreachable sentinel is finalized by each
// cycle.
func afterEachGC(ctx context.Context, f func()) {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		if ctx.Err() != nil {
			return
		}
		f()
		afterEachGC(ctx, f)
	})
}

// heapLimit is the soft limit for a live heap of live bytes.
func heapLimit(live int64) int64 {
	return max(int64(agentMemoryLimit), live+max(int64(agentHeapRoom), live/4))
}

// sampleGCPercent is the Go collector's target for `sample` unless GOGC
// says otherwise: the heap may grow a quarter past its live size instead
// of doubling. A sampling run's heap peaks once, when the profile is
// symbolized (the DWARF of separate debug files, unwind and symbol
// tables); at 25 its peak RSS fell from 103-107 MiB to 86-88 MiB on
// sqlite3 at 999 Hz, for 0.05-0.1 s more CPU (docs/performance.md, "Own
// cost").
const sampleGCPercent = 25

// tightenSampleGC sets sampleGCPercent unless the user set GOGC.
func tightenSampleGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(sampleGCPercent)
	}
}
