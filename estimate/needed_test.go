// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"testing"
)

// forecastRun simulates one run polled every per calls until Reached at
// rel, forecasting the calls still needed at poll at (NeededCalls at
// level, and the earlier forecast n (RelHalfWidth/rel)^2 - n), and returns
// the forecasts with the calls actually still needed then, and the spread
// (max/min) of both forecasts of the total over polls at..stop.
func forecastRun(s *sim, per uint64, at int, rel, level float64) (nd Needed, naive, actual float64, spreadNew, spreadNaive float64) {
	c := Counts{Resolution: 1, HasTicksSq: true}
	var atCalls float64
	minNew, maxNew := math.Inf(1), 0.0
	minNaive, maxNaive := math.Inf(1), 0.0
	for j := 1; j < 100000; j++ {
		t, q := s.batch(per)
		c.Batches = append(c.Batches, Batch{Calls: per, Ticks: t})
		c.Calls += per
		c.Ticks += t
		c.TicksSq += q
		r, err := Time(c, Options{})
		if err != nil {
			panic(err)
		}
		if Reached(r, rel) {
			return nd, naive, float64(c.Calls) - atCalls, maxNew / minNew, maxNaive / minNaive
		}
		if j < at {
			continue
		}
		n := float64(c.Calls)
		f, ok := NeededCalls(r, rel, level)
		if !ok {
			continue
		}
		nv := math.Max(n*(r.RelHalfWidth/rel)*(r.RelHalfWidth/rel)-n, 1)
		if j == at {
			nd, naive, atCalls = f, nv, n
		}
		minNew, maxNew = math.Min(minNew, n+f.Calls), math.Max(maxNew, n+f.Calls)
		minNaive, maxNaive = math.Min(minNaive, n+nv), math.Max(maxNaive, n+nv)
	}
	panic("never reached")
}

// TestNeededCallsForecast: the forecast of the calls still needed for
// ±5%, made at the 5th poll of a run, against the calls the run then
// actually needed, over 400 simulated runs of a coarse clock (ET/d = 0.05,
// exponential durations), with 500 calls per poll (the precision decides
// when the run stops) and 4000 (the MinStopBatches floor decides). The
// 80% range must hold the actual need in at least 70% of runs (the actual
// need is a first passage of a noisy interval, which the range does not
// model; 70% is 4.4 binomial standard errors below 80% at 400 runs, a
// false alarm in 1e-5 of runs), and the forecast of the total must swing
// less over a run than the earlier n (h/rel)^2 forecast (its max/min ratio
// smaller in most runs).
func TestNeededCallsForecast(t *testing.T) {
	const runs, level = 400, 0.8
	for _, per := range []uint64{500, 4000} {
		in, calmer := 0, 0
		var sumNew, sumNaive float64
		for i := 0; i < runs; i++ {
			s := newSim(distExponential, 0.05, false, uint64(300+i))
			nd, _, actual, spNew, spNaive := forecastRun(s, per, 5, 0.05, level)
			if nd.Low <= actual && actual <= nd.High {
				in++
			}
			if spNew < spNaive {
				calmer++
			}
			sumNew += spNew
			sumNaive += spNaive
		}
		cov := float64(in) / runs
		t.Logf("%d calls per poll: the 80%% range held the calls still needed in %.1f%% of %d runs; forecast of the total, max/min over a run: %.2f (earlier forecast %.2f); calmer in %d runs",
			per, 100*cov, runs, sumNew/runs, sumNaive/runs, calmer)
		if cov < 0.7 {
			t.Errorf("%d calls per poll: the 80%% range held the calls still needed in %.1f%% of runs, want at least 70%%", per, 100*cov)
		}
		if calmer < runs/2 {
			t.Errorf("%d calls per poll: the forecast swung less than the earlier one in %d of %d runs only", per, calmer, runs)
		}
	}
}

// TestCallRate: a constant stream has a zero-width interval; a rate from
// one period spans a factor of ten either way.
func TestCallRate(t *testing.T) {
	r, lo, hi := CallRate([]uint64{100, 100, 100}, 0.2, 0.8)
	if r != 500 || lo != 500 || hi != 500 {
		t.Errorf("constant: %v [%v, %v], want 500", r, lo, hi)
	}
	r, lo, hi = CallRate([]uint64{10}, 1, 0.8)
	if r != 10 || lo != 1 || hi != 100 {
		t.Errorf("one period: %v [%v, %v]", r, lo, hi)
	}
	r, lo, hi = CallRate([]uint64{0, 200, 0, 200}, 1, 0.8)
	if r != 100 || !(lo < 100 && hi > 100 && lo >= 10) {
		t.Errorf("bursty: %v [%v, %v]", r, lo, hi)
	}
}
