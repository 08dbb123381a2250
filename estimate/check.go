// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// ClockCheck compares a tick-clock estimate with the exact mean of the same
// calls.
type ClockCheck struct {
	// Calls is the number of checked calls.
	Calls uint64
	// Tick is the tick-clock estimate of their mean, at the check's
	// confidence.
	Tick Result
	// Exact is their exact mean (ns).
	Exact float64
	// Agree says Tick's interval holds Exact.
	Agree bool
	// ExactMean is the checked calls' exact mean as an estimate of the
	// mean of all the calls, with its interval: they are a random sample
	// of them (nil when too few were checked, or from an older file).
	ExactMean *Result
}

// Decide returns the estimate to report for a target whose tick-clock
// estimate over all calls is r and whose random share of calls this check
// timed exactly, and why. The checked calls' exact mean is an unbiased
// estimate of every call's mean whatever the program does with the clock
// (the draw is independent of the calls), where r rests on the clock's
// asynchrony; so:
//
//   - when the exact sample is at least as sharp as r (its standard error
//     no larger), it is reported: for short calls it is far sharper than
//     the tick estimate, and it cannot be biased by the clock;
//   - otherwise r is reported widened to hold the exact sample's interval
//     too: their hull covers whenever the exact sample's interval does.
//
// So the reported interval never rests on the asynchrony alone. Without an
// exact mean (too few checked calls) r is returned as it is, with "".
//
// A sample alone needs MinExactAlone calls: durations are heavy-tailed
// (a preempted call lasts milliseconds), and a few dozen calls that
// happen to hold no long one show a small spread and an interval that
// misses (1 run in 6 at 99.9% with about 50 checked calls of 500 us on a
// loaded machine); below it the hull is reported.
func (c ClockCheck) Decide(r Result) (Result, string) {
	x := c.ExactMean
	if x == nil || x.Calls < 30 {
		return r, ""
	}
	if x.Calls >= MinExactAlone && halfWidthSE(*x) <= halfWidthSE(r) {
		out := *x
		out.Method = "exact-sample"
		return out, "the exact mean of a random sample of the calls, sharper than the tick clock's estimate"
	}
	out := r
	out.Low, out.High = math.Min(r.Low, x.Low), math.Max(r.High, x.High)
	out.RelHalfWidth = relHalfWidth(out.Mean, out.Low, out.High)
	out.Method = r.Method + "+exact-sample"
	why := "widened to hold the exact mean of a random sample of the calls"
	if !(x.Mean >= r.Low && x.Mean <= r.High) {
		why = "widened: the exact mean of a random sample of the calls lies outside the tick clock's interval, which the clock's coupling to the program can bias"
	}
	return out, why
}

// MinExactAlone is the fewest checked calls whose exact mean Decide
// reports alone.
const MinExactAlone = 1000

// Resolves reports whether the check is about as sharp as r, the
// estimate on all calls: its standard error at most 1.5 times r's, so
// that a bias that moves r's interval off the truth moves the check's
// too. A check on a random 1 in k of the calls has about sqrt(k) times the
// standard error of the estimate where both rest on tick quantization, so
// it resolves r only when nearly every call is checked (the loader checks
// every long call) or the bias is far larger than r's interval.
//
// The standard errors are read off the intervals (half-width over the
// normal quantile of their confidence), since an interval on zero
// crossings has a zero two-point standard error but a real width.
func (c ClockCheck) Resolves(r Result) bool {
	return halfWidthSE(c.Tick) <= 1.5*halfWidthSE(r)
}

// halfWidthSE is r's half-width over the normal quantile of its confidence.
func halfWidthSE(r Result) float64 {
	conf := r.Confidence
	if !(conf > 0 && conf < 1) {
		conf = DefaultConfidence
	}
	return r.HalfWidth() / zQuantile(conf)
}

// Ratio returns the tick estimate over the exact mean (0 when the exact
// mean is 0).
func (c ClockCheck) Ratio() float64 {
	if c.Exact == 0 {
		return 0
	}
	return c.Tick.Mean / c.Exact
}

