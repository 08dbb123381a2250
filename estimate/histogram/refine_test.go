// SPDX-License-Identifier: Apache-2.0

package histogram

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// The refinement's Monte Carlo: calls arrive into a Hist, and at the
// refinement looks of a `time` run (refineLooks) a Refiner picks windows
// from the histogram so far, which count the calls until the next look in
// their bins, exactly as BPF and loader.Session.Refine do. The calls are
// simulated by the counts they leave, not one by one: between two looks,
// the counts of the calls in each bucket and in each bin of a window are
// multinomial, drawn as successive binomials over the cells in order. Only
// the buckets within 8 binomial standard deviations (of the level, at the
// calls so far) of the quantile are drawn one by one; the calls below and
// above go to a bucket far away (the first and the last), where neither
// the Refiner nor the interval looks (checked: an end or a region that
// falls there counts as an escape, and fails the test; a region that
// fell there would only refine less).

// simLaw is a duration law with its distribution function.
type simLaw struct {
	name string
	cdf  func(x float64) float64
	qf   func(u float64) float64
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func bimodalCDF(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return 0.8*normCDF(math.Log(x/2000)/0.1) + 0.2*normCDF(math.Log(x/50000)/0.3)
}

// simLaws are estimate's coverage laws (quantile_test.go): lognormal
// (median 10 us, shape 1), bimodal (80% near 2 us, 20% near 50 us) and
// Pareto (1 us, alpha 1.5).
var simLaws = []simLaw{
	{"lognormal", func(x float64) float64 {
		if x <= 0 {
			return 0
		}
		return normCDF(math.Log(x / 10000))
	}, nil},
	{"bimodal", bimodalCDF, nil},
	{"pareto", func(x float64) float64 {
		if x <= 1000 {
			return 0
		}
		return 1 - math.Pow(1000/x, 1.5)
	}, func(u float64) float64 { return 1000 * math.Pow(1-u, -1/1.5) }},
}

// quantile inverts l's distribution function by bisection.
func (l simLaw) quantile(u float64) float64 {
	if l.qf != nil {
		return l.qf(u)
	}
	lo, hi := 1.0, 1e12
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		m := math.Sqrt(lo * hi)
		if l.cdf(m) < u {
			lo = m
		} else {
			hi = m
		}
	}
	return math.Sqrt(lo * hi)
}

// binomial draws from binomial(n, p): inversion below a mean of 10, else
// BTRS (Hörmann, "The generation of binomial random variates", J. Stat.
// Comput. Simul. 46, 1993).
func binomial(r *rand.Rand, n uint64, p float64) uint64 {
	switch {
	case n == 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	case p > 0.5:
		return n - binomial(r, n, 1-p)
	}
	nf, q := float64(n), 1-p
	if nf*p < 10 {
		s := p / q
		a := (nf + 1) * s
		f := math.Exp(nf * math.Log1p(-p))
		u := r.Float64()
		for x := uint64(0); ; x++ {
			if u <= f || x >= n {
				return x
			}
			u -= f
			f *= a/float64(x+1) - s
		}
	}
	spq := math.Sqrt(nf * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	lpq := math.Log(p / q)
	m := math.Floor((nf + 1) * p)
	lm, _ := math.Lgamma(m + 1)
	lnm, _ := math.Lgamma(nf - m + 1)
	for {
		u := r.Float64() - 0.5
		v := r.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		if us >= 0.07 && v <= vr {
			return uint64(k)
		}
		v = math.Log(v * alpha / (a/(us*us) + b))
		lk, _ := math.Lgamma(k + 1)
		lnk, _ := math.Lgamma(nf - k + 1)
		if v <= lm+lnm-lk-lnk+(k-m)*lpq {
			return uint64(k)
		}
	}
}

// TestBinomialSampler checks the sampler's mean and variance (5 standard
// errors: a false alarm about once in 10^6 runs per moment).
func TestBinomialSampler(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n uint64
		p float64
	}{{20, 0.1}, {1000, 0.004}, {1000, 0.3}, {100000, 0.5}, {3000000, 0.01}, {50, 0.9}} {
		const reps = 200000
		var s, s2 float64
		for i := 0; i < reps; i++ {
			x := float64(binomial(r, c.n, c.p))
			s += x
			s2 += x * x
		}
		mean, v := s/reps, s2/reps-(s/reps)*(s/reps)
		wm, wv := float64(c.n)*c.p, float64(c.n)*c.p*(1-c.p)
		if math.Abs(mean-wm) > 5*math.Sqrt(wv/reps) || math.Abs(v/wv-1) > 5*math.Sqrt(2.0/reps)+0.002 {
			t.Errorf("binomial(%d, %v): mean %.4f variance %.4f, want %.4f and %.4f", c.n, c.p, mean, v, wm, wv)
		}
	}
}

