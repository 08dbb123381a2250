// SPDX-License-Identifier: Apache-2.0

package export

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
)

// correlatedWindows are m windows of a target whose calls share a
// per-window slowdown f_j (lognormal, mean 1, log-sd sigma): durations
// et f_j Exp(1) ns, ns clock. The mean per call is et.
func correlatedWindows(t *testing.T, r *rand.Rand, m int, et, sigma float64) ([]*profile.Profile, []estimate.Batch) {
	var ps []*profile.Profile
	var bs []estimate.Batch
	for j := 0; j < m; j++ {
		f := math.Exp(sigma*r.NormFloat64() - sigma*sigma/2)
		tg := TimeWindowTarget{Name: "main.work"}
		calls := 100 + r.IntN(201)
		for k := 0; k < calls; k++ {
			c := uint64(et * f * r.ExpFloat64())
			tg.Calls++
			tg.Ticks += c
			tg.TicksSq += c * c
		}
		bs = append(bs, estimate.Batch{Calls: tg.Calls, Ticks: tg.Ticks})
		p, err := EncodeTimeWindow(&TimeWindow{Clock: "ns", Resolution: 1, Confidence: 0.95,
			Start: time.Unix(1700000000+int64(10*j), 0), Duration: 10 * time.Second, Targets: []TimeWindowTarget{tg}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps, bs
}

// TestWindowBatchMeansCoverage runs 1000 merges of 20 windows each at
// 95% confidence, in two scenarios:
//
//   - independent calls (sigma 0): the merged interval (the widest of the
//     per-call and window batch-means ones) must cover the mean per call
//     at the nominal 95%: fewer than 927 covers has probability about 5e-4
//     under binomial(1000, 0.95);
//   - calls slow or fast together within a window (sigma 0.5): the
//     per-call interval collapses (it must cover below 80%, or the scenario
//     tests nothing), and the window batch-means interval carries the
//     report. A ratio estimator's t interval over m clusters is
//     approximate (Cochran 6.8, bias O(1/m)): over 2000 runs it covered
//     91.9% here (94% at sigma 0.25, 94% with 60 windows at sigma 0.5).
//     The test holds it to the documented 90%: fewer than 869 covers has
//     probability about 5e-4 under binomial(1000, 0.90).
func TestWindowBatchMeansCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 8))
	const et, reps = 5000.0, 1000
	for _, c := range []struct {
		sigma    float64
		min      int
		batching bool
	}{{0, 927, false}, {0.5, 869, true}} {
		var covered, iid, batched int
		for k := 0; k < reps; k++ {
			ps, _ := correlatedWindows(t, r, 20, et, c.sigma)
			row := mergedRow(t, ps, "main.work")
			if row.Method == "window-batch-means" {
				batched++
			}
			if row.Low <= et && et <= row.High {
				covered++
			}
			e, err := estimate.Time(estimate.Counts{Resolution: 1, Calls: row.Calls, Ticks: row.Ticks, TicksSq: sumTicksSq(ps), HasTicksSq: true}, estimate.Options{Confidence: 0.95})
			if err != nil {
				t.Fatal(err)
			}
			if e.Low <= et && et <= e.High {
				iid++
			}
		}
		t.Logf("sigma %v: merged interval covers %.0f ns in %d/%d runs (window batch means in %d), the per-call interval in %d",
			c.sigma, et, covered, reps, batched, iid)
		if covered < c.min {
			t.Errorf("sigma %v: merged intervals cover the mean in %d of %d runs, want at least %d", c.sigma, covered, reps, c.min)
		}
		if c.batching && (iid > reps*8/10 || batched < reps*9/10) {
			t.Errorf("sigma %v: per-call interval covers in %d runs, window batch means reported in %d: the scenario does not test batch means", c.sigma, iid, batched)
		}
	}
}

func sumTicksSq(ps []*profile.Profile) uint64 {
	var q uint64
	for _, p := range ps {
		for _, s := range p.Sample {
			q += uint64(s.Value[3])
		}
	}
	return q
}

// TestWindowBatchUnits: windows whose ticks and calls are far beyond 2^20
// (10 s of 1 ms calls on a 1 ns clock, 1000 windows) merge without
// overflow, and the merged batch-means interval equals the one computed
// in floating point from the windows' exact counts to 1e-5.
func TestWindowBatchUnits(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	var ps []*profile.Profile
	var bs []estimate.Batch
	for j := 0; j < 1000; j++ {
		n := uint64(5000 + r.IntN(10000))
		s := uint64(float64(n) * 1e6 * (0.8 + 0.4*r.Float64()))
		bs = append(bs, estimate.Batch{Calls: n, Ticks: s})
		p, err := EncodeTimeWindow(&TimeWindow{Clock: "ns", Resolution: 1, Start: time.Unix(1700000000+int64(10*j), 0), Duration: 10 * time.Second,
			Targets: []TimeWindowTarget{{Name: "f", Calls: n, Ticks: s, TicksSq: s / n * s}}})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	row := mergedRow(t, ps, "f")
	lo, hi := windowBatchMeans(bs, 1, 0.95)
	if row.Method != "window-batch-means" || math.Abs(row.Low-lo) > 1e-5*lo || math.Abs(row.High-hi) > 1e-5*hi {
		t.Errorf("merged %s [%v, %v], exact counts [%v, %v]", row.Method, row.Low, row.High, lo, hi)
	}
}
