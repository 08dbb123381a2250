// SPDX-License-Identifier: Apache-2.0

package histogram

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/tickprof/tickprof/estimate"
)

// Refinement: BPF counts the calls of a few buckets, chosen by Go between
// polls, also in narrower bins (bpf/qhist.h, tp_qr_add), so that the
// quantiles' intervals end at a bin's edge instead of a bucket's
// (estimate.Refined has why that is sound). Windows says which buckets and
// bins; Fine accumulates what BPF counted in them.

// The refinement's sizes; bpf/qhist.h defines the same (TP_QR_*).
const (
	// RefineSlots is the number of buckets a target can have refined at
	// once.
	RefineSlots = 32
	// RefineBins is the number of bins shared by a target's windows.
	RefineBins = 256
	// refineShift is the fixed point of Window.Mul.
	refineShift = 31
)

// Window is a refined bucket: the calls of bucket Bucket lasting
// [A, A+Span) ns are counted in Bins bins of the pool from Off+1, the bin
// of d being ((d-A) x Mul) >> 31 (no division in BPF); those below A in
// bin Off, those from A+Span in bin Off+Bins+1 (End). Every call of the
// bucket counted while the window is in use is thus in a cell.
type Window struct {
	Bucket    int
	A, Span   uint64
	Mul       uint32
	Off, Bins int
}

// End is the pool bin of the bucket's calls above the window.
func (w Window) End() int { return w.Off + w.Bins + 1 }

// newWindow cuts [lo, hi) into bins of w ns, a power of two, on the
// lattice of multiples of w (so that the bins of successive windows
// coincide, and the cells they leave merge).
func newWindow(bucket int, lo, hi uint64, w uint64) Window {
	a := lo / w * w
	span := (hi - a + w - 1) / w * w
	return Window{Bucket: bucket, A: a, Span: span, Mul: uint32((uint64(1) << refineShift) / w), Bins: int(span / w)}
}

// binWidth is the power of two nearest (in ratio) to w ns, from 1 to
// 2^30.
func binWidth(w float64) uint64 {
	e := math.Round(math.Log2(math.Max(w, 1)))
	return uint64(1) << int(math.Min(e, 30))
}

// Edge is the first duration (ns) of bin k of the window (k = Bins: the
// window's end): the smallest d with ((d-A) x Mul) >> 31 >= k.
func (w Window) Edge(k int) uint64 {
	if k >= w.Bins {
		return w.A + w.Span
	}
	num := uint64(k) << refineShift
	return w.A + (num+uint64(w.Mul)-1)/uint64(w.Mul)
}

// Fine holds the calls counted in refined bins: per bucket, cells [lo,
// hi) ns with counts. The zero value is empty; a Fine is safe for
// concurrent reads, not for reads concurrent with Add.
type Fine struct {
	cells map[int]*bucketCells
	mu    sync.Mutex // guards the sorted views
}

// bucketCells are one bucket's cells, with views sorted by lower and by
// upper end (nil until asked for after an Add).
type bucketCells struct {
	idx        map[[2]uint64]int
	cs         []estimate.Cell
	byLo, byHi []estimate.Cell
}

// Add counts n calls in [lo, hi) of bucket b.
func (f *Fine) Add(b int, lo, hi, n uint64) {
	if n == 0 || hi <= lo {
		return
	}
	if f.cells == nil {
		f.cells = map[int]*bucketCells{}
	}
	bc := f.cells[b]
	if bc == nil {
		bc = &bucketCells{idx: map[[2]uint64]int{}}
		f.cells[b] = bc
	}
	bc.byLo, bc.byHi = nil, nil
	k := [2]uint64{lo, hi}
	if j, ok := bc.idx[k]; ok {
		bc.cs[j].N += n
		return
	}
	bc.idx[k] = len(bc.cs)
	bc.cs = append(bc.cs, estimate.Cell{Lo: float64(lo), Hi: float64(hi), N: n})
}

// AddWindow counts a window's calls, pool[k] in pool bin k (cells
// clipped to the bucket).
func (f *Fine) AddWindow(w Window, pool []uint64) {
	if w.End() >= len(pool) {
		return
	}
	lo, hi := Bounds(w.Bucket)
	f.Add(w.Bucket, lo, w.A, pool[w.Off])
	for k := 0; k < w.Bins; k++ {
		f.Add(w.Bucket, max(lo, w.Edge(k)), min(hi, w.Edge(k+1)), pool[w.Off+1+k])
	}
	f.Add(w.Bucket, max(lo, w.A+w.Span), hi, pool[w.End()])
}

// Merge adds o's cells to f.
func (f *Fine) Merge(o *Fine) {
	if o == nil {
		return
	}
	for b, bc := range o.cells {
		for _, c := range bc.cs {
			f.Add(b, uint64(c.Lo), uint64(c.Hi), c.N)
		}
	}
}