// refineLooks are the calls at which a `time` run of calls at a steady
// rate over runSecs refines: at 5, 10, 20, ... ms (timing's
// refineSchedule), then every 200 ms poll, planning anew once the calls
// have grown by loader.RefineGrowth (1.25) since the last plan. The last
// element is calls (the run's end).
func refineLooks(calls uint64, runSecs float64) []uint64 {
	var out []uint64
	at := func(ms float64) uint64 { return uint64(float64(calls) * ms / (1000 * runSecs)) }
	var last uint64
	add := func(n uint64) {
		if n > 0 && n < calls && float64(n) >= 1.25*float64(last) {
			out = append(out, n)
			last = n
		}
	}
	for ms := 5.0; ms < 200; ms *= 2 {
		add(at(ms))
	}
	for ms := 200.0; ms < 1000*runSecs; ms += 200 {
		add(at(ms))
	}
	return append(out, calls)
}

// refineSim is one simulated run of a law towards one quantile.
type refineSim struct {
	law      simLaw
	p        float64
	r        *rand.Rand
	h        Hist
	wins     []Window
	refiner  Refiner
	edgeCDF  []float64 // F at each bucket's lower edge
	lo, hi   int       // the buckets drawn one by one (nested as n grows)
	refining bool
}

func newRefineSim(l simLaw, p float64, seed uint64, edgeCDF []float64, refine bool) *refineSim {
	return &refineSim{law: l, p: p, r: rand.New(rand.NewPCG(seed, 11)), edgeCDF: edgeCDF,
		refiner: Refiner{Levels: []float64{p}, Share: 4}, lo: 1, hi: Buckets - 3, refining: refine}
}

// lawEdges returns F at every bucket's lower edge (and 1 at the end).
func lawEdges(l simLaw) []float64 {
	out := make([]float64, Buckets)
	for i := range Buckets - 1 {
		lo, _ := Bounds(i)
		out[i] = l.cdf(float64(lo))
	}
	out[Buckets-1] = 1
	return out
}

// narrow nests the buckets drawn one by one to those holding levels
// within 8 standard deviations of p at n calls, and 64/n more (the
// binomial spreads more at levels nearer 1/2 than a tail quantile's p).
func (s *refineSim) narrow(n uint64) {
	if n < 50 {
		return
	}
	d := 8*math.Sqrt(s.p*(1-s.p)/float64(n)) + 64/float64(n)
	for s.lo < s.hi && s.edgeCDF[s.lo+1] < s.p-d {
		s.lo++
	}
	for s.hi > s.lo && s.edgeCDF[s.hi] > s.p+d {
		s.hi--
	}
}

// add draws the buckets and bins of k more calls.
func (s *refineSim) add(k uint64) {
	left, mass := k, 1.0
	take := func(prob float64) uint64 {
		if left == 0 || prob <= 0 {
			mass -= prob
			return 0
		}
		x := binomial(s.r, left, math.Min(1, prob/mass))
		left -= x
		mass -= prob
		return x
	}
	s.h.Counts[0] += take(s.edgeCDF[s.lo])
	win := map[int]Window{}
	for _, w := range s.wins {
		win[w.Bucket] = w
	}
	for b := s.lo; b <= s.hi && left > 0; b++ {
		w, ok := win[b]
		if !ok {
			s.h.Counts[b] += take(s.edgeCDF[b+1] - s.edgeCDF[b])
			continue
		}
		lo, hi := Bounds(b)
		prev, fprev := lo, s.edgeCDF[b]
		cut := func(e uint64) {
			e = min(max(e, lo), hi)
			if e <= prev {
				return
			}
			fe := s.edgeCDF[b+1]
			if e < hi {
				fe = s.law.cdf(float64(e))
			}
			x := take(fe - fprev)
			s.h.Counts[b] += x
			s.h.Fine.Add(b, prev, e, x)
			prev, fprev = e, fe
		}
		for j := 0; j < w.Bins; j++ {
			cut(w.Edge(j))
		}
		cut(w.A + w.Span)
		cut(hi)
	}
	s.h.Counts[Buckets-2] += left
}

