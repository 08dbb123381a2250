// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
)

// Refined bounds: a histogram whose buckets near the quantiles were
// refined while the calls came in (BPF counting the calls of some buckets
// also in narrower bins, histogram.Refiner) knows part of the calls of
// such a bucket to lie in a cell [Lo, Hi) inside it, and the rest (calls
// counted before the bucket was refined, or outside the refined window)
// only to lie in the bucket.
//
// Every call then lies in a known interval (its cell, or its bucket), and
// the r-th order statistic X_(r) lies between the r-th smallest of the
// intervals' lower ends and the r-th smallest of their upper ends: at least
// r calls have an interval whose lower end is at most X_(r) (those of the r
// smallest calls), so the r-th smallest lower end is at most X_(r), and
// symmetrically. Both bounds fall in X_(r)'s bucket (the cells do not
// cross bucket edges), where the unrefined calls come first by lower end
// (the bucket's lower edge) and last by upper end. The interval
// [lower end of rank r, upper end of rank s] therefore covers whenever
// [X_(r), X_(s)] does: the refinement changes no rank and no coverage
// guarantee, it only narrows the rounding of each end from a bucket to a
// cell (plus the unrefined calls' share of the bucket).

// Cell is a refined count: N calls known to lie in [Lo, Hi) (ns).
type Cell struct {
	Lo, Hi float64
	N      uint64
}

// Refined is a Bucketed histogram with refined cells in some buckets.
type Refined interface {
	Bucketed
	// Cells returns bucket i's refined cells, each inside the bucket's
	// bounds, their counts summing to at most Count(i) (nil: none),
	// sorted by lower end and, the same cells, by upper end.
	Cells(i int) (byLo, byHi []Cell)
}

// refinedBounds bounds the k-th smallest call (1-based) of a bucket [lo,
// hi) holding count calls, cells of them refined: the k-th smallest lower
// end and the k-th smallest upper end of the calls' intervals. Cells that
// claim more calls than the bucket holds are ignored (the bucket's bounds
// are returned).
func refinedBounds(byLo, byHi []Cell, count, k uint64, lo, hi float64) (float64, float64) {
	var fine uint64
	for _, c := range byLo {
		fine += c.N
	}
	if fine == 0 || fine > count || k == 0 || k > count {
		return lo, hi
	}
	return math.Max(lo, kthEnd(byLo, k, count-fine, lo, true)), math.Min(hi, kthEnd(byHi, k, count-fine, hi, false))
}

// kthEnd is the k-th smallest end among cells (sorted by that end) and
// un calls at bucket end b: first (lower ends: the bucket's lower edge
// comes first) or last (upper ends).
func kthEnd(cells []Cell, k, un uint64, b float64, first bool) float64 {
	if first {
		if k <= un {
			return b
		}
		k -= un
	}
	for _, c := range cells {
		if c.N >= k {
			if first {
				return c.Lo
			}
			return c.Hi
		}
		k -= c.N
	}
	return b
}

// RefineMargin is how many binomial standard deviations of rank beyond
// the interval's own ranks a refinement region reaches (RefineRegion).
const RefineMargin = 2

// RefineRegion returns the durations [lo, hi) (ns) where the order
// statistics that bound the p-quantile's interval will lie as the calls
// grow from h's: from the bounds of rank np - (z+RefineMargin) sd to those
// of rank np + (z+RefineMargin) sd + 1 (sd = sqrt(np(1-p)), z the normal
// quantile of the confidence). The interval's ranks at n calls are about
// np -/+ z sd, and tend to np as the calls grow; the margin covers where
// the quantile of the calls to come lies against these calls' order
// statistics (their own sampling error, about sd in rank). ok is false
// for an empty histogram.
func RefineRegion(h Bucketed, p float64, o Options) (lo, hi float64, ok bool) {
	conf, err := o.confidence()
	if err != nil || checkP(p) != nil {
		return 0, 0, false
	}
	n, at := histRanks(h, 0, math.Inf(1))
	if n == 0 {
		return 0, 0, false
	}
	nf := float64(n)
	w := (zQuantile(conf) + RefineMargin) * math.Sqrt(nf*p*(1-p))
	r := uint64(math.Max(1, math.Floor(nf*p-w)))
	s := uint64(math.Min(nf, math.Ceil(nf*p+w)+1))
	lo, _ = at(r)
	_, hi = at(s)
	return lo, hi, hi > lo
}
