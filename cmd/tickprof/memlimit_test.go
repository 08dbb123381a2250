// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestHeapLimit holds 64 MiB live: the limit after a collection leaves
// room for new objects above it, and not the twice-live heap GOGC would.
func TestHeapLimit(t *testing.T) {
	const live = 64 << 20
	held := make([][]byte, 64)
	for i := range held {
		held[i] = make([]byte, 1<<20)
		held[i][0] = 1 // resident
	}
	runtime.GC()
	cur, ok := readGCSample()
	if !ok {
		t.Fatal("runtime/metrics lacks a value readGCSample reads")
	}
	l := heapLimit(cur, gcSample{})
	t.Logf("limit %.1f MiB with %d MiB held", float64(l)/(1<<20), live>>20)
	if l < live+live/8 {
		t.Errorf("limit %d B: under the live heap and its room (%d B)", l, live+live/8)
	}
	if l > 2*live {
		t.Errorf("limit %d B: twice the live heap or more", l)
	}
	// 100 MiB allocated in the second before: room for 10 s of it.
	prev := gcSample{at: cur.at.Add(-time.Second), allocs: cur.allocs - 100<<20}
	if l := heapLimit(cur, prev); l < cur.need+1000<<20 {
		t.Errorf("limit %d B after 100 MiB/s: under 10 s of allocation above %d B", l, cur.need)
	}
	runtime.KeepAlive(held)
}

// TestDeferTimeGC: the collector is off until the first collection, and
// its defaults are back after it.
func TestDeferTimeGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}()
	deferTimeGC()
	if p := gcPercent(); p != -1 {
		t.Errorf("GC percent %d before the first collection, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l != timeFirstGC { // -1: read only
		t.Errorf("memory limit %d before the first collection, want %d", l, timeFirstGC)
	}
	for i := 0; i < 50 && gcPercent() != 100; i++ {
		runtime.GC() // the finalizer runs after it, on its own goroutine
		time.Sleep(10 * time.Millisecond)
	}
	if p := gcPercent(); p != 100 {
		t.Errorf("GC percent %d after the first collection, want 100 restored", p)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("memory limit %d after the first collection, want none", l)
	}
}

// gcPercent reads the collector's target (-1: off).
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if v := s[0].Value.Uint64(); v != math.MaxUint64 && v <= math.MaxInt32 {
		return int(v)
	}
	return -1
}
