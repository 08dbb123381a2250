// SPDX-License-Identifier: Apache-2.0

// Package histogram owns the log-geometric (HDR-style) histogram of exact
// call durations that tickprof's BPF programs keep per target and per CPU:
// its bucket layout (the same index function as bpf/qhist_math.h's
// tp_qh_index, tested against it), merging per-CPU copies, and quantiles
// with their distribution-free intervals (through package estimate).
//
// Layout: values below Exact (32) ns have a bucket each; above, every power
// of two [2^k, 2^(k+1)) is cut into Sub (16) geometric sub-buckets whose
// edges are 2^k x T[j]/4096, T[j] = round(4096 x 2^(j/16)) rounded up to
// whole ns: bucket j of an octave holds the durations whose top MantBits+1
// (13) bits, read as a number m in [4096, 8192), satisfy T[j] <= m <
// T[j+1]. From 4096 ns up a bucket is at most 4.45% of its lower bound
// wide (2^(1/16) - 1 = 4.43%, plus the rounding of T), from 1024 ns up at
// most 4.5%; everywhere, the whole nanoseconds a bucket holds lie within
// 4.45% of its smallest (below 1024 ns the edges' rounding to whole ns can
// make [lo, hi) up to 1 ns wider than that). Linear sub-buckets (the
// earlier layout) reached 6.25%. Values from 2^(MaxLog2+1) ns (about 69 s)
// on share the last bucket, whose upper bound is the observed maximum.
//
// In BPF the bucket is the octave (a branch-free log2) and the 15
// comparisons of m with T, four at a time in 16-bit lanes: no loop and no
// table lookup (bpf/qhist_math.h).
//
// It imports estimate only (checked by internal/layers).
package histogram

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/tickprof/tickprof/estimate"
)

// The layout; bpf/qhist_math.h defines the same constants (TP_QH_*).
const (
	// SubBits is log2 of the sub-buckets per power of two.
	SubBits = 4
	// Sub is the number of sub-buckets per power of two.
	Sub = 1 << SubBits
	// ExactBits is log2 of Exact.
	ExactBits = 5
	// Exact is the number of durations (0 .. Exact-1 ns) with a bucket
	// each.
	Exact = 1 << ExactBits
	// MantBits is the number of bits below the leading one that the
	// sub-bucket comparisons read.
	MantBits = 12
	// MaxLog2 is the largest floor(log2(v)) with buckets of its own.
	MaxLog2 = 35
	// Buckets is the number of buckets, the last one the overflow.
	Buckets = Exact + (MaxLog2-ExactBits+1)*Sub + 1
)

// T are the sub-bucket thresholds on the 13-bit mantissa:
// round(4096 x 2^(j/16)) (TestThresholds recomputes them).
var T = [Sub]uint64{4096, 4277, 4467, 4664, 4871, 5087, 5312, 5547, 5793, 6049, 6317, 6597, 6889, 7194, 7512, 7845}

// Index returns the bucket of a duration of v ns.
func Index(v uint64) int {
	if v < Exact {
		return int(v)
	}
	k := bits.Len64(v) - 1
	if k > MaxLog2 {
		return Buckets - 1
	}
	var m uint64
	if k >= MantBits {
		m = v >> (k - MantBits)
	} else {
		m = v << (MantBits - k)
	}
	j := 0
	for _, t := range T[1:] {
		if m >= t {
			j++
		}
	}
	return Exact + (k-ExactBits)*Sub + j
}

// edge is the smallest duration of octave k whose mantissa is at least t:
// ceil(t x 2^(k-MantBits)).
func edge(k int, t uint64) uint64 {
	if k >= MantBits {
		return t << (k - MantBits)
	}
	s := MantBits - k
	return (t + 1<<s - 1) >> s
}

// Bounds returns bucket i's bounds [lo, hi) in ns; the overflow bucket's
// hi is math.MaxUint64.
func Bounds(i int) (lo, hi uint64) {
	switch {
	case i < 0 || i >= Buckets:
		panic(fmt.Sprintf("histogram: bucket %d out of range", i))
	case i == Buckets-1:
		return 1 << (MaxLog2 + 1), math.MaxUint64
	case i < Exact:
		return uint64(i), uint64(i + 1)
	}
	k, j := (i-Exact)/Sub+ExactBits, (i-Exact)%Sub
	lo = edge(k, T[j])
	if j == Sub-1 {
		return lo, 1 << (k + 1)
	}
	return lo, edge(k, T[j+1])
}

// Hist is a histogram of durations in ns with their exact minimum and
// maximum.
type Hist struct {
	// Counts[i] is the number of durations in bucket i.
	Counts [Buckets]uint64
	// Min and Max are the smallest and largest durations (ns); meaningful
	// when Total() > 0.
	Min, Max uint64
	// Fine holds the calls also counted in refined bins (nil: none): a
	// share of some buckets' calls, each known to lie in a narrower cell
	// (refine.go).
	Fine *Fine `json:"-"`
}

