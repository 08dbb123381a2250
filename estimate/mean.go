// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// MeanFromSums estimates a mean from n exact measurements given their sum
// and sum of squares (the exact-ns clock mode). The interval is
// mean ± q s/sqrt(n) with q the Student t quantile with n-1 degrees of
// freedom when n < 30 and the normal quantile otherwise (Lilja 4.4.1,
// eqs. 4.4/4.5 and 4.7/4.8). Method is "t" or "z".
func MeanFromSums(n uint64, sum, sumSq float64, o Options) (Result, error) {
	conf, _, err := o.check()
	if err != nil {
		return Result{}, err
	}
	if n < 2 {
		return Result{}, inputf("%d measurements: a mean's interval needs at least 2", n)
	}
	if !finite(sum, sumSq) {
		return Result{}, inputf("sums %v and %v are not finite numbers", sum, sumSq)
	}
	if sumSq < 0 {
		return Result{}, inputf("sum of squares %v is negative", sumSq)
	}
	nf := float64(n)
	mean := sum / nf
	ss := sumSq - sum*mean
	if ss < -1e-9*math.Max(sumSq, 1) {
		return Result{}, inputf("sum of squares %v is below sum^2/n = %v: the sums are inconsistent", sumSq, sum*mean)
	}
	v := math.Max(ss, 0) / (nf - 1)
	return meanResult(mean, v, n, conf), nil
}

// MeanOfSamples estimates the mean of raw measurements with a t interval
// below 30 measurements and a normal one from 30 on (Lilja 4.4.1).
func MeanOfSamples(xs []float64, o Options) (Result, error) {
	conf, _, err := o.check()
	if err != nil {
		return Result{}, err
	}
	mean, v, err := meanVar(xs)
	if err != nil {
		return Result{}, err
	}
	return meanResult(mean, v, uint64(len(xs)), conf), nil
}

// meanVar returns the mean and sample variance of xs (two passes).
func meanVar(xs []float64) (mean, variance float64, err error) {
	if len(xs) < 2 {
		return 0, 0, inputf("%d measurements: a mean's interval needs at least 2", len(xs))
	}
	for i, x := range xs {
		if !finite(x) {
			return 0, 0, inputf("measurement %d is %v, not a finite number", i+1, x)
		}
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1), nil
}

// meanResult builds the interval for a mean with per-measurement variance v.
func meanResult(mean, v float64, n uint64, conf float64) Result {
	q, dist := meanQuantile(conf, n)
	se := math.Sqrt(v / float64(n))
	lo, hi := mean-q*se, mean+q*se
	return Result{Mean: mean, Low: lo, High: hi, StdErr: se, Confidence: conf,
		Method: dist, Dist: dist, RelHalfWidth: relHalfWidth(mean, lo, hi),
		Candidates: []Candidate{{Method: dist, Dist: dist, Low: lo, High: hi, StdErr: se}},
		Calls:      n, Events: n}
}
