// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// Correcting quantiles for the probe overhead.
//
// If every call's measured duration is its own duration plus the same
// overhead c (additive per call: X = Y + c), the measured durations'
// p-quantile is ξ_p(Y) + c, so ξ_p(Y) = ξ_p(X) - c. With ξ_p(X) in [L, H]
// and c in the calibrated overhead interval [o_L, o_H],
//
//	ξ_p(Y) in [L - o_H, H - o_L]
//
// whenever both intervals hold: by Bonferroni's inequality the corrected
// interval covers with probability at least 1 - α - α_o (at least 90% for
// two 95% intervals, in the worst case that their misses never coincide);
// in practice the calibration's interval is tens of ns wide against
// quantile intervals of µs, and the coverage is the quantile interval's
// own (quantile_overhead_test.go measures it). Durations are not negative,
// so both ends are truncated at 0, as the corrected means are.
//
// When the overhead varies from call to call within [c - j, c + j], X lies
// between Y + c - j and Y + c + j call by call, so ξ_p(X) - c is within j
// of ξ_p(Y): the shift is exact up to the overhead's own spread, which the
// calibration reports.

// CorrectQuantile returns q with the per-call probe overhead o (its mean
// and interval, ns) subtracted as an interval shift: Low - o.High,
// High - o.Low and Value - o.Mean, truncated at 0 and Value kept inside
// the interval. The bounds of the point's bucket move like the interval's
// ends, so QuantileDiff of two corrected quantiles stays conservative.
func CorrectQuantile(q Quantile, o Result) (Quantile, error) {
	if !(o.Low <= o.Mean && o.Mean <= o.High) || !finite(o.Low) || !finite(o.High) {
		return q, inputf("overhead %v [%v, %v] is not an interval around its mean", o.Mean, o.Low, o.High)
	}
	sub := func(x, c float64) float64 { return math.Max(0, x-c) }
	c := q
	c.Corrected, c.OverheadLow, c.OverheadHigh = true, o.Low, o.High
	c.Low = sub(q.Low, o.High)
	if !q.TooFew {
		c.High = sub(q.High, o.Low)
	}
	if q.ValueLow != 0 || q.ValueHigh != 0 {
		c.ValueLow, c.ValueHigh = sub(q.ValueLow, o.High), sub(q.ValueHigh, o.Low)
	}
	c.Value = sub(q.Value, o.Mean)
	if !q.TooFew {
		c.Value = math.Min(math.Max(c.Value, c.Low), c.High)
	}
	return c, nil
}

// Correcting quantiles by the overhead's distribution (docs/overhead.md).
//
// The overhead O is not the same for every call (a call after a sleep
// carries several times a warm one's), so a shift by one value moves the
// tails too little. With the measured duration D = B + O (B the call's own
// duration), for any o:
//
//	P(B <= x) >= P(D <= x + o) - P(O < o)   ({D <= x+o} ⊆ {B <= x} ∪ {O < o})
//	P(B <= x) <= P(D <= x + o) + P(O > o)   ({B <= x} ⊆ {D <= x+o} ∪ {O > o})
//
// so, whatever the dependence between B and O (Fréchet's bounds),
//
//	max_o [ξ_D(p - P(O > o)) - o] <= ξ_B(p) <= min_o [ξ_D(p + P(O < o)) - o].
//
// The interval's ends take the measured quantiles' own interval ends at
// those levels, and O's distribution function within a
// Dvoretzky-Kiefer-Wolfowitz band of its sample of echoed calls, with the
// model's error (its spread at the confidence level) moving O's values
// outward: the corrected interval covers when D's intervals and O's band
// hold (Bonferroni: at least 1 - 3α in the worst case).

// OverheadDist is the distribution of the per-call overhead: its values'
// histogram (ns), the number of calls behind it and the model's error
// (ns, at the confidence level) that widens each value. BatchMedians,
// when given, are the medians of Hist's calls split by when they were
// measured (one per polling batch, BucketMedian of its histogram). The
// overhead drifts while a program runs (which CPU, who shares it: under
// contention the bulk of the overheads moved by several hundred ns between
// batches 200 ms apart), and the echoed calls come from a few windows:
// they are a cluster sample of the run's calls, whose distribution can sit
// apart from the timed calls' by such a drift. The batches' spread
// measures it (batchShift), and it widens each value as the model's error
// does.
type OverheadDist struct {
	Hist         Bucketed
	N            uint64
	Error        float64
	BatchMedians []float64
}

// CorrectQuantileByDist returns the p-quantile of the calls' own durations
// from the measured durations' quantile function dq (its value at any level
// with its interval) and the overhead's distribution od, at confidence conf.
// mean is the overhead's mean: the point estimate is dq(p)'s minus it, kept
// inside the interval.
func CorrectQuantileByDist(p float64, dq func(p float64) (Quantile, error), od OverheadDist, mean, conf float64) (Quantile, error) {
	return CorrectQuantileBounded(p, dq, nil, od, mean, conf)
}