// inside reports whether the call of rank r lies in a bucket drawn one
// by one.
func (s *refineSim) inside(r uint64) bool {
	var c uint64
	for b := range Buckets {
		c += s.h.Counts[b]
		if c >= r {
			return b >= s.lo && b <= s.hi && b != 0 && b != Buckets-2
		}
	}
	return false
}

// run simulates calls calls, refining at looks, and calls look (if not
// nil) at each look with the histogram so far; it returns the histogram
// at the end.
func (s *refineSim) run(looks []uint64, look func(n uint64, h *Hist) bool) *Hist {
	s.h = Hist{Fine: &Fine{}, Min: 0, Max: 1 << 40}
	var n uint64
	for _, m := range looks {
		s.narrow(n)
		s.add(m - n)
		n = m
		if look != nil && look(n, &s.h) {
			return &s.h
		}
		if s.refining && m < looks[len(looks)-1] {
			s.wins = s.refiner.Windows(&s.h)
		}
	}
	return &s.h
}

// parallel runs f(0..n-1) as parallel subtests (GOMAXPROCS at a time)
// and returns when all are done.
func parallel(t *testing.T, n int, f func(i int)) {
	t.Run("cells", func(t *testing.T) {
		for i := 0; i < n; i++ {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				f(i)
			})
		}
	})
}

// Coverage tolerances, as in estimate's quantile tests: 2000 replications
// per cell; a cell whose true coverage is between 95.0% and 96.5% leaves
// 93.5%..97.5% with probability at most 1.0e-3 below and 7.5e-3 above
// (3.08 and 2.43 standard errors).
const (
	refineReps = 2000
	covLow     = 0.935
	covHigh    = 0.975
)

// TestRefinedCoverage is the Monte Carlo coverage of the 95% quantile
// interval from a refined histogram (refineSim: the Refiner's windows
// chosen at a `time` run's refinement looks over 10 s), on lognormal,
// bimodal and Pareto durations, n from 100 to 10^6, p in {0.5, 0.9,
// 0.99, 0.999}: 93.5%..97.5% where an interval is given (tolerance:
// refineReps), except where the interval is about as narrow as a few ns
// (resolutionLimited): the durations are whole ns, and there, as for
// constant durations, no interval on them can do better than cover
// always.
//
// The whole grid takes about 100 s of CPU: by default the test runs n =
// 1000 and 10^5 (every law and level); TICKPROF_FULL_MC=1 runs all of n.
func TestRefinedCoverage(t *testing.T) {
	type cell struct {
		law simLaw
		p   float64
		n   uint64
	}
	ns := []uint64{1000, 100000}
	if os.Getenv("TICKPROF_FULL_MC") == "1" {
		ns = []uint64{100, 1000, 10000, 100000, 1000000}
	}
	var cells []cell
	for _, l := range simLaws {
		for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
			for _, n := range ns {
				if n >= estimate.MinCallsForQuantile(p, 0.95) {
					cells = append(cells, cell{l, p, n})
				}
			}
		}
	}
	type res struct {
		covered, given, escapes int
		width, plain            float64
	}
	outs := make([]res, len(cells))
	edges := map[string][]float64{}
	for _, l := range simLaws {
		edges[l.name] = lawEdges(l)
	}
	parallel(t, len(cells), func(i int) {
		c := cells[i]
		truth := c.law.quantile(c.p)
		looks := refineLooks(c.n, 10)
		o := &outs[i]
		for rep := 0; rep < refineReps; rep++ {
			s := newRefineSim(c.law, c.p, uint64(1000*i+rep), edges[c.law.name], true)
			h := s.run(looks, nil)
			q, err := h.Quantile(c.p, estimate.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			if q.TooFew {
				continue
			}
			k := q.Ranks
			if !s.inside(k.Low) || !s.inside(k.High) {
				o.escapes++
			}
			o.given++
			if q.Low <= truth && truth <= q.High {
				o.covered++
			}
			o.width += (q.High - q.Low) / (2 * truth)
			plain := *h
			plain.Fine = nil
			if b, err := plain.Quantile(c.p, estimate.Options{}); err == nil {
				o.plain += (b.High - b.Low) / (2 * truth)
			}
		}
	})
	var tab strings.Builder
	fmt.Fprintf(&tab, "coverage of the refined 95%% quantile interval, %d replications per cell:\n", refineReps)
	for i, c := range cells {
		o := outs[i]
		if o.escapes > 0 {
			t.Errorf("%s p=%v n=%d: %d escapes from the simulated buckets", c.law.name, c.p, c.n, o.escapes)
		}
		if o.given == 0 {
			continue
		}
		cov := float64(o.covered) / float64(o.given)
		w := o.width / float64(o.given)
		flag := ""
		switch {
		case cov < covLow:
			flag = "  LOW"
			t.Errorf("%s p=%v n=%d: coverage %.2f%% below %.1f%%", c.law.name, c.p, c.n, 100*cov, 100*covLow)
		case resolutionLimited(w * c.law.quantile(c.p)):
			flag = "  (whole ns: floor only)"
		case cov > covHigh:
			flag = "  HIGH"
			t.Errorf("%s p=%v n=%d: coverage %.2f%% above %.1f%%", c.law.name, c.p, c.n, 100*cov, 100*covHigh)
		}
		fmt.Fprintf(&tab, "%-9s p=%-5g n=%-7d %7.2f%%  rel. half-width %6.3f%% (buckets alone %6.3f%%)%s\n", c.law.name, c.p, c.n, 100*cov, 100*w, 100*o.plain/float64(o.given), flag)
	}
	t.Log(tab.String())
}

