// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"testing"
)

// refHist is a Refined with explicit buckets and cells.
type refHist struct {
	counts []uint64
	edges  []float64 // len(counts)+1
	cells  map[int][2][]Cell
}

func (h refHist) Buckets() int       { return len(h.counts) }
func (h refHist) Count(i int) uint64 { return h.counts[i] }
func (h refHist) Bounds(i int) (float64, float64) {
	return h.edges[i], h.edges[i+1]
}
func (h refHist) Cells(i int) ([]Cell, []Cell) {
	c := h.cells[i]
	return c[0], c[1]
}

// TestRefinedBoundsTable checks the bounds on the k-th smallest call of a
// refined bucket by hand: bucket [100, 200) with 10 calls, 3 unrefined
// and 7 in cells [120, 130) x2, [150, 160) x4, [190, 200) x1.
func TestRefinedBoundsTable(t *testing.T) {
	cells := []Cell{{120, 130, 2}, {150, 160, 4}, {190, 200, 1}}
	for _, c := range []struct {
		k      uint64
		lo, hi float64
	}{
		// Lower ends: 100 100 100 120 120 150 150 150 150 190;
		// upper ends: 130 130 160 160 160 160 200 200 200 200.
		{1, 100, 130}, {3, 100, 160}, {4, 120, 160}, {5, 120, 160}, {6, 150, 160},
		{7, 150, 200}, {9, 150, 200}, {10, 190, 200},
	} {
		lo, hi := refinedBounds(cells, cells, 10, c.k, 100, 200)
		if lo != c.lo || hi != c.hi {
			t.Errorf("k=%d: [%v, %v], want [%v, %v]", c.k, lo, hi, c.lo, c.hi)
		}
	}
	// Cells claiming more calls than the bucket holds are ignored.
	if lo, hi := refinedBounds(cells, cells, 5, 3, 100, 200); lo != 100 || hi != 200 {
		t.Errorf("inconsistent cells: [%v, %v], want the bucket", lo, hi)
	}
}

// TestRefinedQuantileInsideBuckets: a refined histogram's interval lies
// inside the one its buckets alone give, and holds every order statistic
// the buckets and cells allow: here 100 calls, 1 per ns in [0, 100), in
// 10 buckets of 10 ns, bucket 4 ([40, 50), 10 calls) fully refined into
// 1-ns cells.
func TestRefinedQuantileInsideBuckets(t *testing.T) {
	h := refHist{counts: make([]uint64, 10), edges: make([]float64, 11), cells: map[int][2][]Cell{}}
	for i := range h.counts {
		h.counts[i] = 10
		h.edges[i+1] = float64(10 * (i + 1))
	}
	var cs []Cell
	for x := 40.0; x < 50; x++ {
		cs = append(cs, Cell{x, x + 1, 1})
	}
	h.cells[4] = [2][]Cell{cs, cs}
	q, err := QuantileOfHistogram(h, 0, 99, 0.5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain := refHist{counts: h.counts, edges: h.edges}
	b, err := QuantileOfHistogram(plain, 0, 99, 0.5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// n = 100, p = 0.5: ranks 40 and 60; X_(40) = 39 lies in bucket 3
	// (not refined), X_(60) = 59 in bucket 5.
	if q.Ranks.Low != 40 || q.Ranks.High != 60 {
		t.Fatalf("ranks %d %d, want 40 60", q.Ranks.Low, q.Ranks.High)
	}
	if q.Low != 30 || q.High != 60 || b.Low != 30 || b.High != 60 {
		t.Errorf("refined [%v, %v], buckets [%v, %v]: want [30, 60] both (the ends are in unrefined buckets)", q.Low, q.High, b.Low, b.High)
	}
	// Refining bucket 3 too moves the lower end to X_(40)'s cell.
	var c3 []Cell
	for x := 30.0; x < 40; x++ {
		c3 = append(c3, Cell{x, x + 1, 1})
	}
	h.cells[3] = [2][]Cell{c3, c3}
	if r, err := QuantileOfHistogram(h, 0, 99, 0.5, Options{}); err != nil || r.Low != 39 || r.High != 60 {
		t.Errorf("bucket 3 refined: [%v, %v] (%v), want [39, 60]", r.Low, r.High, err)
	}
	// The point estimate X_(50) = 49 is in the refined bucket: [49, 50].
	if q.ValueLow != 49 || q.ValueHigh != 50 || b.ValueLow != 40 || b.ValueHigh != 50 {
		t.Errorf("point bounds refined [%v, %v] buckets [%v, %v], want [49, 50] and [40, 50]", q.ValueLow, q.ValueHigh, b.ValueLow, b.ValueHigh)
	}
}

// TestRefineRegion: the region reaches the bounds of ranks
// np -/+ (z+RefineMargin) sqrt(np(1-p)) (+1 above).
func TestRefineRegion(t *testing.T) {
	h := refHist{counts: make([]uint64, 1000), edges: make([]float64, 1001)}
	for i := range h.counts {
		h.counts[i] = 1
		h.edges[i+1] = float64(i + 1)
	}
	lo, hi, ok := RefineRegion(h, 0.5, Options{})
	w := (zQuantile(0.95) + RefineMargin) * math.Sqrt(250)
	wantLo, wantHi := math.Floor(500-w)-1, math.Ceil(500+w)+1
	if !ok || lo != wantLo || hi != wantHi {
		t.Errorf("region [%v, %v] %v, want [%v, %v]", lo, hi, ok, wantLo, wantHi)
	}
	if _, _, ok := RefineRegion(refHist{counts: make([]uint64, 3), edges: make([]float64, 4)}, 0.5, Options{}); ok {
		t.Error("a region from an empty histogram")
	}
}
