// SPDX-License-Identifier: Apache-2.0

package export

import (
	"math"
	"math/bits"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
)

// TestWideTicksSq merges windows of calls of seconds with the ns clock,
// whose sums of squared ticks pass 63 and 64 bits, with ordinary ones: the
// merged report's interval must be the wider of estimate.Time's on the
// exact sums (the 128-bit sum of squares) and the window batch-means one,
// to the rounding of the units, and a window whose sum fits is written as
// before (no unit label).
func TestWideTicksSq(t *testing.T) {
	durs := [][]uint64{
		{3_100_000_000},                // 9.6e18: past 63 bits
		{5_000_000_000, 4_000_000_000}, // 4.1e19: past 64 bits
		{1000, 2000, 3000},             // fits
		{6_000_000_000},
	}
	var ps []*profile.Profile
	var n, s uint64
	var exact [2]uint64 // hi, lo
	for j, ds := range durs {
		tg := TimeWindowTarget{Name: "f"}
		for _, c := range ds {
			hi, lo := bits.Mul64(c, c)
			var carry uint64
			tg.TicksSq, carry = bits.Add64(tg.TicksSq, lo, 0)
			tg.TicksSqHi += hi + carry
			tg.Calls++
			tg.Ticks += c
		}
		var carry uint64
		exact[1], carry = bits.Add64(exact[1], tg.TicksSq, 0)
		exact[0] += tg.TicksSqHi + carry
		n, s = n+tg.Calls, s+tg.Ticks
		p, err := EncodeTimeWindow(&TimeWindow{Clock: "ns", Resolution: 1, Confidence: 0.95,
			Start: time.Unix(1700000000+int64(10*j), 0), Duration: 10 * time.Second, Targets: []TimeWindowTarget{tg}})
		if err != nil {
			t.Fatalf("window %d: %v", j, err)
		}
		if _, labelled := p.Sample[0].NumLabel[ticksSqShift]; labelled != (j != 2) {
			t.Errorf("window %d: unit label %v, want one only where the sum passes 62 bits", j, p.Sample[0].NumLabel)
		}
		ps = append(ps, p)
	}
	row := mergedRow(t, ps, "f")
	merged, err := profile.Merge(ps)
	if err != nil {
		t.Fatal(err)
	}
	want, err := estimate.Time(estimate.Counts{Resolution: 1, Calls: n, Ticks: s, TicksSq: exact[1], TicksSqHi: exact[0], HasTicksSq: true}, estimate.Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	// The merged sum of squares itself, through Time: as from the exact sums.
	lo, hi := ticksSqCounts(mergedTargetSums(merged).ticksSq["f"], n, s)
	got, err := estimate.Time(estimate.Counts{Resolution: 1, Calls: n, Ticks: s, TicksSq: lo, TicksSqHi: hi, HasTicksSq: true}, estimate.Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Low-want.Low) > 1e-9*want.Mean || math.Abs(got.High-want.High) > 1e-9*want.Mean || got.Method != want.Method {
		t.Errorf("Time on the merged sums %v [%v, %v] (%s), on the exact ones %v [%v, %v] (%s)", got.Mean, got.Low, got.High, got.Method, want.Mean, want.Low, want.High, want.Method)
	}
	if c, ok := mergedTargetSums(merged).batches["f"].candidate(n, s, 1, 0.95); ok && c.High-c.Low > want.High-want.Low {
		want.Low, want.High, want.Method = c.Low, c.High, c.Method
	}
	t.Logf("merged: %d calls, mean %.4g ns [%.4g, %.4g] (%s); exact sums: %.4g [%.4g, %.4g] (%s), the wider", row.Calls, row.Mean, row.Low, row.High, row.Method, want.Mean, want.Low, want.High, want.Method)
	if row.Calls != n || !row.HasEstimate {
		t.Fatalf("row %+v: want %d calls with an interval", row, n)
	}
	for _, p := range [][2]float64{{row.Mean, want.Mean}, {row.Low, want.Low}, {row.High, want.High}} {
		if math.Abs(p[0]-p[1]) > 1e-9*p[1] {
			t.Errorf("merged mean and interval %v %v %v, from the exact sums %v %v %v", row.Mean, row.Low, row.High, want.Mean, want.Low, want.High)
			break
		}
	}
}

// TestTicksSqValue checks the unit chosen and the rounding.
func TestTicksSqValue(t *testing.T) {
	for _, c := range []struct {
		hi, lo uint64
		v, k   int64
	}{
		{0, 12345, 12345, 0},
		{0, 1<<62 - 1, 1<<62 - 1, 0},
		{0, 1 << 62, 1 << 61, 1},
		{0, 1<<63 + 3, 1<<61 + 1, 2},    // 3/4 of a unit of 4 rounds up
		{1, 0, 1 << 61, 3},              // 2^64
		{1 << 63, 0, 1 << 61, 66},       // 2^127
		{0, 1<<63 + 1, 1 << 61, 2},      // 1/4 of a unit rounds down
		{0, math.MaxUint64, 1 << 62, 2}, // rounds up to 2^62 units
	} {
		v, k := ticksSqValue(c.hi, c.lo)
		if v != c.v || k != c.k {
			t.Errorf("ticksSqValue(%d, %d) = %d, %d; want %d, %d", c.hi, c.lo, v, k, c.v, c.k)
		}
	}
}
