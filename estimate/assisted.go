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
	// Calls is the number of calls of the batch, long ones included.
	Calls float64
	// Drawn are the drawn calls that are not long: their y.
	Drawn Sums
	// Long counts the calls whose y is known from their ticks alone, to
	// within LongSlack in all (calls longer than a tick: d c, within d
	// each); LongAux is their total. Drawn long calls are not in Drawn.
	Long, LongAux, LongSlack float64
}

// AssistedMean estimates the mean of y over all calls from a random
// sample timed exactly, helped by the ticks every call crossed. The calls
// known from their ticks to be longer than a tick (two or more crossed,
// with no wait for a CPU that would explain them) count at their ticks,
// d c, each to within d: a bound added to the interval on both sides, so
// no sample is needed for them. The other calls are sampled: each batch's
// calls times its drawn calls' mean, a stratified estimate (the batches
// are strata) whose variance is sum_b (N_b/N)^2 s_b^2 / n_b, with N_b the
// batch's calls (known, not estimated from the rate) and s_b^2 the spread
// within it; a batch with fewer than minStratum drawn calls takes at
// least the spread pooled within batches, and one with none the pooled
// mean. Normal interval (Student t on the drawn calls - 1 degrees of
// freedom below 30 of them).
//
// The sampled part is unbiased whatever the calls do with the clock, since
// the draw is independent of the calls; the bound holds as long as the
// tick is a clock (its ticks d apart), not an assumption about the calls.
//
// Why: the drawn calls' plain mean misses a heavy tail the sample does not
// reach. A call held for milliseconds (interrupts, a hypervisor that took
// the CPU) is one call in a million, so a 1-in-32 sample usually holds
// none, and its variance does not know they exist; a call held longer
// than a tick crosses two or more for sure, and its ticks count it. A
// stall shorter than a tick stays a tail of the sample.
func AssistedMean(batches []AssistedBatch, o Options) (Result, error) {
	conf, _, err := o.check()
	if err != nil {
		return Result{}, err
	}
	var p sampledPart
	var long, longAux, slack float64
	for _, b := range batches {
		if !finite(b.Rate, b.Calls, b.Drawn.N, b.Drawn.Sum, b.Drawn.SumSq, b.Long, b.LongAux, b.LongSlack) ||
			b.Rate < 1 || b.Long < 0 || b.Long > b.Calls || b.Drawn.N < 0 || b.Drawn.SumSq < 0 || b.LongSlack < 0 {
			return Result{}, inputf("assisted batch %+v: want rate >= 1, 0 <= long <= calls and non-negative counts", b)
		}
		p.add(b)
		long += b.Long
		longAux += b.LongAux
		slack += b.LongSlack
	}
	n := p.calls + long
	if n == 0 {
		return Result{}, inputf("no calls")
	}
	if p.calls > 0 && p.drawn < 2 {
		return Result{}, inputf("%v drawn calls: a mean's interval needs at least 2", p.drawn)
	}
	total, v := p.estimate(batches, n)
	mean := (total + longAux) / n
	se := math.Sqrt(v)
	q, method := zQuantile(conf), "z"
	if p.drawn < 30 {
		q, method = tQuantile(conf, math.Max(1, p.drawn-1)), "t"
	}
	out := Result{Mean: mean, Low: math.Max(0, mean-q*se-slack/n), High: mean + q*se + slack/n, StdErr: se,
		Confidence: conf, Method: method, Dist: method, Calls: uint64(p.drawn), Events: uint64(p.drawn), Batches: len(batches)}
	out.RelHalfWidth = relHalfWidth(out.Mean, out.Low, out.High)
	out.Candidates = []Candidate{{Method: out.Method, Dist: out.Dist, Low: out.Low, High: out.High, StdErr: se}}
	return out, nil
}

// sampledPart sums the calls that are not long.
type sampledPart struct {
	calls, drawn   float64 // all, drawn
	wsum, wn       float64 // rate-weighted drawn sum and count
	pss, pdf, all2 float64 // within-batch squares and their df; all squares
	emptyCalls     float64 // calls of batches with no drawn call
}

func (p *sampledPart) add(b AssistedBatch) {
	nb := b.Calls - b.Long
	p.calls += nb
	p.drawn += b.Drawn.N
	p.wsum += b.Rate * b.Drawn.Sum
	p.wn += b.Rate * b.Drawn.N
	p.all2 += b.Drawn.SumSq
	if b.Drawn.N >= 2 {
		m := b.Drawn.Sum / b.Drawn.N
		p.pss += math.Max(0, b.Drawn.SumSq-b.Drawn.N*m*m)
		p.pdf += b.Drawn.N - 1
	}
	if b.Drawn.N == 0 {
		p.emptyCalls += nb
	}
}

// estimate returns the part's total and its variance as a part of the
// mean of n calls.
func (p *sampledPart) estimate(batches []AssistedBatch, n float64) (total, v float64) {
	if p.calls == 0 {
		return 0, 0
	}
	mean := p.wsum / p.wn
	pooled := math.Max(0, p.all2-p.drawn*mean*mean) / (p.drawn - 1)
	if p.pdf > 0 {
		pooled = p.pss / p.pdf
	}
	for _, b := range batches {
		nb := b.Calls - b.Long
		if b.Drawn.N == 0 || nb == 0 {
			continue
		}
		m := b.Drawn.Sum / b.Drawn.N
		s2 := pooled
		if b.Drawn.N >= 2 {
			s2 = math.Max(0, b.Drawn.SumSq-b.Drawn.N*m*m) / (b.Drawn.N - 1)
			if b.Drawn.N < minStratum {
				s2 = math.Max(s2, pooled)
			}
		}
		total += nb * m
		share := nb / n
		v += share * share * s2 / b.Drawn.N
	}
	// Batches with no drawn call (a few calls at a run's end) take the
	// mean and spread of all the drawn calls.
	total += p.emptyCalls * mean
	share := p.emptyCalls / n
	v += share * share * pooled / p.drawn
	return total, v
}
