// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestWindowStatsMatch checks that the streamed statistics give WindowedTime's
// estimate on all the windows: the same means, intervals, batches and
// methods to floating-point rounding, for the exact and a quantized clock,
// duties below and above a half (windows merged into batches), from 2 to
// 2,000 windows, on the simulation's workloads.
func TestWindowStatsMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for _, l := range wloads {
		for _, duty := range []float64{0.05, 0.4, 0.8, 1} {
			for _, m := range []int{2, 3, 29, 59, 60, 61, 97, 128, 500, 2000} {
				l := l
				l.windows = m
				c := windowedRun(r, l, duty, ruleEntry)
				for _, res := range []float64{0, 0.25} {
					ws := c.Windows
					if res > 0 {
						ws = quantize(r, ws, res)
					}
					name := fmt.Sprintf("%s/duty%.2f/m%d/res%g", l.name, duty, m, res)
					var s WindowStats
					for _, w := range ws {
						if err := s.Add(w); err != nil {
							t.Fatalf("%s: %v", name, err)
						}
					}
					want, werr := WindowedTime(WindowedCounts{Windows: ws, Elapsed: c.Elapsed, Resolution: res}, Options{})
					got, gerr := s.Windowed(c.Elapsed, res, Options{})
					if (werr == nil) != (gerr == nil) {
						t.Fatalf("%s: errors %v and %v", name, werr, gerr)
					}
					matchWindowed(t, name, got, want)
				}
			}
		}
	}
}

// quantize gives each window's calls ticks of res: each call's duration
// crosses floor(D/res) or one more tick lines, at a random phase.
func quantize(r *rand.Rand, ws []Window, res float64) []Window {
	out := make([]Window, len(ws))
	for i, w := range ws {
		w.Ticks = 0
		if w.Calls > 0 {
			per := w.Sum / float64(w.Calls)
			for range w.Calls {
				w.Ticks += uint64(math.Floor(per/res + r.Float64()))
			}
		}
		out[i] = w
	}
	return out
}

func matchWindowed(t *testing.T, name string, got, want Windowed) {
	t.Helper()
	near := func(a, b float64) bool {
		if math.IsInf(a, 0) || math.IsInf(b, 0) {
			return a == b
		}
		return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
	}
	for _, p := range []struct {
		what string
		a, b Result
	}{{"mean", got.Mean, want.Mean}, {"rate", got.Rate, want.Rate}} {
		a, b := p.a, p.b
		if !near(a.Mean, b.Mean) || !near(a.Low, b.Low) || !near(a.High, b.High) || !near(a.StdErr, b.StdErr) ||
			a.Method != b.Method || a.Batches != b.Batches || a.Calls != b.Calls || len(a.Candidates) != len(b.Candidates) {
			t.Errorf("%s %s: streamed %v [%v, %v] se %v %s %d batches, all windows %v [%v, %v] se %v %s %d batches",
				name, p.what, a.Mean, a.Low, a.High, a.StdErr, a.Method, a.Batches, b.Mean, b.Low, b.High, b.StdErr, b.Method, b.Batches)
		}
	}
	if got.Windows != want.Windows || !near(got.Duty, want.Duty) || !near(got.Probed, want.Probed) || !near(got.Attached, want.Attached) {
		t.Errorf("%s: streamed %+v, all windows %+v", name, got, want)
	}
}

// TestWindowStatsBounded adds a million windows: the statistics keep
// log2(windows)+1 levels of fixed size, and the heap does not grow with
// the windows added (a slice of them would take 48 MB).
func TestWindowStatsBounded(t *testing.T) {
	var s WindowStats
	r := rand.New(rand.NewPCG(1, 2))
	add := func(k int) {
		for range k {
			n := uint64(r.IntN(100))
			if err := s.Add(Window{Length: 5e7, Drain: 1e6, Calls: n, Sum: float64(n) * (1000 + 100*r.NormFloat64())}); err != nil {
				t.Fatal(err)
			}
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	add(1 << 10)
	before := heap()
	add(1 << 20)
	after := heap()
	if s.Levels() != 21 {
		t.Errorf("%d levels after %d windows, want 21", s.Levels(), s.Windows())
	}
	if after > before+64<<10 {
		t.Errorf("heap grew from %d to %d bytes over a million windows", before, after)
	}
	w, err := s.Windowed(1e20, 0, Options{})
	if err != nil || !(w.Mean.Low < 1000 && 1000 < w.Mean.High) || w.Mean.Batches != s.Windows()-countEmpty(&s) {
		t.Errorf("estimate %+v, %v", w.Mean, err)
	}
}

// countEmpty is the number of windows without calls (level 0 has one
// batch per window).
func countEmpty(s *WindowStats) int { return s.levels[0].batches - s.levels[0].full }