// CorrectQuantileBounded is CorrectQuantileByDist with bound, when not nil,
// bounding dq's interval ends (QuantileBound): an overhead level whose
// bound cannot move the interval's ends is not asked of dq, whose exact
// rank tables are most of the correction's time. The result is the same.
func CorrectQuantileBounded(p float64, dq func(p float64) (Quantile, error), bound *QuantileBound, od OverheadDist, mean, conf float64) (Quantile, error) {
	q, err := dq(p)
	if err != nil {
		return q, err
	}
	if od.N == 0 || od.Hist == nil {
		return q, inputf("no overhead distribution")
	}
	steps := overheadSteps(od)
	od.Error = math.Hypot(od.Error, batchShift(od.BatchMedians, conf))
	band := math.Sqrt(math.Log(2/(1-conf)) / (2 * float64(od.N)))
	lo, hi := 0.0, math.Inf(1)
	for _, st := range steps {
		// Lower end: o at the bucket's top plus the model error; P(O > o)
		// at most the share above, plus the band.
		if l := p - math.Min(1, st.above+band); l > 0 && !(bound != nil && bound.LowMax(l)-(st.hi+od.Error) <= lo) {
			if d, err := dq(l); err == nil {
				lo = math.Max(lo, d.Low-(st.hi+od.Error))
			}
		}
		// Upper end: o at the bucket's bottom minus the model error;
		// P(O < o) at most the share below, plus the band.
		if u := p + math.Min(1, st.below+band); u < 1 && !(bound != nil && bound.HighMin(u)-math.Max(0, st.lo-od.Error) >= hi) {
			if d, err := dq(u); err == nil && !d.TooFew {
				hi = math.Min(hi, d.High-math.Max(0, st.lo-od.Error))
			}
		}
	}
	if q.High < hi {
		hi = q.High // the o = 0 term: B <= D
	}
	c := q
	c.Corrected = true
	c.OverheadLow, c.OverheadHigh = steps[0].lo, steps[len(steps)-1].hi
	c.Low, c.High = math.Max(0, lo), math.Max(0, hi)
	if c.High < c.Low {
		c.High = c.Low
	}
	c.Value = math.Min(math.Max(q.Value-mean, c.Low), c.High)
	c.ValueLow, c.ValueHigh = c.Value, c.Value
	return c, nil
}

// overheadStep is one non-empty bucket of the overhead's histogram: its
// bounds and the shares of calls strictly below and above it.
type overheadStep struct {
	lo, hi       float64
	below, above float64
}

// overheadSteps lists od's non-empty buckets in order.
func overheadSteps(od OverheadDist) []overheadStep {
	var total uint64
	for i := 0; i < od.Hist.Buckets(); i++ {
		total += od.Hist.Count(i)
	}
	var out []overheadStep
	var cum uint64
	for i := 0; i < od.Hist.Buckets(); i++ {
		n := od.Hist.Count(i)
		if n == 0 {
			continue
		}
		lo, hi := od.Hist.Bounds(i)
		out = append(out, overheadStep{lo: lo, hi: hi, below: float64(cum) / float64(total),
			above: float64(total-cum-n) / float64(total)})
		cum += n
	}
	return out
}

// batchShift is how far, at confidence conf, the overheads of the run's
// calls may sit from those of the echoed calls as a whole: the Student t
// interval's half-width, with k-1 degrees of freedom, of the mean of the k
// batches' medians meds (each batch one draw of the run's drifting
// conditions, the windows being at random times). 0 with fewer than two
// batches: the drift is then not measured (docs/overhead.md).
func batchShift(meds []float64, conf float64) float64 {
	k := float64(len(meds))
	if k < 2 {
		return 0
	}
	var sum, sq float64
	for _, m := range meds {
		sum += m
	}
	mean := sum / k
	for _, m := range meds {
		sq += (m - mean) * (m - mean)
	}
	return tQuantile(conf, k-1) * math.Sqrt(sq/(k-1)/k)
}

// BucketMedian is the middle of the bucket holding a histogram's median
// (false for an empty one, or a median in an unbounded bucket).
func BucketMedian(b Bucketed) (float64, bool) {
	var n, cum uint64
	for i := 0; i < b.Buckets(); i++ {
		n += b.Count(i)
	}
	if n == 0 {
		return 0, false
	}
	for i := 0; i < b.Buckets(); i++ {
		if cum += b.Count(i); 2*cum >= n {
			lo, hi := b.Bounds(i)
			return (lo + hi) / 2, !math.IsInf(hi, 1)
		}
	}
	return 0, false
}
