package histogram

import (
	"math"
	"sort"

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
	RefineSlots = 16
	// RefineBins is the number of bins shared by a target's windows.
	RefineBins = 256
	// refineShift is the fixed point of Window.Mul.
	refineShift = 31
)

// Window is a refined bucket: the calls of bucket Bucket lasting
// [A, A+Span) ns are also counted in Bins bins of the pool from Off, the
// bin of d being ((d-A) x Mul) >> 31 (no division in BPF).
type Window struct {
	Bucket    int
	A, Span   uint64
	Mul       uint32
	Off, Bins int
}

// newWindow cuts [a, a+span) into bins of width about w ns (at least 1).
func newWindow(bucket int, a, span uint64, w float64) Window {
	w = math.Max(w, 1)
	mul := uint64(math.Ceil(float64(uint64(1)<<refineShift) / w))
	mul = min(max(mul, 1), 1<<refineShift)
	bins := int(((span-1)*mul)>>refineShift) + 1
	return Window{Bucket: bucket, A: a, Span: span, Mul: uint32(mul), Bins: bins}
}

// Edge is the first duration (ns) of bin k (k = Bins: the window's end):
// the smallest d with ((d-A) x Mul) >> 31 >= k.
func (w Window) Edge(k int) uint64 {
	if k >= w.Bins {
		return w.A + w.Span
	}
	num := uint64(k) << refineShift
	return w.A + (num+uint64(w.Mul)-1)/uint64(w.Mul)
}

// Fine holds the calls counted in refined bins: per bucket, cells [lo,
// hi) ns with counts. The zero value is empty.
type Fine struct {
	cells map[int]map[[2]uint64]uint64
}

// Add counts n calls in [lo, hi) of bucket b.
func (f *Fine) Add(b int, lo, hi, n uint64) {
	if n == 0 || hi <= lo {
		return
	}
	if f.cells == nil {
		f.cells = map[int]map[[2]uint64]uint64{}
	}
	m := f.cells[b]
	if m == nil {
		m = map[[2]uint64]uint64{}
		f.cells[b] = m
	}
	m[[2]uint64{lo, hi}] += n
}

// AddWindow counts the bins of w, counts[k] in bin k.
func (f *Fine) AddWindow(w Window, counts []uint64) {
	for k := 0; k < w.Bins && k < len(counts); k++ {
		f.Add(w.Bucket, w.Edge(k), w.Edge(k+1), counts[k])
	}
}

// Merge adds o's cells to f.
func (f *Fine) Merge(o *Fine) {
	if o == nil {
		return
	}
	for b, m := range o.cells {
		for k, n := range m {
			f.Add(b, k[0], k[1], n)
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
		for _, m := range f.cells {
			for _, c := range m {
				n += c
			}
		}
	}
	return n
}

// Cells returns bucket i's refined cells (estimate.Refined): nil without
// refinement.
func (h *Hist) Cells(i int) []estimate.Cell {
	if h.Fine == nil {
		return nil
	}
	m := h.Fine.cells[i]
	out := make([]estimate.Cell, 0, len(m))
	for k, n := range m {
		out = append(out, estimate.Cell{Lo: float64(k[0]), Hi: float64(k[1]), N: n})
	}
	return out
}

// Refiner chooses the windows to refine from a target's histogram: around
// each quantile asked for, the region estimate.RefineRegion gives, cut
// into about RefineBins/len(Levels) bins.
type Refiner struct {
	// Levels are the quantile levels, such as 0.99.
	Levels []float64
	// Estimate has the confidence.
	Estimate estimate.Options
}

// region is a span of durations to refine with bins of width w.
type region struct {
	lo, hi uint64
	w      float64
}

// Windows returns the windows for h: at most RefineSlots buckets and
// RefineBins bins, each window inside its bucket, none in the overflow
// bucket.
func (r Refiner) Windows(h *Hist) []Window {
	var regs []region
	for _, p := range r.Levels {
		lo, hi, ok := estimate.RefineRegion(h, p, r.Estimate)
		if !ok {
			continue
		}
		a, b := uint64(math.Max(0, lo)), uint64(math.Min(hi, 1<<(MaxLog2+1)))
		if b <= a {
			continue
		}
		regs = append(regs, region{lo: a, hi: b, w: float64(b-a) / float64(RefineBins/max(1, len(r.Levels)))})
	}
	return planWindows(regs)
}

// planWindows splits regions at bucket edges (a bucket in two regions
// gets the union of its parts, at the finer width), keeps at most
// RefineSlots/len(regs) buckets per region (those nearest its middle), and
// widens every bin until all fit in RefineBins.
func planWindows(regs []region) []Window {
	type part struct {
		lo, hi uint64
		w      float64
	}
	parts := map[int]*part{}
	per := RefineSlots / max(1, len(regs))
	for _, g := range regs {
		first, last := Index(g.lo), Index(g.hi-1)
		mid := (g.lo + g.hi) / 2
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
			lo, hi = max(lo, g.lo), min(hi, g.hi)
			if p := parts[b]; p != nil {
				p.lo, p.hi, p.w = min(p.lo, lo), max(p.hi, hi), math.Min(p.w, g.w)
			} else {
				parts[b] = &part{lo, hi, g.w}
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
			w := newWindow(b, p.lo, p.hi-p.lo, p.w*scale)
			w.Off = off
			off += w.Bins
			ws = append(ws, w)
		}
		if off <= RefineBins {
			return ws
		}
	}
}
