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
