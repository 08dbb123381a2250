// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"sort"
)

// Distribution-free intervals for quantiles from order statistics.
//
// For n independent draws from any continuous distribution F with p-quantile
// ξ_p, the number B of draws at or below ξ_p is binomial(n, p), and the order
// statistics X_(1) <= ... <= X_(n) satisfy
//
//	P(X_(r) <= ξ_p <= X_(s)) = P(r <= B <= s-1) = F_B(s-1) - F_B(r-1)
//
// whatever F is (Conover, Practical Nonparametric Statistics, 3rd ed., §3.2,
// "confidence interval for a quantile"; Hahn and Meeker, Statistical
// Intervals, §5.2; David and Nagaraja, Order Statistics, §7.1). For a
// distribution with atoms (constant durations, integer nanoseconds) the
// probability is at least that (the closed interval is conservative). Lilja
// (§4.4) builds every interval of the seeds from a sampling distribution;
// here that distribution is the exact binomial of B, so the interval needs
// no assumption on the shape of the durations, and nothing but
// independence between calls.
//
// Ranks are chosen from the exact binomial while sqrt(np(1-p)) is below
// exactRankSigma (that covers every n up to 10^8 at any p), and from its
// normal approximation beyond, where the binomial's discreteness no longer
// matters.

// exactRankSigma is the binomial standard deviation up to which ranks come
// from the exact binomial distribution.
const exactRankSigma = 5000

// Ranks is a confidence interval for a quantile in rank space: the
// interval [X_(Low), X_(High)] between two order statistics (1-based).
type Ranks struct {
	// Low and High are the 1-based ranks of the bounding order statistics;
	// both are 0 when there is no two-sided interval (TooFew).
	Low, High uint64
	// Coverage is P(Low <= B <= High-1) for B ~ binomial(n, p): the exact
	// coverage of the interval for any continuous distribution; at least
	// the confidence asked for.
	Coverage float64
	// TooFew says n is too small for a two-sided interval at this
	// confidence: even [X_(1), X_(n)] covers ξ_p with probability
	// 1 - (1-p)^n - p^n below the level.
	TooFew bool
	// LowerOnly is the rank of a one-sided lower bound X_(LowerOnly) <= ξ_p
	// at the confidence asked for, when TooFew (0 when there is none).
	LowerOnly uint64
	// MinCalls is the fewest observations with which a two-sided interval
	// exists at this confidence and p.
	MinCalls uint64
	// Method is "order-statistics exact-binomial" or "order-statistics
	// normal" (ranks from the normal approximation of the binomial).
	Method string
	// LowTail and HighTail are the chances that X_(Low) lies above the
	// quantile, P(B <= Low-1), and X_(High) below it, P(B >= High): the
	// exact binomial tails (about (1-Coverage)/2 each with normal ranks).
	LowTail, HighTail float64
}

// binom holds the cumulative binomial distribution F(k) = P(B <= k) for
// k in [lo, hi]; outside the window the tails hold less than 1e-20.
type binom struct {
	n      uint64
	p      float64
	lo, hi uint64
	// cum holds the sums of the probabilities from lo on, and sum their
	// total: F(k) is cum[k-lo]/sum (normalized where it is read: F reads a
	// few dozen of the thousands of entries).
	cum []float64
	sum float64
}

func newBinom(n uint64, p float64) binom {
	nf := float64(n)
	sd := math.Sqrt(nf * p * (1 - p))
	w := 12*sd + 40
	m := nf * p
	lo, hi := uint64(0), n
	if m-w > 0 {
		lo = uint64(m - w)
	}
	if m+w < nf {
		hi = uint64(m + w)
	}
	// The pmf at the mode from lgamma, then outward by the ratio
	// pmf(k+1)/pmf(k) = (n-k)/(k+1) p/(1-p).
	mode := min(max(uint64(math.Floor((nf+1)*p)), lo), hi)
	mf := float64(mode)
	lg, _ := math.Lgamma(nf + 1)
	la, _ := math.Lgamma(mf + 1)
	lb, _ := math.Lgamma(nf - mf + 1)
	pmf := make([]float64, hi-lo+1)
	pmf[mode-lo] = math.Exp(lg - la - lb + mf*math.Log(p) + (nf-mf)*math.Log1p(-p))
	binomTails(pmf, n, p, lo, mode)
	s := 0.0
	for i, v := range pmf {
		s += v
		pmf[i] = s
	}
	return binom{n: n, p: p, lo: lo, hi: hi, cum: pmf, sum: s}
}

