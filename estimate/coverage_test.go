// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// regime is one cell of the Monte Carlo grid.
type regime struct {
	dist       durDist
	x          float64 // ET/d
	n          uint64  // calls per experiment
	contiguous bool
}

func (g regime) String() string {
	mode := "separated"
	if g.contiguous {
		mode = "contiguous"
	}
	return fmt.Sprintf("%-11s ET/d=%-5.6g n=%-6d %s", g.dist, g.x, g.n, mode)
}

// outcome summarizes the replications of one regime.
type outcome struct {
	reps, covered int
	sumMean       float64 // sum of the estimates
	sumMean2      float64
	constant      bool    // every replication gave the same estimate
	first         float64 // the first replication's estimate
	methods       map[string]int
}

func (o outcome) coverage() float64 { return float64(o.covered) / float64(o.reps) }

// bias returns the mean estimate minus the truth and its Monte Carlo
// standard error.
func (o outcome) bias(truth float64) (float64, float64) {
	r := float64(o.reps)
	m := o.sumMean / r
	v := math.Max(0, o.sumMean2/r-m*m) * r / (r - 1)
	return m - truth, math.Sqrt(v / r)
}

// biasZ returns the bias and the bias in Monte Carlo standard errors (0
// without spread).
func (o outcome) biasZ(truth float64) (b, z float64) {
	b, se := o.bias(truth)
	if se > 0 {
		z = b / se
	}
	return b, z
}

const gridBatches = 50 // polling periods per experiment in the grid

// runRegime replicates one regime reps times with a fixed seed.
func runRegime(t testing.TB, g regime, reps int, seed uint64, o Options) outcome {
	s := newSim(g.dist, g.x, g.contiguous, seed)
	return replicate(t, g, g.x, reps, func() Counts { return s.experiment(g.n, gridBatches) }, o)
}

// replicate estimates reps experiments drawn by draw and tallies how often
// the interval covers truth.
func replicate(t testing.TB, g fmt.Stringer, truth float64, reps int, draw func() Counts, o Options) outcome {
	out := outcome{reps: reps, constant: true, methods: map[string]int{}}
	first := math.NaN()
	for i := 0; i < reps; i++ {
		c := draw()
		r, err := Time(c, o)
		if err != nil {
			t.Errorf("%v: Time(%+v): %v", g, c, err)
			return out
		}
		if r.Low <= truth && truth <= r.High {
			out.covered++
		}
		out.sumMean += r.Mean
		out.sumMean2 += r.Mean * r.Mean
		if i == 0 {
			first = r.Mean
			out.first = r.Mean
		} else if r.Mean != first {
			out.constant = false
		}
		out.methods[r.Method+"/"+r.Dist]++
	}
	return out
}

// parallel runs f(i) for i < n on every core.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// parallelSeeded is parallel with a random source for each i, PCG(seed+i,
// stream), and a generator drawing from it.
func parallelSeeded(n int, seed, stream uint64, f func(i int, src *rand.PCG, r *rand.Rand)) {
	parallel(n, func(i int) {
		src := rand.NewPCG(seed+uint64(i), stream)
		f(i, src, rand.New(src))
	})
}

func methodSummary(m map[string]int) string {
	best, bn := "", 0
	for k, v := range m {
		if v > bn || (v == bn && k < best) {
			best, bn = k, v
		}
	}
	if len(m) == 1 {
		return best
	}
	return fmt.Sprintf("%s(%d%%)+%d", best, 100*bn/sumInts(m), len(m)-1)
}

