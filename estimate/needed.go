// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Needed is a forecast of the further calls an estimate needs before
// Reached holds, with a range.
type Needed struct {
	// Calls is the forecast; Low and High bound it at Level. All are 0
	// when the precision is reached.
	Calls, Low, High float64
	// Level is the range's coverage, such as 0.8.
	Level float64
}

// NeededCalls forecasts the further calls r needs before Reached(r', rel)
// holds for the estimate r' at a later poll, with a range at level.
//
// The half-width at stopping is q s / sqrt(N) for the per-call spread s
// (s^2 = n StdErr^2 from r's n calls) and N calls in all, so
// N = s^2 (q / (rel mean))^2. Two things make the naive forecast
// n (RelHalfWidth/rel)^2 swing from poll to poll, and both are taken out:
// the quantile of an interval from few batches (t with b-1 degrees of
// freedom, 4.3 at 3 batches) does not apply at stopping, which needs
// MinStopBatches batches, so q is t with MinStopBatches-1 degrees of
// freedom (or z without batches); and the spread itself is estimated from
// few batches early on: s^2 is chi-square distributed with b-1 degrees of
// freedom for the batch-means interval (the events' count otherwise), and
// the range carries that uncertainty:
// N in [s^2 df/chi2_{df,(1+level)/2}, s^2 df/chi2_{df,(1-level)/2}] (q/(rel mean))^2.
// The mean's own uncertainty is left out (it is small once the range is
// worth showing). At least MinStopEvents events are needed, and
// MinStopBatches batches when r has batches (at r's calls per batch).
//
// ok is false when r has no spread or no positive mean to forecast from.
func NeededCalls(r Result, rel, level float64) (Needed, bool) {
	nd := Needed{Level: level}
	if Reached(r, rel) {
		return nd, true
	}
	if !(r.Mean > 0) || !(r.StdErr > 0) || r.Calls == 0 || r.Events == 0 || !(rel > 0) || !(level > 0 && level < 1) {
		return nd, false
	}
	n := float64(r.Calls)
	conf := r.Confidence
	if !(conf > 0 && conf < 1) {
		conf = DefaultConfidence
	}
	q := zQuantile(conf)
	if r.Batches > 0 {
		q = tQuantile(conf, MinStopBatches-1)
	}
	// The spread is the largest of the candidates': at stopping, with
	// enough batches for their quantiles to agree, the widest interval is
	// the one with the largest standard error (the reported one now may be
	// another, widened by a small-sample t).
	se, df := r.StdErr, float64(r.Events)
	for _, c := range r.Candidates {
		if c.StdErr > se || (c.StdErr == se && c.Method == "batch-means") {
			se = c.StdErr
			df = float64(r.Events)
			if c.Method == "batch-means" && r.Batches >= 2 {
				df = float64(r.Batches - 1)
			}
		}
	}
	s2 := n * se * se
	need := s2 * (q / (rel * r.Mean)) * (q / (rel * r.Mean))
	chi := distuv.ChiSquared{K: df}
	lo := need * df / chi.Quantile((1+level)/2)
	hi := need * df / chi.Quantile((1-level)/2)
	minEv := n * MinStopEvents / float64(r.Events)
	if r.Batches > 0 && r.Batches < MinStopBatches {
		// Reached also needs MinStopBatches batches (of n/b calls each).
		minEv = math.Max(minEv, n*MinStopBatches/float64(r.Batches))
	}
	clamp := func(v float64) float64 {
		v = math.Max(v, minEv) - n
		if !(v >= 1) {
			return 1 // not reached yet: at least one more call
		}
		return v
	}
	nd.Calls, nd.Low, nd.High = clamp(need), clamp(lo), clamp(hi)
	return nd, true
}

// CallRate estimates calls per second from the calls of consecutive
// polling periods of period seconds each (empty periods included), with a
// Student t interval at level over the periods. The periods' counts are
// treated as independent; a bursty workload makes the interval optimistic,
// not the rate biased. The low end is at least a tenth of the rate, so that
// a forecast divided by it stays finite.
func CallRate(perPeriod []uint64, period, level float64) (rate, low, high float64) {
	b := len(perPeriod)
	if b == 0 || !(period > 0) {
		return 0, 0, 0
	}
	var sum, sq float64
	for _, c := range perPeriod {
		f := float64(c)
		sum += f
		sq += f * f
	}
	m := sum / float64(b)
	rate = m / period
	if b < 2 {
		return rate, rate / 10, rate * 10
	}
	v := math.Max(0, (sq-sum*m)/float64(b-1))
	h := tQuantile(level, float64(b-1)) * math.Sqrt(v/float64(b)) / period
	return rate, math.Max(rate-h, rate/10), rate + h
}
