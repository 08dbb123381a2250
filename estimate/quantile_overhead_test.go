// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCorrectQuantileArithmetic: the interval shift, the point estimate,
// truncation at zero, and one-sided bounds.
func TestCorrectQuantileArithmetic(t *testing.T) {
	o := Result{Mean: 1800, Low: 1770, High: 1830}
	q := Quantile{P: 0.99, Value: 12000, ValueLow: 11900, ValueHigh: 12100, Low: 11000, High: 13500}
	c, err := CorrectQuantile(q, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Low != 11000-1830 || c.High != 13500-1770 || c.Value != 12000-1800 || c.ValueLow != 11900-1830 || c.ValueHigh != 12100-1770 || !c.Corrected {
		t.Errorf("corrected %+v", c)
	}
	// An interval reaching below the overhead is truncated at 0.
	c, _ = CorrectQuantile(Quantile{P: 0.5, Value: 1850, Low: 1700, High: 2000}, o)
	if c.Low != 0 || c.High != 230 || c.Value != 50 {
		t.Errorf("truncated: %+v", c)
	}
	// Too few calls: the one-sided bound moves, the open end stays.
	c, _ = CorrectQuantile(Quantile{P: 0.999, TooFew: true, Low: 5000, High: math.Inf(1), Value: 6000}, o)
	if c.Low != 5000-1830 || !math.IsInf(c.High, 1) {
		t.Errorf("one-sided: %+v", c)
	}
	if _, err := CorrectQuantile(q, Result{Mean: 10, Low: 20, High: 30}); err == nil {
		t.Error("an overhead outside its interval accepted")
	}
	// A corrected quantile is not compared with a measured one.
	q.Calls, q.Confidence = 1000, 0.95
	c, _ = CorrectQuantile(q, o)
	if _, err := QuantileDiff(q, c); err == nil {
		t.Error("QuantileDiff compared a corrected quantile with a measured one")
	}
}

// TestCorrectQuantileCoverage is the Monte Carlo coverage of corrected
// quantile intervals: calls of lognormal or Pareto durations Y plus a probe
// overhead c, calibrated separately as a 95% normal interval with a
// standard error of 15 ns around c. At n = 1000 the calls are drawn and
// the overhead varies by ±20 ns from call to call (uniform around c =
// 1800 ns); at n = 10^4 and 10^5 the order statistics are drawn directly
// (simQuantile) and c is the same on every call of a run but drawn anew
// for each run (normal, mean 1800 ns, sd 50 ns).
//
// The corrected interval must hold ξ_p(Y) in 93.5%..97.5% of the
// replications (tolerance: covReps) where the overhead's interval is
// narrow against the quantile's (half-width at most a tenth of the
// quantile interval's mean half-width). Where it is not, the shift adds
// the overhead interval's whole width to the quantile's (the shift is
// the sound combination whatever the dependence, not the tightest), and
// the coverage rises toward 100%: only the floor applies. The uncorrected
// interval, off by the overhead, must miss the median almost always (the
// test can fail).
func TestCorrectQuantileCoverage(t *testing.T) {
	const c0, jitter, se = 1800.0, 20.0, 15.0
	type cell struct {
		d qdist
		p float64
		n uint64
	}
	var grid []cell
	for _, d := range []qdist{qdists[0], qdists[2]} {
		for _, p := range []float64{0.5, 0.9, 0.99} {
			for _, n := range []uint64{1000, 10000, 100000} {
				grid = append(grid, cell{d, p, n})
			}
		}
	}
	type res struct {
		covered, raw, given int
		halfWidth           float64
	}
	outs := make([]res, len(grid))
	hw := zQuantile(0.95) * se
	parallelSeeded(len(grid), 900, 17, func(i int, src *rand.PCG, r *rand.Rand) {
		c := grid[i]
		truth := c.d.qf(c.p)
		rk, _ := QuantileRanks(c.n, c.p, Options{})
		xs := make([]float64, min(c.n, 1000))
		for rep := 0; rep < covReps; rep++ {
			var q Quantile
			var err error
			cTrue := c0
			if c.n <= 1000 {
				for k := range xs {
					xs[k] = math.Round(c.d.draw(r) + c0 + jitter*(2*r.Float64()-1))
				}
				q, err = QuantileOfSamples(xs, c.p, Options{})
			} else {
				cTrue = c0 + 50*r.NormFloat64()
				d := c.d
				d.qf = func(u float64) float64 { return c.d.qf(u) + cTrue }
				q, err = simQuantile(r, src, qcell{d, c.p, c.n, false}, rk)
			}
			if err != nil || q.TooFew {
				continue
			}
			m := cTrue + se*r.NormFloat64()
			cq, err := CorrectQuantile(q, Result{Mean: m, Low: m - hw, High: m + hw})
			if err != nil {
				t.Error(err)
				return
			}
			outs[i].given++
			outs[i].halfWidth += (q.High - q.Low) / 2
			if cq.Low <= truth && truth <= cq.High {
				outs[i].covered++
			}
			if q.Low <= truth && truth <= q.High {
				outs[i].raw++
			}
		}
	})
	var tab strings.Builder
	fmt.Fprintf(&tab, "coverage of corrected 95%% quantile intervals (overhead about %.0f ns, calibrated with %.0f ns se), %d replications:\n", c0, se, covReps)
	for i, c := range grid {
		o := outs[i]
		cov := float64(o.covered) / float64(o.given)
		raw := float64(o.raw) / float64(o.given)
		qhw := o.halfWidth / float64(o.given)
		floorOnly := hw > qhw/10
		flag := ""
		if floorOnly {
			flag = "  (overhead interval not narrow: floor only)"
		}
		fmt.Fprintf(&tab, "%-9s p=%-4g n=%-6d corrected %6.2f%%  uncorrected %6.2f%%  quantile ±%6.0f ns, overhead ±%.0f ns%s\n", c.d.name, c.p, c.n, 100*cov, 100*raw, qhw, hw, flag)
		if o.given < covReps || cov < qcovLow || (cov > qcovHigh && !floorOnly) {
			t.Errorf("%s p=%v n=%d: corrected coverage %.2f%% (%d given), want 93.5%%..97.5%%", c.d.name, c.p, c.n, 100*cov, o.given)
		}
		if c.p == 0.5 && raw > 0.05 {
			t.Errorf("%s p=%v n=%d: the uncorrected interval covers %.2f%%: the test cannot tell a correction from none", c.d.name, c.p, c.n, 100*raw)
		}
	}
	t.Log(tab.String())
}
