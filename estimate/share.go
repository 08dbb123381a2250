// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// Proportion is a share of samples with its confidence interval.
type Proportion struct {
	// Hits and Samples are the counts: hits out of samples.
	Hits, Samples uint64
	// Share is Hits/Samples; Low and High bound its interval.
	Share, Low, High float64
	// Confidence is the interval's level.
	Confidence float64
	// Method is the construction used: "wald", "wilson" or "exact".
	Method string
}

// Share estimates the proportion hits/samples with a confidence interval
// (Lilja 4.4.3 eqs. 4.23/4.24 with Wald; Wilson or exact per Options). With
// PC sampling (Lilja 6.3.1) it is the fraction of time spent in a function.
func Share(hits, samples uint64, o Options) (Proportion, error) {
	conf, iv, err := o.check()
	if err != nil {
		return Proportion{}, err
	}
	if samples == 0 {
		return Proportion{}, inputf("no samples: a share needs at least one")
	}
	if hits > samples {
		return Proportion{}, inputf("%d hits out of %d samples: hits cannot exceed samples", hits, samples)
	}
	lo, hi, used := propInterval(hits, samples, conf, iv)
	return Proportion{Hits: hits, Samples: samples, Share: float64(hits) / float64(samples),
		Low: lo, High: hi, Confidence: conf, Method: string(used)}, nil
}

// Scale turns the share into a time: share × total, where total is the
// sampled time (for PC sampling, samples × period; Lilja 6.3.1).
func (p Proportion) Scale(total float64) (mean, low, high float64) {
	return p.Share * total, p.Low * total, p.High * total
}

// TimePerCall estimates the time per call of a function from hits PC
// samples taken every period ns and an exact call count: H_X period / n_X
// (Lilja 6.3.1 with a call counter). The hit count is taken as Poisson, which
// bounds the binomial variance from above; its interval (exact Garwood,
// score, or Wald, following Options.Interval) is scaled by period / calls.
// Method is "poisson-" and the construction.
func TimePerCall(hits uint64, period float64, calls uint64, o Options) (Result, error) {
	conf, iv, err := o.check()
	if err != nil {
		return Result{}, err
	}
	if !(period > 0) || !finite(period) {
		return Result{}, inputf("sampling period %v ns is not a positive duration", period)
	}
	if calls == 0 {
		return Result{}, inputf("no calls counted: time per call needs at least one call")
	}
	lo, hi, used := poissonInterval(hits, conf, iv)
	k := period / float64(calls)
	mean := float64(hits) * k
	r := Result{Mean: mean, Low: lo * k, High: hi * k, StdErr: math.Sqrt(float64(hits)) * k,
		Confidence: conf, Method: "poisson-" + string(used), Dist: string(used),
		Calls: calls, Events: hits}
	r.RelHalfWidth = relHalfWidth(r.Mean, r.Low, r.High)
	r.Candidates = []Candidate{{Method: r.Method, Dist: r.Dist, Low: r.Low, High: r.High, StdErr: r.StdErr}}
	return r, nil
}
