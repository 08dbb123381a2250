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
