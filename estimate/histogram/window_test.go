// SPDX-License-Identifier: Apache-2.0

package histogram

import (
	"math/rand/v2"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// binOf is BPF's bin of d in w (bpf/qhist.h, tp_qr_add), as a pool index.
func binOf(w Window, d uint64) int {
	switch {
	case d < w.A:
		return w.Off
	case d-w.A >= w.Span:
		return w.End()
	}
	return w.Off + 1 + int(((d-w.A)*uint64(w.Mul))>>31)
}

// TestWindowsFitAndMatchBPF: the Refiner's windows for histograms of
// several laws fit the BPF tables (slots, bins, spans below 2^32), use
// disjoint pool ranges, and AddWindow puts every duration of a bucket in
// the cell holding it, the cell BPF's bin formula names.
func TestWindowsFitAndMatchBPF(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range simLaws {
		var h Hist
		for range 20000 {
			h.Add(uint64(l.quantile(r.Float64())))
		}
		ws := Refiner{Levels: []float64{0.5, 0.9, 0.99, 0.999}}.Windows(&h)
		if len(ws) == 0 || len(ws) > RefineSlots {
			t.Fatalf("%s: %d windows", l.name, len(ws))
		}
		used := make([]bool, RefineBins)
		for _, w := range ws {
			lo, hi := Bounds(w.Bucket)
			if w.Bucket >= Buckets-1 || w.Span >= 1<<32 || w.End() >= RefineBins || w.A+w.Span < lo || w.A >= hi {
				t.Fatalf("%s: window %+v of bucket [%d, %d) does not fit", l.name, w, lo, hi)
			}
			for k := w.Off; k <= w.End(); k++ {
				if used[k] {
					t.Fatalf("%s: pool bin %d used twice", l.name, k)
				}
				used[k] = true
			}
			// Each duration of the bucket lands, by BPF's formula, in the
			// bin whose cell AddWindow makes holds it.
			for d := lo; d < hi; d += max(1, (hi-lo)/500) {
				pool := make([]uint64, RefineBins)
				pool[binOf(w, d)]++
				var f Fine
				f.AddWindow(w, pool)
				h2 := Hist{Fine: &f}
				byLo, _ := h2.Cells(w.Bucket)
				if len(byLo) != 1 || byLo[0].Lo > float64(d) || byLo[0].Hi <= float64(d) || byLo[0].Lo < float64(lo) || byLo[0].Hi > float64(hi) {
					t.Fatalf("%s: %d ns of bucket [%d, %d) in window %+v: cells %v", l.name, d, lo, hi, w, byLo)
				}
			}
		}
	}
}

// TestRefinedHistQuantile: a Hist with Fine, refined from its 500th call
// on, bounds the same order statistics as the exact durations do (its
// interval holds the samples' one) and to within 0.3% of the median
// (bins of 2-4 ns at 10 us; the calls before the refinement, 1.25%, are
// known only to their bucket).
func TestRefinedHistQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	l := simLaws[0]
	var h Hist
	h.Fine = &Fine{}
	var ws []Window
	var xs []float64
	for i := 1; i <= 40000; i++ {
		d := uint64(l.quantile(r.Float64()))
		h.Add(d)
		xs = append(xs, float64(d))
		for _, w := range ws {
			if w.Bucket == Index(d) {
				pool := make([]uint64, RefineBins)
				pool[binOf(w, d)]++
				h.Fine.AddWindow(w, pool)
			}
		}
		if i == 500 || i%5000 == 0 {
			ws = Refiner{Levels: []float64{0.5}}.Windows(&h)
		}
	}
	q, err := h.Quantile(0.5, estimate.Options{})
	e, err2 := estimate.QuantileOfSamples(xs, 0.5, estimate.Options{})
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	tol := 0.003 * e.Value
	if q.Low > e.Low || q.High < e.High || q.Low < e.Low-tol || q.High > e.High+tol {
		t.Errorf("refined [%v, %v], from the durations [%v, %v]: want it around them, within %.0f ns", q.Low, q.High, e.Low, e.High, tol)
	}
}