// resolutionLimited says an interval of half-width hw ns is too narrow
// against whole-ns durations for the band to apply.
func resolutionLimited(hw float64) bool { return hw < 10 }

// stopLooks are the calls at which QuantileStop looks when calls arrive
// in batches of 200 a poll (estimate's TestQuantileSequentialCoverage):
// the first batch boundary 25% past the last look, up to max calls.
func stopLooks(max uint64) []uint64 {
	out := []uint64{200}
	for {
		n := uint64(math.Ceil(estimate.QuantileStopGrowth*float64(out[len(out)-1])/200)) * 200
		if n > max {
			return out
		}
		out = append(out, n)
	}
}

// TestRefinedSequentialCoverage runs `time --precision` on a quantile
// with refinement (estimate's TestQuantileSequentialCoverage, whose cells
// it repeats): the run stops when its QuantileStop says so, and the
// stopped interval must hold the true quantile in 93.5%..97.5% of 2000
// replications (tolerance: refineReps). On tickprof's buckets alone the
// same rule covered 96.8-100%, on buckets of 0.27% 94.6-96.5%.
func TestRefinedSequentialCoverage(t *testing.T) {
	type scell struct {
		law    simLaw
		p, rel float64
	}
	cells := []scell{{simLaws[0], 0.5, 0.1}, {simLaws[0], 0.9, 0.1}, {simLaws[0], 0.99, 0.1}, {simLaws[1], 0.5, 0.1}, {simLaws[1], 0.9, 0.1}, {simLaws[2], 0.9, 0.1}, {simLaws[2], 0.99, 0.2}}
	// The simulation refines at timing's early refinements before the
	// first poll (5, 10, ... 160 calls into its 200) and at the rule's
	// looks, not at every poll between: less refinement than a run has.
	looks := stopLooks(400000)
	isLook := map[uint64]bool{}
	for _, n := range looks {
		isLook[n] = true
	}
	looks = append([]uint64{5, 10, 20, 40, 80, 160}, looks...)
	type res struct {
		covered, stopped int
		calls, width     float64
	}
	outs := make([]res, len(cells))
	parallel(t, len(cells), func(i int) {
		c := cells[i]
		truth := c.law.quantile(c.p)
		edges := lawEdges(c.law)
		o := &outs[i]
		for rep := 0; rep < refineReps; rep++ {
			s := newRefineSim(c.law, c.p, uint64(7000+1000*i+rep), edges, true)
			stop := estimate.QuantileStop{Rel: c.rel}
			s.run(looks, func(n uint64, h *Hist) bool {
				if !isLook[n] {
					return false
				}
				q, err := h.Quantile(c.p, estimate.Options{})
				if err != nil || !stop.Check(q) {
					return false
				}
				o.stopped++
				o.calls += float64(n)
				o.width += q.RelHalfWidth()
				if q.Low <= truth && truth <= q.High {
					o.covered++
				}
				return true
			})
		}
	})
	for i, c := range cells {
		o := outs[i]
		if o.stopped != refineReps {
			t.Errorf("%s p=%v: %d runs never reached ±%v", c.law.name, c.p, refineReps-o.stopped, c.rel)
			continue
		}
		cov := float64(o.covered) / float64(o.stopped)
		t.Logf("%-9s p=%-5g ±%2.0f%% refined: mean %6.0f calls, mean ±%5.2f%% at stop, coverage %.2f%%", c.law.name, c.p, 100*c.rel, o.calls/float64(o.stopped), 100*o.width/float64(o.stopped), 100*cov)
		if cov < covLow || cov > covHigh {
			t.Errorf("%s p=%v: stopped coverage %.2f%% outside %.1f%%..%.1f%%", c.law.name, c.p, 100*cov, 100*covLow, 100*covHigh)
		}
	}
}

