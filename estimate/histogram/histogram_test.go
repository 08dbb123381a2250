// SPDX-License-Identifier: Apache-2.0

package histogram

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// TestLayout checks that the buckets tile [0, 2^64) without gaps, that
// Index inverts Bounds at both edges of every bucket, and the width bound.
func TestLayout(t *testing.T) {
	if Buckets != 529 {
		t.Errorf("Buckets = %d, want 529 (the BPF map's value size depends on it)", Buckets)
	}
	var next uint64
	maxRel, maxRel4k, maxSpan, sumOct := 0.0, 0.0, 0.0, 0.0
	for i := 0; i < Buckets; i++ {
		lo, hi := Bounds(i)
		if lo != next || hi <= lo {
			t.Fatalf("bucket %d is [%d, %d), want it to start at %d and be non-empty", i, lo, hi, next)
		}
		if Index(lo) != i || Index(hi-1) != i {
			t.Fatalf("bucket %d [%d, %d): Index(lo) = %d, Index(hi-1) = %d", i, lo, hi, Index(lo), Index(hi-1))
		}
		if i != Buckets-1 && lo >= Exact {
			// The whole ns a bucket holds lie within 4.45% of its
			// smallest; its width is within 4.5% of it from 1024 ns
			// up and within 4.45% from 4096 ns up.
			maxSpan = math.Max(maxSpan, float64(hi-1-lo)/float64(lo))
			rel := float64(hi-lo) / float64(lo)
			if lo >= 1024 {
				maxRel = math.Max(maxRel, rel)
			}
			if lo >= 4096 {
				maxRel4k = math.Max(maxRel4k, rel)
			}
			if bits.Len64(lo)-1 == 20 {
				sumOct += float64(hi-lo) / (float64(hi+lo) / 2)
			}
		}
		next = hi
	}
	if next != math.MaxUint64 {
		t.Errorf("the last bucket ends at %d", next)
	}
	// 2^(1/16) - 1 = 4.427%, and the rounding of T to 13 bits adds at
	// most 2^-12 relative (below 4096 ns, the rounding to whole ns more).
	if maxRel4k > 0.0445 || maxRel4k < 0.0442 {
		t.Errorf("largest relative width from 4096 ns up %.5f, want 4.42%%..4.45%%", maxRel4k)
	}
	if maxRel > 0.045 {
		t.Errorf("largest relative width from 1024 ns up %.5f, want at most 4.5%%", maxRel)
	}
	if maxSpan > 0.0445 {
		t.Errorf("largest relative span of a bucket's durations %.5f, want at most 4.45%%", maxSpan)
	}
	// Averaged over an octave, width / middle is about ln 2 / 16 = 4.3%.
	if m := sumOct / Sub; math.Abs(m-math.Ln2/Sub) > 0.0005 {
		t.Errorf("mean relative width over an octave %.5f, want about %.5f", m, math.Ln2/Sub)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for j := 0; j < 100000; j++ {
		v := r.Uint64() >> r.IntN(64)
		lo, hi := Bounds(Index(v))
		if v < lo || (v >= hi && hi != math.MaxUint64) {
			t.Fatalf("%d outside its bucket [%d, %d)", v, lo, hi)
		}
	}
}

// TestThresholds recomputes the sub-bucket thresholds round(4096 2^(j/16)).
func TestThresholds(t *testing.T) {
	for j, v := range T {
		if w := uint64(math.Round(math.Ldexp(math.Exp2(float64(j)/Sub), MantBits))); v != w {
			t.Errorf("T[%d] = %d, want %d", j, v, w)
		}
	}
}

// TestMergeAndQuantile: per-CPU copies merge into the histogram of all
// the durations, and its quantile interval is the samples' interval widened
// to buckets.
func TestMergeAndQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var cpu [3]Hist
	var all Hist
	xs := make([]float64, 0, 20000)
	for j := 0; j < 20000; j++ {
		v := uint64(5000 * math.Exp(r.NormFloat64()))
		cpu[r.IntN(3)].Add(v)
		all.Add(v)
		xs = append(xs, float64(v))
	}
	var m Hist
	for i := range cpu {
		m.Merge(&cpu[i])
	}
	if m != all {
		t.Fatal("merged per-CPU histograms differ from the histogram of all durations")
	}
	for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
		qh, err := m.Quantile(p, estimate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		qs, err := estimate.QuantileOfSamples(xs, p, estimate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lo, _ := Round(qs.Low, qs.Low)
		_, hi := Round(qs.High, qs.High)
		lo, hi = math.Max(lo, float64(m.Min)), math.Min(hi, float64(m.Max))
		if qh.Low != lo || qh.High != hi || !(qh.Low <= qs.Value && qs.Value <= qh.High) {
			t.Errorf("p=%v: histogram [%v, %v], samples [%v, %v] (%v)", p, qh.Low, qh.High, qs.Low, qs.High, qs.Value)
		}
		if qf := m.Quantiles(); math.Abs(qf(p)/qs.Value-1) > 1.0/Sub {
			t.Errorf("p=%v: interpolated quantile %v, sample quantile %v", p, qf(p), qs.Value)
		}
	}
	// Durations beyond the last regular bucket keep an interval up to the
	// observed maximum.
	var big Hist
	for j := 0; j < 1000; j++ {
		big.Add(1<<40 + uint64(j))
	}
	q, err := big.Quantile(0.5, estimate.Options{})
	if err != nil || q.Low != 1<<40 || q.High != 1<<40+999 {
		t.Errorf("overflow bucket: %+v %v", q, err)
	}
}

// TestStopForecast checks the forecast `time` shows for a quantile goal:
// lognormal durations (shape 1) arrive in batches of 500 into a Hist,
// QuantileStop looks as `time` does, and at every look the forecast is the
// rule's CallsToStop on the plan from the histogram so far
// (Hist.PlanQuantile). Over 200 runs per goal, the median of forecast /
// actual stopping calls must lie in [0.8, 1.25], at the first forecast and
// at the look halfway to the stop; the quartiles are logged.
func TestStopForecast(t *testing.T) {
	for _, c := range []struct{ p, rel float64 }{{0.5, 0.05}, {0.99, 0.1}} {
		r := rand.New(rand.NewPCG(11, uint64(100*c.p)))
		var first, half []float64
		for rep := 0; rep < 200; rep++ {
			var h Hist
			stop := estimate.QuantileStop{Rel: c.rel}
			type look struct{ n, forecast uint64 }
			var looks []look
			n := uint64(0)
			for {
				for j := 0; j < 500; j++ {
					h.Add(uint64(10000 * math.Exp(r.NormFloat64())))
				}
				n += 500
				if !stop.Due(n) {
					continue
				}
				q, err := h.Quantile(c.p, estimate.Options{})
				if err != nil {
					t.Fatal(err)
				}
				done := stop.Check(q)
				if pl, err := h.PlanQuantile(c.p, c.rel, estimate.Options{}); err == nil && !done {
					looks = append(looks, look{n, stop.CallsToStop(n, pl.Calls)})
				}
				if done {
					break
				}
			}
			if len(looks) == 0 {
				continue
			}
			first = append(first, float64(looks[0].forecast)/float64(n))
			for _, l := range looks {
				if l.n >= n/2 {
					half = append(half, float64(l.forecast)/float64(n))
					break
				}
			}
		}
		for _, f := range []struct {
			name string
			xs   []float64
		}{{"first forecast", first}, {"halfway", half}} {
			sort.Float64s(f.xs)
			m := len(f.xs)
			med := f.xs[m/2]
			t.Logf("p%g ±%g%%: %s / actual stop: quartiles %.2f %.2f %.2f (%d runs)", 100*c.p, 100*c.rel, f.name, f.xs[m/4], med, f.xs[3*m/4], m)
			if med < 0.8 || med > 1.25 {
				t.Errorf("p%g ±%g%%: median %s / actual %.2f, want 0.8..1.25", 100*c.p, 100*c.rel, f.name, med)
			}
		}
	}
}
