// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"math/big"
	"math/bits"
)

// Batch is one polling period's increments of the call and tick counters.
type Batch struct {
	Calls, Ticks uint64
}

// Counts are what a quantized clock yields for one timed interval: the
// resolution d, the number of executions n, the ticks crossed sum c_i, and
// optionally sum c_i^2 and per-period increments.
type Counts struct {
	// Resolution is the clock resolution d in nanoseconds.
	Resolution float64
	// Calls is n, the number of executions observed.
	Calls uint64
	// Ticks is sum c_i, the clock ticks that fell inside the executions.
	Ticks uint64
	// TicksSq is sum c_i^2; it is used only when HasTicksSq is set.
	// TicksSqHi holds its bits above the 64 of TicksSq (one call of more
	// than 2^32 ticks makes it pass them: 4.3 s with the ns clock).
	TicksSq, TicksSqHi uint64
	// HasTicksSq says TicksSq is known.
	HasTicksSq bool
	// Batches are optional periodic increments of Calls and Ticks, for the
	// batch-means interval (robust to correlation between successive
	// executions, Beilner eq. 11). When Calls and Ticks are both zero they
	// are taken as the batch totals; otherwise they must equal them.
	Batches []Batch
	// Contiguous says the executions ran back to back in a tight loop, so
	// that the end of one is the start of the next on one clock grid
	// (Beilner 10c/10d). Not for a dithered clock (tickprof's tick:DUR),
	// which puts every execution on a grid of its own: its executions are
	// separated whatever their layout.
	Contiguous bool
}

// Candidate is one interval computed for an estimate.
type Candidate struct {
	// Method is the model: "two-point", "observed", "batch-means",
	// "contiguous", "contiguous-bound".
	Method string
	// Dist is how the interval was built from it: "wald", "wilson",
	// "exact" (on a proportion), "z" or "t" (normal or Student t), or
	// "bound" (a sure bound, contiguous-bound).
	Dist string
	// Low and High bound the interval (ns).
	Low, High float64
	// StdErr is the model's standard error of the mean (ns).
	StdErr float64
}

// Result is an estimated mean with its confidence interval.
type Result struct {
	// Mean is the point estimate (ns).
	Mean float64
	// Low and High bound the confidence interval (ns); Low <= Mean <= High.
	Low, High float64
	// StdErr is the standard error of Mean (ns) under the reported method.
	StdErr float64
	// Confidence is the interval's confidence level, such as 0.95.
	Confidence float64
	// Method names the interval reported. For Time it is the widest
	// candidate's model ("two-point", "observed", "batch-means",
	// "contiguous", "contiguous-bound"); for means of measurements "z" or
	// "t"; for TimePerCall the Poisson interval ("poisson-exact", ...).
	Method string
	// Dist is how the reported interval was built: "wald", "wilson",
	// "exact", "z", "t" or "bound" (see Candidate).
	Dist string
	// RelHalfWidth is (High-Low)/2 / |Mean|; +Inf when Mean is 0.
	RelHalfWidth float64
	// Candidates lists every interval computed; the reported one is the
	// widest.
	Candidates []Candidate
	// Calls is the number of executions (or measurements) behind the
	// estimate.
	Calls uint64
	// Events counts the independent events the precision rests on: tick
	// crossings for Time, measurements for means, hits for TimePerCall.
	Events uint64
	// Batches is the number of non-empty batches behind the batch-means
	// interval (0 when fewer than two were given).
	Batches int
}

// HalfWidth returns (High-Low)/2.
func (r Result) HalfWidth() float64 { return (r.High - r.Low) / 2 }

