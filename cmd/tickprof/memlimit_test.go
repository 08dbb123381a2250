// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"runtime"
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
