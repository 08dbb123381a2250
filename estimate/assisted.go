// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// Sums are a sample's count, sum and sum of squares.
type Sums struct{ N, Sum, SumSq float64 }

// AssistedBatch is one polling batch of calls for AssistedMean: every call
// crossed c >= 0 ticks of a coarse clock, and a random share of them, each
// drawn with probability 1/Rate independently of the calls, was also timed
// exactly (y, ns).
type AssistedBatch struct {
	// Rate is how many calls one drawn call stands for.
	Rate float64
	// Calls is the number of calls of the batch; Crossing how many of
	// them crossed a tick (c > 0).
	Calls, Crossing float64
	// Still are the drawn calls that crossed no tick: their y.
	Still Sums
	// Crossed are the drawn calls that crossed a tick: their residual
	// y - x, x the call's auxiliary (its ticks in ns, d c).
	Crossed Sums
	// Aux is the sum of x over all of the batch's crossing calls.
	Aux float64
	// Long counts the calls known only to within LongSlack in all (the
	// calls longer than a tick: d c, within d each): LongAux is their
	// total. They are in neither stratum.
	Long, LongAux, LongSlack float64
}

// AssistedMean estimates the mean of y over all calls from a random
// sample timed exactly, helped by the ticks every call crossed. Each call
// falls, by what is known of every call, in one of three parts:
//
//   - still: it crossed no tick (it is shorter than a tick); its part is
//     each batch's still calls times their drawn calls' mean;
//   - crossing: it crossed one tick; its part is the calls' auxiliary
//     total (x = d, a tick each) plus their number times the drawn ones'
//     mean residual y - x, a difference estimator (Cochran, Sampling
//     Techniques, 3rd ed., 7.9), so that one drawn call stands for the
//     others' deviation from a tick, not for their whole length;
//   - long: it crossed two or more ticks, so it is longer than a tick and
//     its ticks bound it: d c to within d (LongAux, LongSlack). No sample
//     is needed, and the bound is added to the interval on both sides.
//
// The first two are unbiased whatever the calls do with the clock, since
// the draw is independent of the calls; the third holds as long as the
// tick is a clock (its ticks d apart), not an assumption about the calls.
//
// Why: the drawn calls' plain mean misses a heavy tail the sample does not
// reach. A call held for milliseconds (interrupts, a hypervisor that took
// the CPU) is one call in a million, so a 1-in-32 sample usually holds
// none, and its variance does not know they exist; their ticks count them
// all, those longer than a tick to within a tick each. A stall shorter
// than a tick stays a tail of the still or crossing part's sample.
//
// Variance: the stratified one, sum over strata of (N_s/N)^2 s_s^2 / n_s;
// the still strata by batch (a batch with fewer than minStratum drawn
// calls takes at least the variance pooled within batches, a batch with
// none takes the pooled mean), the crossing stratum over the whole run
// with each batch's drawn calls weighted by its rate (the linearized
// variance of a ratio). Student t with Welch-Satterthwaite's degrees of
// freedom, since the crossing stratum may rest on a few drawn calls.
//
// With fewer than 2 drawn crossing calls the crossing calls join the
// still ones (their drawn calls then stand for them as for any other). It
// needs at least 2 drawn calls in the still part.
func AssistedMean(batches []AssistedBatch, o Options) (Result, error) {
	conf, _, err := o.check()
	if err != nil {
		return Result{}, err
	}
	var a stillPart
	var x crossPart
	var long, longAux, slack float64
	for _, b := range batches {
		if !finite(b.Rate, b.Calls, b.Crossing, b.Aux, b.Still.N, b.Still.Sum, b.Still.SumSq, b.Crossed.N, b.Crossed.Sum,
			b.Crossed.SumSq, b.Long, b.LongAux, b.LongSlack) || b.Rate < 1 || b.Crossing < 0 || b.Long < 0 ||
			b.Crossing+b.Long > b.Calls || b.Still.N < 0 || b.Crossed.N < 0 || b.Still.SumSq < 0 || b.Crossed.SumSq < 0 || b.LongSlack < 0 {
			return Result{}, inputf("assisted batch %+v: want rate >= 1, 0 <= crossing + long <= calls and non-negative counts", b)
		}
		a.add(b)
		x.add(b)
		long += b.Long
		longAux += b.LongAux
		slack += b.LongSlack
	}
	n := a.calls + x.calls + long
	if n == 0 {
		return Result{}, inputf("no calls")
	}
	if x.calls > 0 && x.drawn < 2 {
		// Too few drawn crossing calls for their stratum: they join
		// the still ones (the plain sample for both).
		batches = foldCrossing(batches)
		a, x = stillPart{}, crossPart{}
		for _, b := range batches {
			a.add(b)
		}
	}
	if a.calls > 0 && a.drawn < 2 {
		return Result{}, inputf("%v drawn calls crossed no tick: the stratum's spread needs at least 2", a.drawn)
	}
	at, av, adf := a.estimate(batches, n)
	xt, xv, xdf := x.estimate(batches, n)
	mean := (at + xt + longAux) / n
	v := av + xv
	df := math.Inf(1)
	if d := av*av/adf + xv*xv/xdf; d > 0 {
		df = v * v / d
	}
	se := math.Sqrt(v)
	q, method := tQuantile(conf, df), "t"
	if df >= 1e7 {
		method = "z"
	}
	drawn := a.drawn + x.drawn
	out := Result{Mean: mean, Low: math.Max(0, mean-q*se-slack/n), High: mean + q*se + slack/n, StdErr: se, Confidence: conf,
		Method: method, Dist: method, Calls: uint64(drawn), Events: uint64(drawn), Batches: len(batches)}
	out.RelHalfWidth = relHalfWidth(out.Mean, out.Low, out.High)
	out.Candidates = []Candidate{{Method: out.Method, Dist: out.Dist, Low: out.Low, High: out.High, StdErr: se}}
	return out, nil
}