func sumInts(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

// upperExempt says why the 97.5% ceiling on coverage cannot apply to a
// regime, or "" when it applies:
//
//   - "exact": every replication gave the same estimate (constant durations
//     that are a whole number of ticks, or a contiguous run whose length is a
//     whole number of ticks), so the estimate has no error and any interval
//     covers.
//   - "quantization": a contiguous run whose durations vary by less than the
//     batch boundaries' quantization: the batch totals' variance is
//     n_j VT/d^2 + 1/6, and the data cannot tell the durations' share from
//     the clock's when the whole run's n VT/d^2 is a few ticks^2, so a valid
//     interval must allow for the larger; the test exempts regimes where that
//     allowance widens the interval by more than 10%,
//     sqrt((n VT + b/6) / (n VT + 1/6)) > 1.1. The floor of 93.5% still holds.
func upperExempt(g regime, o outcome) string {
	if o.constant {
		return "exact"
	}
	if g.contiguous {
		rho := float64(g.n) * g.dist.variance(g.x)
		b := float64(gridBatches)
		if math.Sqrt((rho+b/6)/(rho+1.0/6)) > 1.1 {
			return "quantization"
		}
	}
	return ""
}

// TestCoverageGrid checks bias and the coverage of the default 95% interval
// over the grid of duration laws, ET/d ratios, call counts and call layouts.
func TestCoverageGrid(t *testing.T) {
	// The bounds need 2000 replications (a standard error of 0.5 points);
	// -short keeps them and drops half of the call counts.
	reps := 2000
	ns := []uint64{100, 1000, 10000, 100000}
	if testing.Short() {
		ns = []uint64{100, 10000}
	}
	var grid []regime
	for _, cont := range []bool{false, true} {
		for d := distConstant; d <= distBimodal; d++ {
			for _, x := range []float64{0.01, 0.1, 0.5, 0.9, 1.5, 5, 20} {
				for _, n := range ns {
					grid = append(grid, regime{d, x, n, cont})
					if cont && d == distConstant {
						// n x is a whole number of ticks here, so every
						// replication gives the exact mean and the cell
						// tests nothing: its neighbour with 0.37 of a
						// tick more in the run does.
						grid = append(grid, regime{d, x + 0.37/float64(n), n, cont})
					}
				}
			}
		}
	}
	outs := make([]outcome, len(grid))
	parallel(len(grid), func(i int) {
		outs[i] = runRegime(t, grid[i], reps, uint64(1000+i), Options{})
	})
	var tab strings.Builder
	fmt.Fprintf(&tab, "coverage of the default 95%% interval, %d replications per regime, %d batches:\n", reps, gridBatches)
	fmt.Fprintf(&tab, "%-48s %8s %9s %8s  %s\n", "regime", "coverage", "crossings", "bias/se", "method")
	for i, g := range grid {
		o := outs[i]
		cov, cross := o.coverage(), float64(g.n)*g.x
		b, z := o.biasZ(g.x)
		flag := ""
		if floor := coverageFloor(reps, 0.001); cov < floor {
			flag = "  LOW"
			t.Errorf("%v: coverage %.2f%% below %.2f%%", g, 100*cov, 100*floor)
		}
		switch exempt := upperExempt(g, o); {
		case cross < 30:
		case exempt != "":
			flag = "  (" + exempt + ")"
		case cov > 0.975:
			flag = "  HIGH"
			t.Errorf("%v: coverage %.2f%% above 97.5%% with %g expected crossings", g, 100*cov, cross)
		}
		if o.constant {
			if math.Abs(o.first-g.x) > 1e-12*g.x {
				t.Errorf("%v: constant estimate %.17g differs from the truth %g", g, o.first, g.x)
			}
		} else if math.Abs(z) > 4.5 {
			t.Errorf("%v: mean %.6g differs from the truth %g by %.1f Monte Carlo standard errors", g, g.x+b, g.x, z)
		}
		fmt.Fprintf(&tab, "%-48s %7.2f%% %9.0f %8.2f  %s%s\n", g, 100*cov, cross, z, methodSummary(o.methods), flag)
	}
	t.Log(tab.String())
}

// coverageFloor is the lowest coverage of a valid 95% interval a test
// accepts from reps replications of one cell, for a one-sided false-alarm
// rate alpha per cell: z_{1-alpha} binomial standard errors below 95%
// (normal approximation to the binomial). alpha = 0.001 gives 93.5% at
// 2000 replications. An interval that covers more than 95%, as most do
// here, raises a false alarm less often.
func coverageFloor(reps int, alpha float64) float64 {
	return 0.95 - stdNormal.Quantile(1-alpha)*math.Sqrt(0.95*0.05/float64(reps))
}

// phaseRegime is one cell of the coupled-phase grid.
type phaseRegime struct {
	dist     durDist
	x        float64
	n        uint64
	law      phaseLaw
	dithered bool
}

func (g phaseRegime) String() string {
	clk := "fixed grid"
	if g.dithered {
		clk = "dithered"
	}
	return fmt.Sprintf("%-11s ET/d=%-5g n=%-6d %-7s %s", g.dist, g.x, g.n, g.law, clk)
}

// TestCoverageCoupledPhase checks the dithered tick:DUR clock where the
// program keeps time with the clock (phaseCoupled, phaseLocked): the clock
// of bpf/timing.h draws a grid phase per call, so E[c] = ET/d whatever the
// entry phases (the proof is at tp_phase), and the 95% interval must cover
// as in the asynchronous grid: at least coverageFloor, set so that an
// interval covering exactly 95% fails one of the dithered cells in 1% of
// runs (Bonferroni over the cells: 0.0125% each, 92.5% at 1000
// replications); at most 97.5% (3.6 standard errors above 95%) where 30
// crossings or more are expected; and no bias beyond 4.5 Monte Carlo
// standard errors (a false alarm in 7e-6 of cells).
//
// The same cells on a fixed grid (jiffies) are the documented check that
// the regimes couple at all: there the estimate is biased (entries just
// after a tick rarely reach the next one; locked entries always do) and
// the interval must miss in most replications of the cells in mustMiss,
// whose bias is over 100 standard errors of their estimates: their
// coverage is 0-1%, so "at most 50%" cannot fail by chance. Were it not
// so, the dithered cells would test nothing.
func TestCoverageCoupledPhase(t *testing.T) {
	const reps = 1000
	var grid []phaseRegime
	for _, dith := range []bool{true, false} {
		for _, law := range []phaseLaw{phaseCoupled, phaseLocked} {
			for d := distConstant; d <= distBimodal; d++ {
				for _, x := range []float64{0.025, 0.1, 0.5, 1.5, 5} {
					for _, n := range []uint64{1000, 5000} {
						if !dith && n != 5000 {
							continue // the bias shows at the larger n
						}
						grid = append(grid, phaseRegime{d, x, n, law, dith})
					}
				}
			}
		}
	}
	dithered := 0
	for _, g := range grid {
		if g.dithered {
			dithered++
		}
	}
	mustMiss := map[string]bool{
		phaseRegime{distConstant, 0.5, 5000, phaseCoupled, false}.String():   true,
		phaseRegime{distUniform, 0.5, 5000, phaseCoupled, false}.String():    true,
		phaseRegime{distConstant, 0.025, 5000, phaseLocked, false}.String():  true,
		phaseRegime{distExponential, 0.5, 5000, phaseLocked, false}.String(): true,
	}
	outs := make([]outcome, len(grid))
	parallel(len(grid), func(i int) {
		g := grid[i]
		s := newPhaseSim(g.dist, g.x, g.law, g.dithered, uint64(5000+i))
		outs[i] = replicate(t, g, g.x, reps, func() Counts { return s.experiment(g.n, gridBatches) }, Options{})
	})
	floor := coverageFloor(reps, 0.01/float64(dithered))
	var tab strings.Builder
	fmt.Fprintf(&tab, "coverage of the default 95%% interval, %d replications per regime, %d batches (floor %.2f%%):\n", reps, gridBatches, 100*floor)
	fmt.Fprintf(&tab, "%-52s %8s %9s %8s  %s\n", "regime", "coverage", "crossings", "bias/se", "method")
	missed := 0
	for i, g := range grid {
		o := outs[i]
		cov, cross := o.coverage(), float64(g.n)*g.x
		b, z := o.biasZ(g.x)
		flag := ""
		if g.dithered {
			if cov < floor {
				flag = "  LOW"
				t.Errorf("%v: coverage %.2f%% below %.2f%%", g, 100*cov, 100*floor)
			}
			if cross >= 30 && !o.constant && cov > 0.975 {
				flag = "  HIGH"
				t.Errorf("%v: coverage %.2f%% above 97.5%% with %g expected crossings", g, 100*cov, cross)
			}
			if math.Abs(z) > 4.5 {
				t.Errorf("%v: mean %.6g differs from the truth %g by %.1f Monte Carlo standard errors", g, g.x+b, g.x, z)
			}
		} else if mustMiss[g.String()] {
			missed++
			flag = "  (must miss)"
			if cov > 0.5 {
				t.Errorf("%v: a fixed grid covered %.2f%%: the regime does not couple, so the dithered cells test nothing", g, 100*cov)
			}
		}
		fmt.Fprintf(&tab, "%-52s %7.2f%% %9.0f %8.2f  %s%s\n", g, 100*cov, cross, z, methodSummary(o.methods), flag)
	}
	if missed != len(mustMiss) {
		t.Errorf("%d of the %d must-miss cells are in the grid", missed, len(mustMiss))
	}
	t.Log(tab.String())
}

// checkExperiment draws m checked calls, in b batches, of a fixed-grid
// checkFailRate is the share of reps experiments (counts and the exact
// total of the same calls) in which CheckClock finds the clock estimate
// and the exact mean disagreeing.
func checkFailRate(t *testing.T, r *rand.Rand, reps int, experiment func(*rand.Rand) (Counts, float64)) float64 {
	t.Helper()
	fails := 0
	for i := 0; i < reps; i++ {
		c, exact := experiment(r)
		ck, err := CheckClock(c, exact, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !ck.Agree {
			fails++
		}
	}
	return float64(fails) / float64(reps)
}

// clock with entries following law: their tick counts and exact total.
func checkExperiment(r *rand.Rand, d durDist, x float64, law phaseLaw, m uint64, b int) (Counts, float64) {
	c := Counts{Resolution: 1, HasTicksSq: true}
	var exact float64
	per := m / uint64(b)
	for j := 0; j < b; j++ {
		var t uint64
		for i := uint64(0); i < per; i++ {
			dur := d.draw(r, x)
			k := uint64(math.Floor(law.draw(r) + dur))
			exact += dur
			t += k
			c.TicksSq += k * k
		}
		c.Batches = append(c.Batches, Batch{Calls: per, Ticks: t})
		c.Calls += per
		c.Ticks += t
	}
	return c, exact
}

// TestCheckClockFalseAlarms: with an asynchronous clock the check at 95%
// fails in at most 5% of runs. Asserted per regime over 2000 runs: at
// most 5% + 3.09 binomial standard errors (6.5%), a false alarm of this
// test in 0.1% of regimes for a check at exactly 5%.
func TestCheckClockFalseAlarms(t *testing.T) {
	const reps = 2000
	limit := 0.05 + 3.09*math.Sqrt(0.05*0.95/reps)
	for _, tc := range []struct {
		d durDist
		x float64
		m uint64
	}{
		{distConstant, 0.05, 2000}, {distExponential, 0.05, 20000}, {distConstant, 0.5, 500},
		{distUniform, 1.5, 500}, {distBimodal, 5, 200}, {distExponential, 0.01, 5000},
	} {
		r := rand.New(rand.NewPCG(uint64(tc.m), 17))
		rate := checkFailRate(t, r, reps, func(r *rand.Rand) (Counts, float64) {
			return checkExperiment(r, tc.d, tc.x, phaseAsync, tc.m, 20)
		})
		t.Logf("%v ET/d=%g m=%d: asynchronous clock failed the check in %.2f%% of runs", tc.d, tc.x, tc.m, 100*rate)
		if rate > limit {
			t.Errorf("%v ET/d=%g m=%d: false alarms in %.2f%% of runs, above %.2f%%", tc.d, tc.x, tc.m, 100*rate, 100*limit)
		}
	}
}

// TestCheckClockDetectsCoupling: entries coupled to the tick (the -10%
// bias of phaseCoupled at ET/d = 0.5, 4.5 standard errors with 2000
// checked calls) and a phase-locked loop (a whole tick reported for a
// fortieth of one) fail the check. The coupled regime's power is about
// 0.9; asserted at least 0.8 over 500 runs (5.6 binomial standard errors
// below 0.9, so the test fails by chance far less than once in a million
// runs). The locked loop fails it in every run.
func TestCheckClockDetectsCoupling(t *testing.T) {
	const reps = 500
	for _, tc := range []struct {
		law   phaseLaw
		d     durDist
		x     float64
		m     uint64
		power float64
	}{
		{phaseCoupled, distConstant, 0.5, 2000, 0.8},
		{phaseLocked, distConstant, 0.025, 200, 1},
		{phaseLocked, distExponential, 0.025, 200, 1},
	} {
		r := rand.New(rand.NewPCG(uint64(tc.m), 23))
		rate := checkFailRate(t, r, reps, func(r *rand.Rand) (Counts, float64) {
			return checkExperiment(r, tc.d, tc.x, tc.law, tc.m, 20)
		})
		t.Logf("%v %v ET/d=%g m=%d: the check failed in %.1f%% of runs", tc.law, tc.d, tc.x, tc.m, 100*rate)
		if rate < tc.power {
			t.Errorf("%v %v ET/d=%g m=%d: coupling detected in %.1f%% of runs, want at least %.0f%%", tc.law, tc.d, tc.x, tc.m, 100*rate, 100*tc.power)
		}
	}
}