// binomTails fills pmf (pmf[k-lo] = P(B = k)) above and below the mode
// from pmf[mode-lo] by the ratio of neighbours. Each side is a chain of
// dependent divisions; one loop runs both, so that the processor overlaps
// them: the same operations in the same order, so the same values to the
// bit as one side after the other, in about half the time.
func binomTails(pmf []float64, n uint64, p float64, lo, mode uint64) {
	nf, odds := float64(n), p/(1-p)
	hi := lo + uint64(len(pmf)) - 1
	up, down := mode, mode
	xu, xd := pmf[mode-lo], pmf[mode-lo]
	for up < hi && down > lo {
		uf, df := float64(up), float64(down)
		xu = xu * (nf - uf) / (uf + 1) * odds
		xd = xd * df / (nf - df + 1) / odds
		up++
		down--
		pmf[up-lo], pmf[down-lo] = xu, xd
	}
	for ; up < hi; up++ {
		uf := float64(up)
		xu = xu * (nf - uf) / (uf + 1) * odds
		pmf[up+1-lo] = xu
	}
	for ; down > lo; down-- {
		df := float64(down)
		xd = xd * df / (nf - df + 1) / odds
		pmf[down-1-lo] = xd
	}
}

// F is P(B <= k); k = -1 gives 0. The division by the sum normalizes away
// the rounding of the lgamma sums (a few 1e-12).
func (b binom) F(k int64) float64 {
	if k < int64(b.lo) {
		return 0
	}
	if k >= int64(b.hi) {
		if k >= int64(b.n) {
			return 1
		}
		return math.Min(1, b.cum[len(b.cum)-1]/b.sum)
	}
	return math.Min(1, b.cum[uint64(k)-b.lo]/b.sum)
}

// lowerTail is P(B <= r-1): the chance that X_(r) lies above ξ_p.
func (b binom) lowerTail(r uint64) float64 { return b.F(int64(r) - 1) }

// upperTail is P(B >= s): the chance that X_(s) lies below ξ_p.
func (b binom) upperTail(s uint64) float64 { return 1 - b.F(int64(s)-1) }