// stillPart sums the calls that crossed no tick.
type stillPart struct {
	calls, drawn        float64 // all, drawn
	wsum, wn            float64 // rate-weighted drawn sum and count
	pss, pdf, all2      float64 // within-batch squares and their df; all squares
	emptyCalls, nonzero float64 // calls of batches with no drawn call; batches with one
}

func (a *stillPart) add(b AssistedBatch) {
	na := b.Calls - b.Crossing - b.Long
	a.calls += na
	a.drawn += b.Still.N
	a.wsum += b.Rate * b.Still.Sum
	a.wn += b.Rate * b.Still.N
	a.all2 += b.Still.SumSq
	if b.Still.N >= 2 {
		m := b.Still.Sum / b.Still.N
		a.pss += math.Max(0, b.Still.SumSq-b.Still.N*m*m)
		a.pdf += b.Still.N - 1
	}
	if b.Still.N == 0 {
		a.emptyCalls += na
	}
}

// estimate returns the stratum's total, its variance as a part of the
// mean of n calls, and its degrees of freedom.
func (a *stillPart) estimate(batches []AssistedBatch, n float64) (total, v, df float64) {
	if a.calls == 0 {
		return 0, 0, 1
	}
	mean := a.wsum / a.wn
	pooled := math.Max(0, a.all2-a.drawn*mean*mean) / (a.drawn - 1)
	if a.pdf > 0 {
		pooled = a.pss / a.pdf
	}
	for _, b := range batches {
		na := b.Calls - b.Crossing - b.Long
		if b.Still.N == 0 || na == 0 {
			continue
		}
		m := b.Still.Sum / b.Still.N
		s2 := pooled
		if b.Still.N >= 2 {
			s2 = math.Max(0, b.Still.SumSq-b.Still.N*m*m) / (b.Still.N - 1)
			if b.Still.N < minStratum {
				s2 = math.Max(s2, pooled)
			}
		}
		total += na * m
		share := na / n
		v += share * share * s2 / b.Still.N
	}
	// Batches with no drawn call (a few calls at a run's end) take the
	// mean and spread of all the drawn calls.
	total += a.emptyCalls * mean
	share := a.emptyCalls / n
	v += share * share * pooled / a.drawn
	return total, v, math.Max(1, a.drawn-1)
}

// crossPart sums the calls that crossed a tick.
type crossPart struct {
	calls, drawn, aux float64 // all, drawn, auxiliary total
	wsum, wn          float64 // rate-weighted residual sum and count
}

func (x *crossPart) add(b AssistedBatch) {
	x.calls += b.Crossing
	x.drawn += b.Crossed.N
	x.aux += b.Aux
	x.wsum += b.Rate * b.Crossed.Sum
	x.wn += b.Rate * b.Crossed.N
}

// estimate returns the stratum's total, its variance as a part of the
// mean of n calls, and its degrees of freedom.
func (x *crossPart) estimate(batches []AssistedBatch, n float64) (total, v, df float64) {
	if x.calls == 0 {
		return 0, 0, 1
	}
	r := x.wsum / x.wn
	var ss float64
	for _, b := range batches {
		c := b.Crossed
		if c.N == 0 {
			continue
		}
		ss += b.Rate * b.Rate * math.Max(0, c.SumSq-2*r*c.Sum+c.N*r*r)
	}
	// The ratio's linearized variance, scaled by n/(n-1) like a sample
	// variance: with equal rates it is s^2/n.
	vr := ss / (x.wn * x.wn) * x.drawn / (x.drawn - 1)
	share := x.calls / n
	return x.aux + x.calls*r, share * share * vr, x.drawn - 1
}

// foldCrossing returns batches with the crossing calls moved into the
// still part: the crossed draws' residuals y - d turned back into y (Aux
// is d per crossing call).
func foldCrossing(batches []AssistedBatch) []AssistedBatch {
	out := make([]AssistedBatch, len(batches))
	for i, b := range batches {
		d := 0.0
		if b.Crossing > 0 {
			d = b.Aux / b.Crossing
		}
		c := b.Crossed
		b.Still = Sums{N: b.Still.N + c.N, Sum: b.Still.Sum + c.Sum + c.N*d,
			SumSq: b.Still.SumSq + c.SumSq + 2*d*c.Sum + c.N*d*d}
		b.Crossing, b.Aux, b.Crossed = 0, 0, Sums{}
		out[i] = b
	}
	return out
}
