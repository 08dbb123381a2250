// SPDX-License-Identifier: Apache-2.0

package main

import (
	"runtime"
	"testing"
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
	l, ok := heapLimit()
	if !ok {
		t.Fatal("runtime/metrics lacks a value heapLimit reads")
	}
	t.Logf("limit %.1f MiB with %d MiB held", float64(l)/(1<<20), live>>20)
	if l < live+live/8 {
		t.Errorf("limit %d B: under the live heap and its room (%d B)", l, live+live/8)
	}
	if l > 2*live {
		t.Errorf("limit %d B: twice the live heap or more", l)
	}
	runtime.KeepAlive(held)
}