// maxRank is the largest r in [1, n] with lowerTail(r) <= a, or 0.
func (b binom) maxRank(a float64) uint64 {
	if b.lowerTail(1) > a {
		return 0
	}
	// lowerTail is nondecreasing in r: binary search.
	lo, hi := uint64(1), b.n
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if b.lowerTail(mid) <= a {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// minRank is the smallest s in [1, n] with upperTail(s) <= a, or n+1.
func (b binom) minRank(a float64) uint64 {
	if b.upperTail(b.n) > a {
		return b.n + 1
	}
	lo, hi := uint64(1), b.n
	for lo < hi {
		mid := lo + (hi-lo)/2
		if b.upperTail(mid) <= a {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// checkP validates a quantile level.
func checkP(p float64) error {
	if !(p > 0 && p < 1) {
		return inputf("quantile %v out of range: want a level between 0 and 1, such as 0.99", p)
	}
	return nil
}

// QuantileRanks returns the ranks of a two-sided confidence interval for the
// p-quantile from n observations.
//
// The equal-tailed interval takes the largest r with P(B <= r-1) <= a/2
// and the smallest s with P(B >= s) <= a/2 (Conover §3.2). Because B is
// discrete, its coverage can exceed 1-a by a lot (97.5% for p = 0.99 from
// 1000 observations), so each bound may also move one rank inward, with the
// other tail taking what is left of a; of the candidates whose coverage is
// still at least 1-a the one with the smallest coverage is kept. Where the
// equal-tailed interval does not exist because one tail is too short (high
// quantiles from few observations), the interval ending at X_(n) or starting
// at X_(1) is used when its coverage reaches 1-a. Every interval returned
// has exact coverage >= 1-a for continuous distributions.
func QuantileRanks(n uint64, p float64, o Options) (Ranks, error) {
	conf, err := o.confidence()
	if err != nil {
		return Ranks{}, err
	}
	if err := checkP(p); err != nil {
		return Ranks{}, err
	}
	if n == 0 {
		return Ranks{}, inputf("no observations: a quantile needs at least one")
	}
	a := 1 - conf
	out := Ranks{MinCalls: MinCallsForQuantile(p, conf)}
	nf := float64(n)
	if sd := math.Sqrt(nf * p * (1 - p)); sd > exactRankSigma {
		// Normal approximation with continuity correction; the
		// discreteness is negligible at this size.
		z := zQuantile(conf)
		r := uint64(math.Floor(nf*p - z*sd + 0.5))
		s := uint64(math.Ceil(nf*p+z*sd+0.5)) + 1
		out.Low, out.High = max(r, 1), min(s, n)
		out.LowTail = stdNormal.CDF((float64(out.Low) - 0.5 - nf*p) / sd)
		out.HighTail = 1 - stdNormal.CDF((float64(out.High)-1+0.5-nf*p)/sd)
		out.Coverage = 1 - out.LowTail - out.HighTail
		out.Method = "order-statistics normal"
		return out, nil
	}
	out.Method = "order-statistics exact-binomial"
	b := newBinom(n, p)
	r, s, cov, ok := b.bestRanks(a)
	if !ok {
		out.TooFew = true
		out.LowerOnly = b.maxRank(a)
		return out, nil
	}
	out.Low, out.High, out.Coverage = r, s, cov
	out.LowTail, out.HighTail = b.lowerTail(r), b.upperTail(s)
	return out, nil
}

// bestRanks returns, among the equal-tailed ranks and their one-rank-inward
// variants (QuantileRanks), the interval [r, s] whose exact coverage is the
// smallest still at least 1-a (the narrower on a tie); false when none
// reaches 1-a.
func (b binom) bestRanks(a float64) (r, s uint64, cov float64, ok bool) {
	n, conf := b.n, 1-a
	type cand struct{ r, s uint64 }
	var cands []cand
	add := func(r, s uint64) {
		if r >= 1 && s <= n && r < s {
			cands = append(cands, cand{r, s})
		}
	}
	r0, s0 := b.maxRank(a/2), b.minRank(a/2)
	for _, r := range []uint64{r0, r0 + 1} {
		if r >= 1 && r <= n {
			add(r, b.minRank(a-b.lowerTail(r)))
		}
	}
	for _, s := range []uint64{s0, s0 - 1} {
		if s >= 1 && s <= n {
			add(b.maxRank(a-b.upperTail(s)), s)
		}
	}
	best, bestCov := cand{}, 2.0
	for _, c := range cands {
		cov := 1 - b.lowerTail(c.r) - b.upperTail(c.s)
		if cov < conf-1e-12 {
			continue
		}
		if cov < bestCov-1e-15 || (math.Abs(cov-bestCov) <= 1e-15 && c.s-c.r < best.s-best.r) {
			best, bestCov = c, cov
		}
	}
	return best.r, best.s, bestCov, bestCov <= 1
}

// MinCallsForQuantile is the fewest observations n for which a two-sided
// interval on the p-quantile exists at confidence conf: the smallest n with
// (1-p)^n + p^n <= 1-conf, the chance that the whole sample misses ξ_p on one
// side. For conf = 0.95 it is 59 at p = 0.95, 299 at p = 0.99 and 2995 at
// p = 0.999.
func MinCallsForQuantile(p, conf float64) uint64 {
	a := 1 - conf
	g := func(n uint64) bool {
		nf := float64(n)
		return math.Exp(nf*math.Log(p))+math.Exp(nf*math.Log1p(-p)) <= a
	}
	hi := uint64(2)
	for !g(hi) {
		hi *= 2
		if hi > 1<<62 {
			return hi
		}
	}
	lo := hi / 2
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if g(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Quantile is an estimated quantile with its distribution-free interval.
type Quantile struct {
	// P is the quantile's level, such as 0.99.
	P float64
	// Value is the point estimate (ns): the order statistic X_(ceil(nP)),
	// or for bucketed data the middle of its bucket, kept inside the
	// observed minimum and maximum.
	Value float64
	// ValueLow and ValueHigh bound the order statistic behind Value: the
	// bounds of its bucket for bucketed data, Value itself otherwise.
	ValueLow, ValueHigh float64
	// Low and High bound the interval (ns). With TooFew, High is +Inf and
	// Low is a one-sided lower bound (0 when there is none).
	Low, High float64
	// Confidence is the level asked for.
	Confidence float64
	// Coverage is the exact binomial coverage of the rank interval, at
	// least Confidence (see Ranks); 0 with TooFew.
	Coverage float64
	// Calls is the number of observations.
	Calls uint64
	// Ranks are the interval's ranks.
	Ranks Ranks
	// TooFew says there are too few observations for a two-sided interval
	// at this confidence (Ranks.MinCalls are needed).
	TooFew bool
	// Bucketed says the bounds were widened to the enclosing bucket bounds
	// of a histogram.
	Bucketed bool
	// Corrected says the per-call probe overhead, known to lie in
	// [OverheadLow, OverheadHigh] ns, was subtracted (CorrectQuantile).
	Corrected                 bool
	OverheadLow, OverheadHigh float64
}

// RelHalfWidth is (High-Low)/(2 Value): +Inf without a two-sided interval
// or with a zero value.
func (q Quantile) RelHalfWidth() float64 {
	if q.TooFew || !(q.Value > 0) {
		return math.Inf(1)
	}
	return (q.High - q.Low) / (2 * q.Value)
}

// pointRank is the rank of the point estimate, ceil(n p) (the inverse of
// the empirical distribution function, Hyndman and Fan's type 1).
func pointRank(n uint64, p float64) uint64 {
	k := uint64(math.Ceil(float64(n)*p - 1e-9))
	return min(max(k, 1), n)
}

// QuantileOfSamples estimates the p-quantile of xs (ns) with its
// order-statistic interval (QuantileRanks). xs is not modified.
func QuantileOfSamples(xs []float64, p float64, o Options) (Quantile, error) {
	if len(xs) == 0 {
		return Quantile{}, inputf("no measurements: a quantile needs at least one")
	}
	for _, x := range xs {
		if !finite(x) {
			return Quantile{}, inputf("measurement %v is not a finite number", x)
		}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantileOf(len(s), func(r uint64) (float64, float64) { v := s[r-1]; return v, v }, s[0], s[len(s)-1], p, o, false)
}

// Bucketed is a histogram as the quantile estimators see it: bucket i holds
// Count(i) observations, all in [lo, hi) of Bounds(i); buckets are in
// increasing order of their bounds.
type Bucketed interface {
	Buckets() int
	Count(i int) uint64
	Bounds(i int) (lo, hi float64)
}

// QuantileOfHistogram estimates the p-quantile from a histogram: the ranks
// of QuantileRanks, with each bounding order statistic replaced by the
// bounds of the bucket that holds it (the lower bound of X_(r)'s bucket, the
// upper bound of X_(s)'s), so the interval covers at least as often as the
// one from the raw observations. min and max are the exact smallest and
// largest observations (ns) and tighten the outer buckets; pass 0 and +Inf
// when unknown.
//
// Such an interval over-covers, and no interval computed from the bucket
// counts alone can do otherwise:
//
//   - For a constant law every call falls in one bucket, so the counts,
//     and any interval computed from them, are the same in every run: it
//     holds the constant in every run or in none (coverage 100% or 0%).
//   - For any law, the counts' distribution depends on F only through its
//     values at the bucket edges, and the ends of an interval computed from
//     them can only be edges (or the observed extremes). Every law F' with
//     the same edge values has its p-quantile in the same bucket e, yields
//     the same counts' distribution, and is covered exactly when the
//     interval includes e: the coverage is P(interval ⊇ e), the same for
//     all of them. It must be at least 95% for the F' whose quantile sits
//     at an edge of e, so it is at least 95% for every F' (95% only where
//     F(edge) is within sampling error of p). When ξ_p is strictly inside
//     e and n grows, the counts settle around n F(a_e) < np < n F(b_e),
//     and any rule that includes e whenever the counts clearly put ξ_p
//     there covers with probability tending to 100%.
//
// So the interval's coverage is 95% to 100%, rising to 100% once the
// order-statistic interval is narrower than a bucket (the Monte Carlo
// tables in quantile_test.go: 96.2-100% with buckets 4.4% wide); finer
// buckets only move that point to larger n (the number of calls at which
// it is reached grows as the inverse square of the buckets' width). Only
// randomizing the interval, or resolving the calls near the interval's
// ends more finely than the buckets do, can bring the coverage down to the
// level: a Refined h does the latter (quantile_refine.go; the refined
// bounds replace the buckets' wherever h has cells).
func QuantileOfHistogram(h Bucketed, min, max, p float64, o Options) (Quantile, error) {
	if !(min <= max) {
		return Quantile{}, inputf("minimum %v above maximum %v", min, max)
	}
	n, at := histRanks(h, min, max)
	if n == 0 {
		return Quantile{}, inputf("empty histogram: a quantile needs at least one observation")
	}
	return quantileOf(int(n), at, min, max, p, o, true)
}

// histRanks returns h's count and a function bounding its order
// statistic of rank r (1-based) by its bucket's bounds, or by those its
// bucket's refined cells give (a Refined h), clipped to [min, max].
func histRanks(h Bucketed, min, max float64) (uint64, func(r uint64) (float64, float64)) {
	// cum[i] is the number of observations in buckets 0..i.
	cum := make([]uint64, h.Buckets())
	var n uint64
	for i := range cum {
		n += h.Count(i)
		cum[i] = n
	}
	ref, _ := h.(Refined)
	at := func(r uint64) (float64, float64) {
		i := sort.Search(len(cum), func(i int) bool { return cum[i] >= r })
		if i == len(cum) {
			return max, max
		}
		lo, hi := h.Bounds(i)
		if ref != nil {
			below := uint64(0)
			if i > 0 {
				below = cum[i-1]
			}
			byLo, byHi := ref.Cells(i)
			lo, hi = refinedBounds(byLo, byHi, h.Count(i), r-below, lo, hi)
		}
		return math.Max(lo, min), math.Min(hi, max)
	}
	return n, at
}

// quantileOf builds the Quantile from n observations whose r-th order
// statistic lies in at(r).
func quantileOf(n int, at func(r uint64) (float64, float64), min, max, p float64, o Options, bucketed bool) (Quantile, error) {
	conf, err := o.confidence()
	if err != nil {
		return Quantile{}, err
	}
	rk, err := QuantileRanks(uint64(n), p, o)
	if err != nil {
		return Quantile{}, err
	}
	q := Quantile{P: p, Confidence: conf, Calls: uint64(n), Ranks: rk, TooFew: rk.TooFew,
		Coverage: rk.Coverage, Bucketed: bucketed}
	vlo, vhi := at(pointRank(uint64(n), p))
	q.Value, q.ValueLow, q.ValueHigh = (vlo+vhi)/2, vlo, vhi
	if rk.TooFew {
		q.High = math.Inf(1)
		if rk.LowerOnly > 0 {
			q.Low, _ = at(rk.LowerOnly)
		}
		return q, nil
	}
	q.Low, _ = at(rk.Low)
	_, q.High = at(rk.High)
	q.Value = math.Min(math.Max(q.Value, q.Low), q.High)
	return q, nil
}

// QuantileDiff is the change new - base of a quantile between two runs with
// its interval, by the MOVER method (Zou and Donner, "Construction of
// confidence limits about effect measures: a general approach", Stat. Med.
// 27, 2008, eq. 5; Newcombe 1998 for proportions): with each run's estimate
// q_i in its own interval [l_i, u_i],
//
//	L = d - sqrt((q_new - l_new)^2 + (u_base - q_base)^2)
//	U = d + sqrt((u_new - q_new)^2 + (q_base - l_base)^2)
//
// It keeps the asymmetry of each order-statistic interval (a tail quantile's
// interval reaches further up than down) and needs only the two intervals
// (and each run's calls, for the exact tails of its limits: armScales).
// The runs must be independent.
//
// For histograms the order statistics are known only to lie in their
// buckets, and bucket-rounded intervals are not the near-normal arms MOVER
// assumes (the MOVER of two bucket-limited intervals covered 73% in
// quantile_test.go). L is increasing in q_new and l_new and decreasing in
// q_base and u_base (U the mirror image), so the bounds are taken at the
// least favourable order statistics their buckets allow:
//
//	L = (a_new - b_base) - sqrt((a_new - l_new)^2 + (u_base - b_base)^2)
//	U = (b_new - a_base) + sqrt((u_new - b_new)^2 + (a_base - l_base)^2)
//
// with [a_i, b_i] the bucket of q_i's order statistic. Whenever MOVER on the
// raw order statistics covers, this interval does. quantile_test.go measures
// both coverages.
func QuantileDiff(base, new Quantile) (Difference, error) {
	if base.TooFew || new.TooFew {
		return Difference{}, inputf("a quantile without a two-sided interval cannot be compared: measure more calls")
	}
	if base.P != new.P {
		return Difference{}, inputf("quantile levels differ: %v and %v", base.P, new.P)
	}
	if base.Confidence != new.Confidence {
		return Difference{}, inputf("confidence levels differ: %v and %v", base.Confidence, new.Confidence)
	}
	if base.Corrected != new.Corrected {
		return Difference{}, inputf("one run's quantiles are corrected for the probe overhead and the other's are not: compare runs measured alike")
	}
	an, bn := pointBounds(new)
	ab, bb := pointBounds(base)
	ln, un := armScales(new)
	lb, ub := armScales(base)
	lo := (an - bb) - math.Hypot(ln*(an-new.Low), ub*(base.High-bb))
	hi := (bn - ab) + math.Hypot(un*(new.High-bn), lb*(ab-base.Low))
	d := math.Min(math.Max(new.Value-base.Value, lo), hi)
	z := zQuantile(base.Confidence)
	return newDifference(d, lo, hi, (hi-lo)/(2*z), base.Confidence, "mover-order-statistics"), nil
}

// armScales returns the factors that bring q's lower and upper arms to
// the level MOVER assumes. MOVER recovers each estimate's variance from
// its limits, (q - l)^2 / z^2, as if each limit missed with probability
// α/2; an order-statistic interval's limits miss with their own exact
// binomial tails, P(B <= r-1) below and P(B >= s) above, which the rank
// choice (QuantileRanks) and the binomial's discreteness make unequal
// (4.0% and 0.8% for p90 from 100 calls). Each arm is recovered at its
// own tail, z_{α/2} / z_{tail}: with equal tails the factors are 1. Plain
// MOVER on p90 from 100 calls covered 98.1%, with the factors 97.4%
// (lognormal, 4000 replications). With normal ranks (very large n) the
// tails are equal and the factors about 1.
func armScales(q Quantile) (lower, upper float64) {
	rk := q.Ranks
	if rk.LowTail == 0 && rk.HighTail == 0 {
		// Read back without its ranks (pprof labels): they follow from
		// the calls, the level and the confidence.
		var err error
		if rk, err = QuantileRanks(q.Calls, q.P, Options{Confidence: q.Confidence}); err != nil || rk.TooFew {
			return 1, 1
		}
	}
	z := zQuantile(q.Confidence)
	scale := func(tail float64) float64 {
		if !(tail > 0 && tail < 0.5) {
			return 1
		}
		return z / stdNormal.Quantile(1-tail)
	}
	return scale(rk.LowTail), scale(rk.HighTail)
}

// pointBounds returns the bounds of q's point order statistic.
func pointBounds(q Quantile) (float64, float64) {
	if q.ValueLow == 0 && q.ValueHigh == 0 {
		return q.Value, q.Value
	}
	return q.ValueLow, q.ValueHigh
}

// QuantileReached reports whether a quantile's interval is tight enough:
// a two-sided interval with RelHalfWidth <= rel, from at least
// MinStopEvents observations beyond the fewest that give an interval at all.
// To stop a run on it, use a QuantileStop.
func QuantileReached(q Quantile, rel float64) bool {
	if q.TooFew || q.Calls < q.Ranks.MinCalls+MinStopEvents {
		return false
	}
	return q.RelHalfWidth() <= rel
}

// QuantileStopGrowth is the growth in calls between two looks of a
// QuantileStop.
const QuantileStopGrowth = 1.25

// QuantileStop is the sequential stopping rule for a quantile target
// (`--precision` on a quantile): stop once QuantileReached holds at two
// successive looks, looks taken only when the calls have grown by
// QuantileStopGrowth since the last one.
//
// The width of an order-statistic interval, X_(s) - X_(r), is itself noisy
// (a sum of s-r spacings, relative spread near 1/sqrt(s-r): 17% for p99 at
// ±10%), and stopping at the first look where it happens to be small keeps
// intervals that are too short: checking after every batch of 200 calls
// covered 93.2% for a lognormal p99 at ±10%. Sparse looks and a second
// confirming look restore the coverage (quantile_test.go).
type QuantileStop struct {
	// Rel is the target relative half-width.
	Rel float64
	// lastLook is the calls at the last look; hits the successive looks
	// that reached Rel.
	lastLook uint64
	hits     int
}

// Due reports whether a Check with this many calls would take a look
// (callers can skip estimating the quantile until then).
func (s *QuantileStop) Due(calls uint64) bool {
	return s.lastLook == 0 || float64(calls) >= QuantileStopGrowth*float64(s.lastLook)
}

// Check takes a look at q, when q has grown enough since the last look,
// and reports whether the run may stop.
func (s *QuantileStop) Check(q Quantile) bool {
	if !s.Due(q.Calls) {
		return false
	}
	s.lastLook = max(q.Calls, 1)
	if QuantileReached(q, s.Rel) {
		s.hits++
	} else {
		s.hits = 0
	}
	return s.hits >= 2
}

// CallsToStop forecasts the calls at which the rule will stop, given the
// calls now and plan, the calls a plan says the interval needs
// (PlanQuantile): when the last look reached the goal, the confirming look
// QuantileStopGrowth later; otherwise the first look at or after plan,
// then its confirming look.
func (s *QuantileStop) CallsToStop(calls, plan uint64) uint64 {
	next := max(calls, uint64(math.Ceil(QuantileStopGrowth*float64(s.lastLook))))
	if s.hits >= 1 {
		return next
	}
	return uint64(math.Ceil(QuantileStopGrowth * float64(max(plan, next))))
}

// QuantilePlan is the number of calls a quantile's interval needs.
type QuantilePlan struct {
	// Calls is the fewest calls whose expected interval reaches the goal.
	Calls uint64
	// RelHalfWidth is the expected relative half-width at Calls.
	RelHalfWidth float64
	// Confidence is the level planned for.
	Confidence float64
}

// PlanQuantile returns the calls needed for the p-quantile's interval to
// reach relative half-width rel at the confidence of o. The durations'
// distribution is an assumption the caller states through its quantile
// function qf (qf(u) is the u-quantile in ns; see LogNormalQuantiles and
// use a histogram of an earlier run where one exists): the interval between
// order statistics r and s is expected at [qf(r/(n+1)), qf(s/(n+1))] (the
// expected value of U_(r) is r/(n+1)), with the ranks of QuantileRanks.
//
// bucket, if not nil, is the width (ns) of the histogram bucket at a
// duration: each end of the interval is widened to its bucket's bound, by
// half a bucket on average over where the end falls in it, so the expected
// interval grows by half a bucket at each end. A precision the buckets alone
// exceed (bucket(ξ_p)/(2 ξ_p) >= rel) is an error. The plan does not include
// the QuantileStop confirmation look.
func PlanQuantile(p, rel float64, qf func(u float64) float64, bucket func(x float64) float64, o Options) (QuantilePlan, error) {
	conf, err := o.confidence()
	if err != nil {
		return QuantilePlan{}, err
	}
	if err := checkP(p); err != nil {
		return QuantilePlan{}, err
	}
	if !(rel > 0) || !finite(rel) {
		return QuantilePlan{}, inputf("relative half-width %v is not positive: give a precision such as 0.05 for ±5%%", rel)
	}
	xi := qf(p)
	if !(xi > 0) || !finite(xi) {
		return QuantilePlan{}, inputf("assumed %v-quantile %v ns is not a positive duration", p, xi)
	}
	if bucket != nil {
		if f := bucket(xi) / (2 * xi); f >= rel {
			return QuantilePlan{}, inputf("precision ±%.3g%% is not above what the histogram's buckets alone take at this duration (±%.3g%%)", 100*rel, 100*f)
		}
	}
	width := func(n uint64) float64 {
		rk, err := QuantileRanks(n, p, o)
		if err != nil || rk.TooFew {
			return math.Inf(1)
		}
		nf := float64(n) + 1
		lo, hi := qf(float64(rk.Low)/nf), qf(float64(rk.High)/nf)
		w := hi - lo
		if bucket != nil {
			w += (bucket(lo) + bucket(hi)) / 2
		}
		return w / (2 * xi)
	}
	lo := MinCallsForQuantile(p, conf)
	hi := lo
	for width(hi) > rel {
		lo = hi
		hi *= 2
		if hi > 1<<50 {
			return QuantilePlan{}, inputf("precision ±%.3g%% needs more than 2^50 calls under this assumption", 100*rel)
		}
	}
	// The width falls with n up to the ranks' discreteness: bisect.
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if width(mid) <= rel {
			hi = mid
		} else {
			lo = mid
		}
	}
	return QuantilePlan{Calls: hi, RelHalfWidth: width(hi), Confidence: conf}, nil
}

// LogNormalQuantiles is the quantile function of a lognormal distribution
// with median 1 and shape sigma (the standard deviation of the log
// durations): qf(u) = exp(sigma z_u). Relative precisions do not depend on
// the median. sigma = ln(p99/p50)/2.326 for a stated tail ratio; 1 is a
// tail ratio p99/p50 of about 10.
func LogNormalQuantiles(sigma float64) func(u float64) float64 {
	return func(u float64) float64 {
		if u <= 0 {
			return 0
		}
		if u >= 1 {
			return math.Inf(1)
		}
		return math.Exp(sigma * stdNormal.Quantile(u))
	}
}
