// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate/histogram"
)

// qhHarness prints tp_qh_index(v) for every v read, after the layout
// constants.
const qhHarness = `#include <stdio.h>
typedef unsigned int __u32;
typedef unsigned long long __u64;
#define __always_inline inline __attribute__((always_inline))
#include "qhist_math.h"
int main(void) {
	__u64 v;
	printf("%d %d %d %d\n", TP_QH_SUB_BITS, TP_QH_SUB, TP_QH_MAX_LOG2, TP_QH_BUCKETS);
	while (scanf("%llu", &v) == 1)
		printf("%u\n", tp_qh_index(v));
	return 0;
}
`

// TestQhistIndexMatchesGo runs the BPF histogram's index function on the
// host and checks it against package histogram's, at every bucket edge,
// the extremes, and random durations.
func TestQhistIndexMatchesGo(t *testing.T) {
	bin := buildHarness(t, qhHarness, "-Wall")
	var vs []uint64
	for i := 0; i < histogram.Buckets; i++ {
		lo, hi := histogram.Bounds(i)
		vs = append(vs, lo, hi-1)
		if lo > 0 {
			vs = append(vs, lo-1)
		}
	}
	vs = append(vs, 0, 1, 31, 32, 1023, 1024, 4095, 4096, math.MaxUint64, 1<<63, 1<<36-1, 1<<36)
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		vs = append(vs, r.Uint64()>>uint(r.Intn(64)))
	}
	var in strings.Builder
	for _, v := range vs {
		fmt.Fprintln(&in, v)
	}
	lines := runHarness(t, bin, in.String())
	want := fmt.Sprintf("%d %d %d %d", histogram.SubBits, histogram.Sub, histogram.MaxLog2, histogram.Buckets)
	if lines[0] != want {
		t.Fatalf("C layout %q, Go layout %q", lines[0], want)
	}
	if len(lines) != len(vs)+1 {
		t.Fatalf("harness printed %d lines, want %d", len(lines), len(vs)+1)
	}
	for i, v := range vs {
		if g := fmt.Sprint(histogram.Index(v)); lines[i+1] != g {
			t.Errorf("tp_qh_index(%d) = %s, histogram.Index = %s", v, lines[i+1], g)
		}
	}
}
