// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
)

// cannotReach is a cheap test that Time(c) is still wider than rel: the
// reported interval is the widest candidate, at least as wide as the
// observed-variance or batch-means one computed with the normal quantile
// (below Student's t). It only saves the simulation time.
func cannotReach(c Counts, rel float64) bool {
	n, s := float64(c.Calls), float64(c.Ticks)
	m := s / n
	z := zQuantile(0.95)
	var lb float64
	if c.HasTicksSq {
		v, _ := sampleVar(c.Calls, c.Ticks, new(big.Int).SetUint64(c.TicksSq))
		lb = z * math.Sqrt(v/n)
	}
	if b := float64(len(c.Batches)); b >= 2 {
		se := math.Sqrt(b/(b-1)*residualSS(c.Batches, m)) / n
		lb = math.Max(lb, z*se)
	}
	return lb > rel*m*1.0001
}

// seqRegime is a regime run under the sequential stopping rule.
type seqRegime struct {
	dist       durDist
	x          float64
	contiguous bool
}

// TestSequentialCoverage runs experiments that check Reached after every
// batch and stop at the first success, as `tickprof time --precision 5%`
// does, and checks that the stopped 95% interval still covers the truth in
// at least 93.5% of the replications.
func TestSequentialCoverage(t *testing.T) {
	const rel = 0.05
	reps := 2000
	regimes := []seqRegime{
		{distConstant, 0.1, false},
		{distConstant, 1.5, false},
		{distUniform, 0.5, false},
		{distExponential, 0.01, false},
		{distExponential, 5, false},
		{distBimodal, 0.9, false},
		{distBimodal, 20, false},
		{distExponential, 0.5, true},
		{distUniform, 5, true},
	}
	type seqOut struct {
		covered, reps, capped int
		calls, batches        float64
	}
	outs := make([]seqOut, len(regimes))
	parallel(len(regimes), func(i int) {
		g := regimes[i]
		s := newSim(g.dist, g.x, g.contiguous, uint64(5000+i))
		// Calls per batch: the planned total over about 150 batches, so the
		// rule gets many chances to stop on a lucky fluctuation.
		perCall := s.vc
		if g.contiguous {
			perCall = g.dist.variance(g.x) + 1.0/6
		}
		need := 1537 * perCall / (g.x * g.x)
		per := uint64(math.Max(1, math.Round(need/150)))
		o := seqOut{reps: reps}
		for rep := 0; rep < reps; rep++ {
			c := Counts{Resolution: 1, Contiguous: g.contiguous, HasTicksSq: !g.contiguous}
			pos := s.rng.Float64()
			var r Result
			for b := 1; ; b++ {
				s.addBatch(&c, &pos, per)
				if b < MinStopBatches || c.Ticks < MinStopEvents || cannotReach(c, rel) {
					continue // Reached cannot hold yet
				}
				var err error
				r, err = Time(c, Options{})
				if err != nil {
					t.Errorf("Time: %v", err)
					return
				}
				if Reached(r, rel) {
					break
				}
				if b == 4000 {
					o.capped++
					break
				}
			}
			if r.Low <= g.x && g.x <= r.High {
				o.covered++
			}
			o.calls += float64(c.Calls)
			o.batches += float64(len(c.Batches))
		}
		outs[i] = o
	})
	var tab strings.Builder
	fmt.Fprintf(&tab, "coverage of the 95%% interval when stopping at the first batch with rel. half-width <= %g, %d replications:\n", rel, reps)
	fmt.Fprintf(&tab, "%-36s %8s %10s %8s %6s\n", "regime", "coverage", "mean calls", "batches", "capped")
	for i, g := range regimes {
		o := outs[i]
		cov := float64(o.covered) / float64(o.reps)
		mode := "separated"
		if g.contiguous {
			mode = "contiguous"
		}
		name := fmt.Sprintf("%-11s ET/d=%-5g %s", g.dist, g.x, mode)
		flag := ""
		if cov < 0.935 {
			flag = "  LOW"
			t.Errorf("%s: coverage %.2f%% under sequential stopping, below 93.5%%", name, 100*cov)
		}
		if o.capped > 0 {
			t.Errorf("%s: %d replications never reached %g", name, o.capped, rel)
		}
		fmt.Fprintf(&tab, "%-36s %7.2f%% %10.0f %8.1f %6d%s\n", name, 100*cov, o.calls/float64(o.reps), o.batches/float64(o.reps), o.capped, flag)
	}
	t.Log(tab.String())
}

// TestContiguousPerCall checks the contiguous interval built from per-call
// counters alone (sum c, sum c^2, no batches), simulated call by call:
// back-to-back calls on one random clock phase.
func TestContiguousPerCall(t *testing.T) {
	const reps = 2000
	const n = 1000
	var tab strings.Builder
	tab.WriteString("contiguous calls with per-call counters only, n = 1000:\n")
	for i, g := range []struct {
		d durDist
		x float64
	}{{distExponential, 0.5}, {distUniform, 1.5}, {distBimodal, 5}, {distExponential, 20}, {distUniform, 0.1}} {
		s := newSim(g.d, g.x, true, uint64(9000+i))
		covered := 0
		for rep := 0; rep < reps; rep++ {
			c := Counts{Resolution: 1, Calls: n, HasTicksSq: true, Contiguous: true}
			pos := s.rng.Float64()
			for j := 0; j < n; j++ {
				end := pos + g.d.draw(s.rng, g.x)
				k := uint64(math.Floor(end) - math.Floor(pos))
				c.Ticks += k
				c.TicksSq += k * k
				pos = end
			}
			r, err := Time(c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Low <= g.x && g.x <= r.High {
				covered++
			}
		}
		cov := float64(covered) / float64(reps)
		fmt.Fprintf(&tab, "%-11s ET/d=%-5g %7.2f%%\n", g.d, g.x, 100*cov)
		if cov < 0.935 {
			t.Errorf("%v ET/d=%v: coverage %.2f%% below 93.5%%", g.d, g.x, 100*cov)
		}
	}
	t.Log(tab.String())
}