// Time estimates the mean duration of an interval timed with a quantized
// clock: mean = d * sum c_i / n (Beilner eq. 6b; Chan's (k + m/n) l and
// Lilja eq. 6.1 are the cases where every c_i is k or k+1, and 0 or 1).
//
// The estimate is unbiased whatever ET/d provided the clock is asynchronous
// with the program (Beilner eq. 4b). Its interval is the widest of:
//
//   - "two-point": each execution crosses k or k+1 ticks (Chan; Beilner 8,
//     10a), so sum c - n k is binomial with p = ET/d - k; the interval on p
//     (Wilson, exact or Wald, see Interval) is scaled to d (k + p). Any
//     integer-valued count has variance at least p(1-p), so this is also the
//     smallest the variance can be; it is never zero-width and handles rare
//     and zero crossings. Alone (counts without sum c^2 or batches) it
//     assumes the durations vary by less than a tick (Beilner's (8)); give
//     sum c^2 or batches when they may vary more.
//   - "observed" (with sum c^2): the sample variance of the c_i, normal
//     interval (Student t below 30 calls, Lilja 4.4.1).
//   - "batch-means" (with two or more batches): the ratio estimator
//     sum C_j / sum n_j over batches, variance from the batch residuals,
//     Student t with b-1 degrees of freedom; robust to correlation between
//     successive executions (Beilner eq. 11).
//
// With three or more batches the "observed" and "batch-means" intervals are
// shifted toward the skewed side by the batches' sample skewness (see
// skewShift): durations have long right tails, and a symmetric interval
// misses high too often when calls are few.
//
// For Contiguous executions the per-call counts are dependent and the tick
// total is exact up to the two end phases: sum T_i = d sum C_i + E'_n - B'_1
// (Beilner 10c). The candidates are then "contiguous-bound" (±d/n: with
// constant durations the run's length is within one tick of d sum c),
// "batch-means" (with batches; its variance counts the boundary
// quantization once per batch, so it errs on the safe side), "contiguous"
// (with sum c^2 and no batches: the per-call sample variance, which adds
// both ends' quantization to VT/d^2), or the two-point model 10a, which Beilner notes is
// pessimistic for contiguous series, when neither is known. Beilner's 10c
// normal interval with d^2/(6n^2) alone would cover as little as 90% for
// constant durations at some phases, so it is not used.
//
// Low is never below zero. Errors report invalid counts.
func Time(c Counts, o Options) (Result, error) {
	conf, iv, err := o.check()
	if err != nil {
		return Result{}, err
	}
	d := c.Resolution
	if !(d > 0) || !finite(d) {
		return Result{}, inputf("resolution %v ns is not a positive duration: give the clock's tick length, such as 1ms", d)
	}
	batches, n, s, err := batchTotals(c)
	if err != nil {
		return Result{}, err
	}
	if n == 0 {
		return Result{}, noCallsError(s)
	}
	varC, err := ticksVariance(c, n, s)
	if err != nil {
		return Result{}, err
	}
	m := tickModel{d: d, n: n, s: s, nf: float64(n), mc: float64(s) / float64(n),
		varC: varC, hasSq: c.HasTicksSq, batches: batches, conf: conf, iv: iv}
	r := Result{Mean: d * m.mc, Confidence: conf, Calls: n, Events: s}
	if len(batches) >= 2 {
		r.Batches = len(batches)
	}
	if c.Contiguous {
		return widest(r, m.contiguousCandidates(r.Mean)), nil
	}
	return widest(r, m.separatedCandidates(r.Mean)), nil
}

// noCallsError says why counts without calls have no estimate.
func noCallsError(s uint64) error {
	if s > 0 {
		return inputf("%d ticks but no calls: ticks are counted inside calls, so calls must be at least 1", s)
	}
	return inputf("no calls: nothing to estimate yet; measure longer or check that the probe fires")
}

// ticksVariance is the sample variance of the c_i (ticks^2) from sum c_i^2
// when the counts have it (0 when not), after checking it against n calls
// crossing s ticks.
func ticksVariance(c Counts, n, s uint64) (float64, error) {
	if !c.HasTicksSq {
		return 0, nil
	}
	q := new(big.Int).Lsh(new(big.Int).SetUint64(c.TicksSqHi), 64)
	q.Or(q, new(big.Int).SetUint64(c.TicksSq))
	if q.Cmp(new(big.Int).SetUint64(s)) < 0 {
		return 0, inputf("sum of squared ticks %s is below the tick sum %d: every c_i^2 >= c_i, so the counters are inconsistent: it must be at least %d", q, s, s)
	}
	if s2 := new(big.Int).Mul(new(big.Int).SetUint64(s), new(big.Int).SetUint64(s)); q.Cmp(s2) > 0 {
		return 0, inputf("sum of squared ticks %s is above the tick sum squared %d^2 = %s (all ticks in one call): the counters are inconsistent: it must be at most %s", q, s, s2, s2)
	}
	v, ok := sampleVar(n, s, q)
	if !ok {
		return 0, inputf("sum of squared ticks %s is below (sum c)^2/n = %d^2/%d: the counters are inconsistent; it must be at least that", q, s, n)
	}
	return v, nil
}

// tickModel is what Time's candidates are computed from: n calls crossing
// s ticks of d ns (mc = s/n per call), the sample variance of the c_i when
// sum c_i^2 is known, the batches, and the interval's confidence and kind.
type tickModel struct {
	d       float64
	n, s    uint64
	nf, mc  float64
	varC    float64
	hasSq   bool
	batches []Batch
	conf    float64
	iv      Interval
}