// Add records one duration.
func (h *Hist) Add(v uint64) {
	if h.Total() == 0 || v < h.Min {
		h.Min = v
	}
	if v > h.Max {
		h.Max = v
	}
	h.Counts[Index(v)]++
}

// Merge adds o's counts to h (per-CPU copies, or successive windows).
func (h *Hist) Merge(o *Hist) {
	if o.Total() == 0 {
		return
	}
	if h.Total() == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	if o.Max > h.Max {
		h.Max = o.Max
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	if o.Fine != nil {
		// A copy: h may share its Fine with the histogram it was copied
		// from.
		f := h.Fine.Clone()
		if f == nil {
			f = &Fine{}
		}
		f.Merge(o.Fine)
		h.Fine = f
	}
}

// Total is the number of durations recorded.
func (h *Hist) Total() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Buckets, Count and Bounds make a Hist an estimate.Bucketed.
func (h *Hist) Buckets() int       { return Buckets }
func (h *Hist) Count(i int) uint64 { return h.Counts[i] }

// Bounds returns bucket i's bounds as float64 ns (the overflow bucket's
// upper bound is +Inf).
func (h *Hist) Bounds(i int) (float64, float64) {
	lo, hi := Bounds(i)
	if i == Buckets-1 {
		return float64(lo), math.Inf(1)
	}
	return float64(lo), float64(hi)
}

// Quantile estimates the p-quantile with its interval widened to bucket
// bounds, or to the refined cells' where Fine has some
// (estimate.QuantileOfHistogram).
func (h *Hist) Quantile(p float64, o estimate.Options) (estimate.Quantile, error) {
	return estimate.QuantileOfHistogram(h, float64(h.Min), float64(h.Max), p, o)
}

// Round widens [lo, hi] to the bucket bounds that would hold lo and hi: the
// resolution a histogram keeps (for estimate.PlanQuantile).
func Round(lo, hi float64) (float64, float64) {
	a, _ := Bounds(Index(uint64(math.Max(0, lo))))
	_, b := Bounds(Index(uint64(math.Max(0, hi))))
	if b == math.MaxUint64 {
		return float64(a), math.Inf(1)
	}
	return float64(a), float64(b)
}

// Quantiles returns the quantile function of the histogram's durations
// interpolated linearly within buckets (ns), for planning from an earlier
// run (estimate.PlanQuantile); nil for an empty histogram.
func (h *Hist) Quantiles() func(u float64) float64 {
	n := h.Total()
	if n == 0 {
		return nil
	}
	return func(u float64) float64 {
		target := u * float64(n)
		var c float64
		for i, k := range h.Counts {
			if k == 0 {
				continue
			}
			if c+float64(k) >= target {
				lo, hi := h.Bounds(i)
				lo, hi = math.Max(lo, float64(h.Min)), math.Min(hi, float64(h.Max))
				return lo + (hi-lo)*(target-c)/float64(k)
			}
			c += float64(k)
		}
		return float64(h.Max)
	}
}

// Width is the width (ns) of the bucket holding a duration of x ns (+Inf
// in the overflow bucket).
func Width(x float64) float64 {
	lo, hi := Bounds(Index(uint64(math.Max(0, x))))
	if hi == math.MaxUint64 {
		return math.Inf(1)
	}
	return float64(hi - lo)
}

// MeanWidth is a bucket's width averaged over where x falls in the layout,
// x ln 2 / Sub (4.3% of x; a geometric bucket holding x is 4.2% to 4.4% of
// x wide): the resolution to plan with when only the shape of the
// durations is known, not where they fall in the layout.
func MeanWidth(x float64) float64 { return x * math.Ln2 / Sub }

// MinTail is the fewest calls beyond a quantile (n min(p, 1-p)) a
// histogram needs before its shape there is planned from.
const MinTail = 20

// PlanQuantile plans the calls the p-quantile's interval needs to reach
// relative half-width rel, with the durations' law taken from this
// histogram (Quantiles) and its bucket widths (Width):
// estimate.PlanQuantile. It is an error when fewer than MinTail calls lie
// beyond the quantile: the histogram does not yet know the shape there.
func (h *Hist) PlanQuantile(p, rel float64, o estimate.Options) (estimate.QuantilePlan, error) {
	if tail := float64(h.Total()) * math.Min(p, 1-p); tail < MinTail {
		return estimate.QuantilePlan{}, fmt.Errorf("%.0f calls beyond the %v-quantile, too few to know the durations' shape there (%d needed)", tail, p, MinTail)
	}
	return estimate.PlanQuantile(p, rel, h.Quantiles(), Width, o)
}
