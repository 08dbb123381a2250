// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
)

// Off-CPU time from sampled intervals (docs/statistics.md, "Off-CPU time").
//
// Every interval a thread spends off CPU (from leaving a CPU to running
// again) is drawn into the sample independently with probability p, known
// and fixed before the interval begins. For the N intervals of one stack,
// of durations d_1..d_N, the total is T = sum d_i, and the Horvitz-Thompson
// estimator over the sampled set S (Horvitz and Thompson 1952, eq. 2.1)
//
//	T^ = sum_{i in S} d_i / p
//
// is unbiased: E[T^] = sum d_i p / p = T. Its variance, the inclusion
// indicators being independent Bernoulli(p), is
//
//	Var T^ = sum_i d_i^2 (1-p) / p
//
// and the sampled sum
//
//	V^ = sum_{i in S} d_i^2 (1-p) / p^2
//
// estimates it without bias (E[V^] = sum d_i^2 (1-p)/p). Both are sums over
// sampled intervals, so they add across stacks, functions and time windows
// (each with its own p), which is what a merged profile keeps. The interval
// is a score interval built from T^ and V^ (htResult; TestOffCPUCoverage
// measures its coverage). With p = 1 the sum is exact and the interval has
// no width.

// HTSums are the sums a Horvitz-Thompson estimate of a total needs from the
// sampled intervals: their number, sum d/p and sum d^2 (1-p)/p^2 (ns and
// ns^2).
type HTSums struct {
	N   uint64
	Est float64
	Var float64
}

// Add adds one sampled interval of d ns, sampled with probability p.
func (s *HTSums) Add(d, p float64) {
	s.N++
	s.Est += d / p
	s.Var += d * d * (1 - p) / (p * p)
}

// Plus is the sums of both sets of intervals.
func (s HTSums) Plus(t HTSums) HTSums {
	return HTSums{N: s.N + t.N, Est: s.Est + t.Est, Var: s.Var + t.Var}
}

// HTTotal is the estimate of a total off-CPU time (ns) with its interval:
// Method "horvitz-thompson", Dist "z", Calls the sampled intervals.
func HTTotal(s HTSums, o Options) (Result, error) {
	return htResult(s.Est, s.Var, s.N, o)
}

// WallTotal is the estimate of a wall-clock total (ns): the on-CPU part,
// cpuSamples samples of a timer of the given period (ns), plus the
// off-CPU part off. The on-CPU count's variance is taken as Poisson
// (cpuSamples), so the variance is off.Var + cpuSamples period^2.
func WallTotal(cpuSamples uint64, period float64, off HTSums, o Options) (Result, error) {
	if !(period >= 0) || math.IsInf(period, 0) {
		return Result{}, inputf("sampling period %v ns is not a finite non-negative number", period)
	}
	c := float64(cpuSamples)
	return htResult(off.Est+c*period, off.Var+c*period*period, off.N+cpuSamples, o)
}

// htResult is the interval on a total est of estimated variance v.
//
// The plain normal interval est ± z sqrt(v) covered 93% at a nominal 95%
// in TestOffCPUCoverage when a few long intervals carry much of the total:
// a low estimate comes with a low variance estimate (both sum the same
// sampled intervals), so the interval misses the truth from below. The
// interval is instead the score interval of a compound-Poisson total, whose
// variance is proportional to the total, Var T^ = k T with k = v / est
// (the Wilson construction for a Poisson mean): the T with
// (est - T)^2 <= z^2 k T, that is
//
//	est + z^2 k / 2 ± z sqrt(k est + z^2 k^2 / 4).
//
// Where v = 0 (every interval sampled, p = 1) the total is exact.
func htResult(est, v float64, n uint64, o Options) (Result, error) {
	conf, err := o.confidence()
	if err != nil {
		return Result{}, err
	}
	if !finite(est, v) || est < 0 || v < 0 {
		return Result{}, inputf("off-CPU sums (estimate %v, variance %v) are not finite and non-negative", est, v)
	}
	se := math.Sqrt(v)
	z := zQuantile(conf)
	lo, hi := est, est
	if v > 0 && est > 0 {
		k := v / est
		c := est + z*z*k/2
		h := z * math.Sqrt(k*est+z*z*k*k/4)
		lo, hi = c-h, c+h
	}
	r := Result{Mean: est, Low: math.Max(0, lo), High: hi, StdErr: se,
		Confidence: conf, Method: "horvitz-thompson", Dist: "z", Calls: n, Events: n}
	r.RelHalfWidth = math.Inf(1)
	if est > 0 {
		r.RelHalfWidth = (r.High - r.Low) / 2 / est
	}
	return r, nil
}

// ChooseOffCPUProb is the sampling probability that keeps the off-CPU
// program's cost within budget (a share of one CPU, such as 0.01): with
// rate intervals begun per second and each sampled one costing cost ns
// more than one not sampled (base ns each), the cost per second is
// rate (base + p cost) ns; p is 1 when that fits at p = 1, and at least
// minProb.
func ChooseOffCPUProb(rate, base, cost, budget, minProb float64) float64 {
	if !(rate > 0) || !(cost > 0) {
		return 1
	}
	p := (budget*1e9/rate - base) / cost
	switch {
	case p >= 1:
		return 1
	case p < minProb || math.IsNaN(p):
		return minProb
	}
	return p
}