// separatedCandidates are the intervals for separated executions, around
// mean: two-point, observed (with sum c^2), batch-means (with batches).
func (m tickModel) separatedCandidates(mean float64) []Candidate {
	cands := []Candidate{twoPointCandidate(m.n, m.s, m.d, m.conf, m.iv)}
	if m.hasSq && m.n >= 2 {
		q, dist := meanQuantile(m.conf, m.n)
		se := m.d * math.Sqrt(m.varC/m.nf)
		shift := skewShift(m.batches, m.mc, q) * se
		cands = append(cands, Candidate{Method: "observed", Dist: dist,
			Low: mean - q*se + shift, High: mean + q*se + shift, StdErr: se})
	}
	if len(m.batches) >= 2 {
		cands = append(cands, batchMeans(m.batches, m.mc, m.d, m.nf, mean, m.conf))
	}
	return cands
}

// contiguousCandidates are the intervals for contiguous executions, around
// mean: contiguous-bound, then batch-means, contiguous or two-point.
func (m tickModel) contiguousCandidates(mean float64) []Candidate {
	// The tick total of a contiguous run is exact up to its two end
	// phases (Beilner 10c): with constant durations the run's true
	// length lies within one tick of d sum c, so ±d/n always holds
	// the mean ("contiguous-bound", the simple measurement approach
	// Beilner discusses, right when durations do not vary).
	hb := m.d / m.nf
	seB := m.d / (math.Sqrt(6) * m.nf) // Beilner 10c, 10d with VT = 0
	cands := []Candidate{{Method: "contiguous-bound", Dist: "bound",
		Low: mean - hb, High: mean + hb, StdErr: seB}}
	switch b := len(m.batches); {
	case b >= 2:
		// Batch totals C_j = X_j + e_{j-1} - e_j (ticks): the
		// durations' own variance n_j VT/d^2 plus 1/6 from the
		// two boundary phases. Their batch-means variance counts
		// the boundary term b times where the run has it once, so
		// it errs on the safe side; the data cannot tell the two
		// apart when n VT/d^2 is below a few ticks^2.
		return append(cands, batchMeans(m.batches, m.mc, m.d, m.nf, mean, m.conf))
	case m.hasSq && m.n >= 2:
		// The per-call sample variance adds the quantization of
		// both ends of every call to VT/d^2, and stands in for it.
		q, dist := meanQuantile(m.conf, m.n)
		se := m.d * math.Sqrt(m.varC/m.nf)
		return append(cands, Candidate{Method: "contiguous", Dist: dist,
			Low: mean - q*se, High: mean + q*se, StdErr: se})
	default:
		// Without a spread the two-point model (10a) is the
		// safe predictor Beilner recommends.
		return append(cands, twoPointCandidate(m.n, m.s, m.d, m.conf, m.iv))
	}
}

// twoPointCandidate is the two-point model's candidate (Beilner 10a) for n
// calls crossing s ticks of d ns.
func twoPointCandidate(n, s uint64, d, conf float64, iv Interval) Candidate {
	k := s / n
	x := s - k*n
	lo, hi, used := propInterval(x, n, conf, iv)
	nf, f, kf := float64(n), float64(x)/float64(n), float64(k)
	return Candidate{Method: "two-point", Dist: string(used),
		Low: d * (kf + lo), High: d * (kf + hi),
		StdErr: d * math.Sqrt(f*(1-f)/nf)} // Beilner 10a
}

// widest clips every candidate to [0, ...] around r.Mean and gives r the
// widest of them, the safe choice among the models that may apply.
func widest(r Result, cands []Candidate) Result {
	best := -1
	for i := range cands {
		cands[i].Low = math.Max(0, math.Min(cands[i].Low, r.Mean))
		cands[i].High = math.Max(cands[i].High, r.Mean)
		if best < 0 || cands[i].High-cands[i].Low > cands[best].High-cands[best].Low {
			best = i
		}
	}
	w := cands[best]
	r.Low, r.High, r.StdErr, r.Method, r.Dist = w.Low, w.High, w.StdErr, w.Method, w.Dist
	r.Candidates = cands
	r.RelHalfWidth = relHalfWidth(r.Mean, r.Low, r.High)
	return r
}

// meanQuantile returns the quantile for a mean of n measurements: Student t
// with n-1 degrees of freedom below 30, the normal above (Lilja 4.4.1).
func meanQuantile(conf float64, n uint64) (float64, string) {
	if n < 30 {
		return tQuantile(conf, float64(n-1)), "t"
	}
	return zQuantile(conf), "z"
}

// relHalfWidth is (high-low)/2/|mean|, +Inf for a zero mean.
func relHalfWidth(mean, low, high float64) float64 {
	if mean == 0 {
		return math.Inf(1)
	}
	return (high - low) / 2 / math.Abs(mean)
}

