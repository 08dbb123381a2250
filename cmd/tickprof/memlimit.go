// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// agentMemoryLimit is the soft limit on a long-running agent's memory
// until its first collection, unless GOMEMLIMIT says otherwise. Left to
// GOGC alone, the heap grows to twice its live size (22 MB with 20
// watched processes, 40 MB at the first window's symbolization), and the
// agent's RSS sat at 90-100 MB.
const agentMemoryLimit = 48 << 20

// agentLeastLimit is the least limit set after a collection.
const agentLeastLimit = 32 << 20

// agentHeapRoom is the least room for new objects the limit leaves above
// what the runtime needs once garbage is gone. A fixed limit close to the
// live heap makes the collector run without end: with libc's separate
// debug file installed, one process's symbol and line tables were 39-44
// MB live, and under a fixed 48 MiB limit the agent collected every 50
// ms and spent 20% of a core on it (perf: runtime.scanObject and gcDrain
// were 80% of its samples). A limit that follows the live heap does not:
// at steady state the agent allocates about 60 KB/s with one process
// watched, so 4 MiB of room is a collection a minute, of about 10 ms.
const agentHeapRoom = 4 << 20

// agentGCInterval is the least time between the collections the limit
// causes: the room is at least what the agent allocated in that time, at
// the rate measured between the last two collections. At high rates (a
// test at 100 kHz) 4 MiB of room made it collect several times a second
// and take 3.5-5 s instead of 2-2.5 s to stop.
const agentGCInterval = 10 * time.Second

// limitAgentMemory keeps the agent's memory near what it needs unless
// the user set GOMEMLIMIT: a soft limit of the live heap, the runtime's
// own memory and agentHeapRoom (or an eighth of the live heap, or
// agentGCInterval of allocation, when more), set again after every
// collection (the live heap grows by tens of MB in a second when a
// process's symbol tables are first read) until ctx is done; after a
// collection that raised it, it collects once more agentRecheck later.
func limitAgentMemory(ctx context.Context) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(agentMemoryLimit)
	last := int64(agentMemoryLimit)
	var prev gcSample
	var pending atomic.Bool
	afterEachGC(ctx, func() {
		cur, ok := readGCSample()
		if !ok {
			return
		}
		l := heapLimit(cur, prev)
		prev = cur
		debug.SetMemoryLimit(l)
		if l > last+agentHeapRoom/2 && pending.CompareAndSwap(false, true) {
			time.AfterFunc(agentRecheck, func() {
				pending.Store(false)
				if ctx.Err() == nil {
					debug.FreeOSMemory()
				}
			})
		}
		last = l
	})
}

// agentRecheck is how long after a collection that raised the limit the
// agent collects again (and returns the free memory to the system). A
// collection in the middle of a passing peak raises the limit, and at the
// agent's allocation rate the next one came minutes later: re-reading
// /proc/kallsyms every 10 minutes left the limit at 60 MB and the RSS at
// 61 MB for 2.5 minutes each time, against 51 MB. A peak that lasts (a new
// process's symbol tables) keeps the limit up after the second look.
const agentRecheck = 10 * time.Second

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

// gcSample is what the runtime says after a collection.
type gcSample struct {
	at     time.Time
	live   int64 // the live heap
	need   int64 // memory the runtime holds, less free pages and objects newer than the mark
	allocs int64 // bytes allocated since the start
}

// gcSampleMetrics are what readGCSample reads.
var gcSampleMetrics = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/allocs:bytes",
}

// readGCSample reads the runtime's metrics: need is all the memory the
// limit counts (all but the heap's released pages), less its free pages
// and the objects allocated since the collection's mark (objects beyond
// the live heap).
func readGCSample() (gcSample, bool) {
	s := make([]metrics.Sample, len(gcSampleMetrics))
	for i, n := range gcSampleMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	var v [6]int64
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return gcSample{}, false
		}
		v[i] = int64(s[i].Value.Uint64())
	}
	live, total, released, free, objects := v[0], v[1], v[2], v[3], v[4]
	return gcSample{
		at:     time.Now(),
		live:   live,
		need:   total - released - free - max(0, objects-live),
		allocs: v[5],
	}, true
}

// heapLimit is the soft limit after the collection of cur, prev being
// the one before (zero at the first).
func heapLimit(cur, prev gcSample) int64 {
	room := max(int64(agentHeapRoom), cur.live/8)
	if dt := cur.at.Sub(prev.at); !prev.at.IsZero() && dt > 0 {
		rate := float64(cur.allocs-prev.allocs) / dt.Seconds()
		room = max(room, int64(min(rate*agentGCInterval.Seconds(), 1<<40)))
	}
	return max(int64(agentLeastLimit), cur.need+room)
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