// TestRefinedDiffCoverage is the coverage of `diff`'s interval on a
// quantile's change (estimate.QuantileDiff: MOVER at the least favourable
// points of each end's cell) between two independent refined runs of
// 10^4 calls, the new one 10% slower: at least 93.5% of 2000 replications
// (the floor of estimate's TestQuantileDiffCoverage for bucketed runs; a
// true coverage of 95% falls below with probability 1.0e-3). From
// buckets alone the same test gave 97.7-100%; the table says what the
// refinement gives. About 20 s of CPU: it runs with TICKPROF_FULL_MC=1.
func TestRefinedDiffCoverage(t *testing.T) {
	if os.Getenv("TICKPROF_FULL_MC") != "1" {
		t.Skip("set TICKPROF_FULL_MC=1 to run the refined diff coverage (about 20 s of CPU)")
	}
	type dcell struct {
		law simLaw
		p   float64
	}
	var cells []dcell
	for _, l := range simLaws {
		for _, p := range []float64{0.5, 0.99} {
			cells = append(cells, dcell{l, p})
		}
	}
	const n, scale = 10000, 1.1
	looks := refineLooks(n, 10)
	covered := make([]int, len(cells))
	parallel(t, len(cells), func(i int) {
		c := cells[i]
		slow := simLaw{name: c.law.name, cdf: func(x float64) float64 { return c.law.cdf(x / scale) }}
		truth := (scale - 1) * c.law.quantile(c.p)
		eb, en := lawEdges(c.law), lawEdges(slow)
		for rep := 0; rep < refineReps; rep++ {
			b := newRefineSim(c.law, c.p, uint64(20000+1000*i+rep), eb, true).run(looks, nil)
			nw := newRefineSim(slow, c.p, uint64(90000+1000*i+rep), en, true).run(looks, nil)
			qb, err1 := b.Quantile(c.p, estimate.Options{})
			qn, err2 := nw.Quantile(c.p, estimate.Options{})
			if err1 != nil || err2 != nil {
				t.Error(err1, err2)
				return
			}
			d, err := estimate.QuantileDiff(qb, qn)
			if err != nil {
				t.Error(err)
				return
			}
			if d.Low <= truth && truth <= d.High {
				covered[i]++
			}
		}
	})
	for i, c := range cells {
		cov := float64(covered[i]) / refineReps
		t.Logf("%-9s p=%-5g n=%d, new 10%% slower: refined diff coverage %.2f%%", c.law.name, c.p, n, 100*cov)
		if cov < covLow {
			t.Errorf("%s p=%v: diff coverage %.2f%% below %.1f%%", c.law.name, c.p, 100*cov, 100*covLow)
		}
	}
}