// batchTotals validates the batches, drops empty ones, and returns them with
// the call and tick totals.
func batchTotals(c Counts) ([]Batch, uint64, uint64, error) {
	if len(c.Batches) == 0 {
		return nil, c.Calls, c.Ticks, nil
	}
	var bs []Batch
	var n, s uint64
	for i, b := range c.Batches {
		if b.Calls == 0 {
			if b.Ticks != 0 {
				return nil, 0, 0, inputf("batch %d has %d ticks but no calls: ticks are counted inside calls", i+1, b.Ticks)
			}
			continue
		}
		var carry uint64
		n, carry = bits.Add64(n, b.Calls, 0)
		if carry != 0 {
			return nil, 0, 0, inputf("batch calls overflow a 64-bit total")
		}
		s, carry = bits.Add64(s, b.Ticks, 0)
		if carry != 0 {
			return nil, 0, 0, inputf("batch ticks overflow a 64-bit total")
		}
		bs = append(bs, b)
	}
	if c.Calls == 0 && c.Ticks == 0 {
		return bs, n, s, nil
	}
	if c.Calls != n || c.Ticks != s {
		return nil, 0, 0, inputf("batches sum to %d calls and %d ticks but the totals say %d and %d: give matching totals, or zero totals to use the batches'", n, s, c.Calls, c.Ticks)
	}
	return bs, n, s, nil
}

// batchMeans is the batch-means candidate: the ratio estimator's variance
// b/(b-1) sum_j (C_j - m n_j)^2 / n^2 (ticks^2), Student t with b-1 degrees
// of freedom.
//
// Like the observed candidate, it is shifted toward the skewed side by
// skewShift.
func batchMeans(bs []Batch, m, d, n, mean, conf float64) Candidate {
	var s2, s3 float64
	for _, bt := range bs {
		r := float64(bt.Ticks) - m*float64(bt.Calls)
		s2 += r * r
		s3 += r * r * r
	}
	return batchMeansFrom(len(bs), s2, s3, d, n, mean, conf)
}

// batchMeansFrom is batchMeans from the b batches' residual sums s2 =
// sum_j r_j^2 and s3 = sum_j r_j^3 (ticks, r_j = C_j - m n_j).
func batchMeansFrom(b int, s2, s3, d, n, mean, conf float64) Candidate {
	bf := float64(b)
	se := d * math.Sqrt(bf/(bf-1)*s2) / n
	q := tQuantile(conf, bf-1)
	shift := skewShiftFrom(b, s2, s3, q) * se
	return Candidate{Method: "batch-means", Dist: "t", Low: mean - q*se + shift, High: mean + q*se + shift, StdErr: se}
}

// skewShift returns the shift, in standard errors, that corrects a
// symmetric interval on a mean for the skewness of the data (Johnson 1978,
// "Modified t tests and confidence intervals for asymmetrical populations",
// JASA 73: the Edgeworth term of the studentized mean moves both quantiles by
// g (2q^2+1) / (6 sqrt(b)), with g the sample skewness of b batch totals).
// Durations are right-skewed (a few slow calls), which a symmetric interval
// covers too rarely from above when calls are few. Without three batches
// there is no skewness estimate and the shift is 0; it is capped at q/2 so
// the interval always holds the mean.
func skewShift(bs []Batch, m, q float64) float64 {
	var s2, s3 float64
	for _, bt := range bs {
		r := float64(bt.Ticks) - m*float64(bt.Calls)
		s2 += r * r
		s3 += r * r * r
	}
	return skewShiftFrom(len(bs), s2, s3, q)
}

// skewShiftFrom is skewShift from b residuals' sums s2 = sum r^2 and s3 =
// sum r^3.
func skewShiftFrom(b int, s2, s3, q float64) float64 {
	if b < 3 || s2 == 0 {
		return 0
	}
	bf := float64(b)
	g := (s3 / bf) / math.Pow(s2/bf, 1.5)
	shift := g * (2*q*q + 1) / (6 * math.Sqrt(bf))
	return math.Max(-q/2, math.Min(q/2, shift))
}

// residualSS is sum_j (C_j - m n_j)^2 over batches, in ticks^2.
func residualSS(bs []Batch, m float64) float64 {
	var ss float64
	for _, b := range bs {
		r := float64(b.Ticks) - m*float64(b.Calls)
		ss += r * r
	}
	return ss
}

// sampleVar returns the sample variance (n q - s^2) / (n (n-1)) of n integers
// with sum s and sum of squares q, computed exactly before the division; ok
// is false when n q < s^2, which no real data can give.
func sampleVar(n, s uint64, q *big.Int) (float64, bool) {
	nq := new(big.Int).Mul(new(big.Int).SetUint64(n), q)
	s2 := new(big.Int).Mul(new(big.Int).SetUint64(s), new(big.Int).SetUint64(s))
	num := nq.Sub(nq, s2)
	if num.Sign() < 0 {
		return 0, false
	}
	if n < 2 {
		return 0, true
	}
	f, _ := new(big.Float).SetInt(num).Float64()
	return f / float64(n) / float64(n-1), true
}