// CheckClock checks the tick clock's one assumption, asynchrony with the
// program (Beilner section 2, eq. 4a/4b: the phase of a call's entry
// within a tick is uniform), on a random sample of calls timed with both
// the tick clock (tick: their counts, with batches when known) and an
// exact clock (exactTotal: their total in ns).
//
// Given the sampled calls' durations D_i, asynchrony makes
// E[c_i | D_i] = D_i/d, so d sum c_i / m estimates their exact mean, which
// is known: the check is whether the estimator's interval (Time, at o's
// confidence, the run's own) holds it. That interval is built for the mean of the
// durations' law, so its variance includes the D_i's own spread, which the
// exact mean of the same calls does not have: the check is conservative,
// and an asynchronous clock fails it in at most about 1 - confidence of
// runs (tested by TestCheckClockFalseAlarms). At the run's own confidence,
// a check of every call (long calls) fails exactly when the run's interval
// on those calls misses their exact mean: the run covers or warns. A clock coupled to the
// program (threads woken by the tick, loops sleeping to tick boundaries)
// biases every c_i alike and fails it once the bias exceeds the
// interval's half-width: about d sqrt(ET/d / m) for short calls, so the
// check resolves a bias of the order of the jiffy over the square root of
// the checked crossings.
//
// The sample must be drawn independently of the calls (bpf/timing.h draws
// it at random at each entry).
func CheckClock(tick Counts, exactTotal float64, o Options) (ClockCheck, error) {
	r, err := Time(tick, o)
	if err != nil {
		return ClockCheck{}, err
	}
	if !(exactTotal >= 0) || !finite(exactTotal) {
		return ClockCheck{}, inputf("exact total %v ns of the checked calls is not a duration", exactTotal)
	}
	c := ClockCheck{Calls: r.Calls, Tick: r, Exact: exactTotal / float64(r.Calls)}
	c.Agree = r.Low <= c.Exact && c.Exact <= r.High
	return c, nil
}

// SampledBatch is one polling batch of calls drawn at random, each call
// with probability 1/Rate: the drawn calls' count, and the sum and sum of
// squares of their exact durations (ns).
type SampledBatch struct {
	Rate, Calls, Sum, SumSq float64
}

// minStratum is the fewest drawn calls whose own spread SampledMean trusts
// for their batch.
const minStratum = 10

// SampledMean estimates the mean duration of all calls from random samples
// drawn at rates that may change from batch to batch: each drawn call
// stands for Rate calls (Horvitz and Thompson's weighting), so the mean is
// sum_b Rate_b Sum_b / sum_b Rate_b Calls_b. The batches are strata: its
// variance is sum_b (Rate_b Calls_b / W)^2 s_b^2 / Calls_b, with s_b^2 the
// spread within batch b and W the calls the sample stands for, so that
// durations that drift from batch to batch, which are part of the calls'
// mean, do not count as sampling error. Normal interval (Student t on the
// drawn calls - 1 degrees of freedom below 30 of them).
func SampledMean(batches []SampledBatch, o Options) (Result, error) {
	conf, _, err := o.check()
	if err != nil {
		return Result{}, err
	}
	var n, w, t, v float64
	k := 0
	for _, b := range batches {
		if !finite(b.Rate, b.Calls, b.Sum, b.SumSq) || b.Rate < 1 || b.Calls < 0 || b.Sum < 0 || b.SumSq < 0 {
			return Result{}, inputf("sampled batch %+v: want rate >= 1 and non-negative sums", b)
		}
		if b.Calls == 0 {
			continue
		}
		k++
		n += b.Calls
		w += b.Rate * b.Calls
		t += b.Rate * b.Sum
	}
	if n < 2 {
		return Result{}, inputf("%v sampled calls: a mean's interval needs at least 2", n)
	}
	mean := t / w
	// A batch's own spread is known well only from enough drawn calls: a
	// batch of 1 has none and one of 2 or 3 can show almost none by chance
	// (a batch drawn at 1 in 64 before the rate rose stands for 64 times
	// its calls). Below minStratum drawn calls a batch takes the larger of
	// its own spread and the spread pooled within the batches (collapsed
	// strata), or of all drawn calls when no batch has 2.
	var pss, pdf, all2 float64
	for _, b := range batches {
		all2 += b.SumSq
		if b.Calls >= 2 {
			m := b.Sum / b.Calls
			pss += math.Max(0, b.SumSq-b.Calls*m*m)
			pdf += b.Calls - 1
		}
	}
	pooled := math.Max(0, all2-n*(t/w)*(t/w)) / (n - 1)
	if pdf > 0 {
		pooled = pss / pdf
	}
	for _, b := range batches {
		if b.Calls == 0 {
			continue
		}
		s2 := pooled
		if b.Calls >= 2 {
			m := b.Sum / b.Calls
			s2 = math.Max(0, b.SumSq-b.Calls*m*m) / (b.Calls - 1)
			if b.Calls < minStratum {
				s2 = math.Max(s2, pooled)
			}
		}
		share := b.Rate * b.Calls / w
		v += share * share * s2 / b.Calls
	}
	se := math.Sqrt(v)
	q, method := zQuantile(conf), "z"
	if n < 30 {
		q, method = tQuantile(conf, n-1), "t"
	}
	out := Result{Mean: mean, Low: math.Max(0, mean-q*se), High: mean + q*se, StdErr: se, Confidence: conf,
		Method: method, Dist: method, Calls: uint64(n), Events: uint64(n), Batches: k}
	out.RelHalfWidth = relHalfWidth(out.Mean, out.Low, out.High)
	out.Candidates = []Candidate{{Method: out.Method, Dist: out.Dist, Low: out.Low, High: out.High, StdErr: se}}
	return out, nil
}