// Clone returns a copy of f (nil for nil).
func (f *Fine) Clone() *Fine {
	if f == nil {
		return nil
	}
	c := &Fine{}
	c.Merge(f)
	return c
}

// Calls is the number of calls f holds.
func (f *Fine) Calls() uint64 {
	var n uint64
	if f != nil {
		for _, bc := range f.cells {
			for _, c := range bc.cs {
				n += c.N
			}
		}
	}
	return n
}

// Cells returns bucket i's refined cells sorted by lower and by upper
// end (estimate.Refined): nil without refinement.
func (h *Hist) Cells(i int) (byLo, byHi []estimate.Cell) {
	f := h.Fine
	if f == nil {
		return nil, nil
	}
	bc := f.cells[i]
	if bc == nil {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if bc.byLo == nil {
		bc.byLo = slices.Clone(bc.cs)
		slices.SortFunc(bc.byLo, func(a, b estimate.Cell) int { return cmp.Compare(a.Lo, b.Lo) })
		bc.byHi = slices.Clone(bc.cs)
		slices.SortFunc(bc.byHi, func(a, b estimate.Cell) int { return cmp.Compare(a.Hi, b.Hi) })
	}
	return bc.byLo, bc.byHi
}

// Refiner chooses the windows to refine from a target's histogram: around
// each quantile asked for, the region estimate.RefineRegion gives, cut
// into about RefineBins/len(Levels) bins.
type Refiner struct {
	// Levels are the quantile levels, such as 0.99.
	Levels []float64
	// Estimate has the confidence.
	Estimate estimate.Options
	// Share is the number of quantiles the slots and bins are shared by
	// (0: len(Levels)); a simulation of one quantile of several sets it.
	Share int
}

// region is a span of durations to refine with bins of width about w,
// around mid (the point estimate).
type region struct {
	lo, hi, mid uint64
	w           float64
}

// Windows returns the windows for h: at most RefineSlots buckets and
// RefineBins bins, each window inside its bucket, none in the overflow
// bucket.
func (r Refiner) Windows(h *Hist) []Window {
	share := r.Share
	if share <= 0 {
		share = len(r.Levels)
	}
	var regs []region
	for _, p := range r.Levels {
		lo, hi, ok := estimate.RefineRegion(h, p, r.Estimate)
		if !ok {
			continue
		}
		a, b := uint64(math.Max(0, lo)), uint64(math.Min(hi, 1<<(MaxLog2+1)))
		v, err := estimate.HistogramQuantileValue(h, float64(h.Min), float64(h.Max), p, r.Estimate)
		if b <= a || err != nil {
			continue
		}
		mid := min(max(uint64(v), a), b-1)
		regs = append(regs, region{lo: a, hi: b, mid: mid, w: float64(b-a) / float64(RefineBins/max(1, share))})
	}
	return planWindows(regs, RefineSlots/max(1, share))
}

// planWindows splits regions at bucket edges (a bucket in two regions
// gets the union of its parts, at the finer width), keeps at most
// per buckets per region (those nearest its point estimate: as the calls
// grow, the interval closes in on it), and widens every bin
// until all fit in RefineBins.
func planWindows(regs []region, per int) []Window {
	type part struct {
		lo, hi uint64
		w      float64
	}
	parts := map[int]*part{}
	per = max(per, 1)
	for _, g := range regs {
		first, last, mid := Index(g.lo), Index(g.hi-1), g.mid
		var bs []int
		for b := first; b <= last && b < Buckets-1; b++ {
			bs = append(bs, b)
		}
		dist := func(b int) uint64 {
			lo, hi := Bounds(b)
			c := lo/2 + hi/2
			if c > mid {
				return c - mid
			}
			return mid - c
		}
		sort.SliceStable(bs, func(i, j int) bool { return dist(bs[i]) < dist(bs[j]) })
		for _, b := range bs[:min(len(bs), per)] {
			lo, hi := Bounds(b)
			// Bins of at most an eighth of the bucket, or the bucket
			// would be no finer than itself.
			w := math.Min(g.w, float64(hi-lo)/8)
			lo, hi = max(lo, g.lo), min(hi, g.hi)
			if p := parts[b]; p != nil {
				p.lo, p.hi, p.w = min(p.lo, lo), max(p.hi, hi), math.Min(p.w, w)
			} else {
				parts[b] = &part{lo, hi, w}
			}
		}
	}
	bs := make([]int, 0, len(parts))
	for b := range parts {
		bs = append(bs, b)
	}
	sort.Ints(bs)
	for scale := 1.0; ; scale *= 2 {
		ws := make([]Window, 0, len(bs))
		off := 0
		for _, b := range bs {
			p := parts[b]
			w := newWindow(b, p.lo, p.hi, binWidth(p.w*scale))
			w.Off = off
			off += w.Bins + 2
			ws = append(ws, w)
		}
		if off <= RefineBins {
			return ws
		}
	}
}
