// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCorrectQuantileBoundedSame checks that the bounds only save work:
// on random histograms of measured durations (from 40 calls to a million,
// geometric buckets, some refined into cells), random overhead
// distributions and levels, and confidences 0.8, 0.95 and 0.99, the
// correction with HistogramBound gives the same interval, to the bit, as
// the one asking dq at every overhead level, while asking it less.
func TestCorrectQuantileBoundedSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 7))
	var asked, askedBounded int
	for run := 0; run < 16; run++ {
		h := randomDurations(rng)
		od := randomOverheads(rng)
		lowest, highest := h.edges[0]+rng.Float64(), h.edges[len(h.edges)-1]-rng.Float64()
		for _, conf := range []float64{0.8, 0.95, 0.99} {
			o := Options{Confidence: conf}
			for _, p := range []float64{0.5, 0.9, 0.99, 0.999, 0.05 + 0.9*rng.Float64()} {
				dq := func(n *int) func(float64) (Quantile, error) {
					return func(l float64) (Quantile, error) {
						*n++
						return QuantileOfHistogram(h, lowest, highest, l, o)
					}
				}
				want, werr := CorrectQuantileByDist(p, dq(&asked), od, 1000, conf)
				got, gerr := CorrectQuantileBounded(p, dq(&askedBounded), HistogramBound(h, lowest, highest, o), od, 1000, conf)
				if (werr == nil) != (gerr == nil) || got != want {
					t.Fatalf("run %d, n %d, p %v, conf %v: bounded %+v (%v), want %+v (%v)", run, h.total(), p, conf, got, gerr, want, werr)
				}
			}
		}
	}
	t.Logf("quantile functions asked: %d, %d with the bounds", asked, askedBounded)
	if askedBounded >= asked {
		t.Errorf("the bounds saved nothing: %d of %d", askedBounded, asked)
	}
}

// randomDurations is a histogram of log-normal durations around 1-2 us in
// 16 buckets a power of two, from 40 to a million calls, with the buckets
// around the middle refined into cells a quarter of the time.
func randomDurations(rng *rand.Rand) refHist {
	n := int(40 * math.Pow(25000, rng.Float64()))
	const per, top = 16, 16 * 24
	h := refHist{counts: make([]uint64, top), edges: make([]float64, top+1), cells: map[int][2][]Cell{}}
	for i := range h.edges {
		h.edges[i] = math.Pow(2, float64(i)/per)
	}
	mu, sigma := math.Log(1000+1000*rng.Float64()), 0.1+rng.Float64()
	for range n {
		x := math.Exp(mu + sigma*rng.NormFloat64())
		i := min(max(int(math.Log2(x)*per), 0), top-1)
		h.counts[i]++
	}
	if rng.IntN(4) == 0 {
		for i, c := range h.counts {
			if c < 8 || rng.IntN(3) != 0 {
				continue
			}
			lo, hi := h.edges[i], h.edges[i+1]
			w := (hi - lo) / 4
			var cells []Cell
			left := c - c/4 // a quarter unrefined
			for k := 0; k < 4 && left > 0; k++ {
				m := left / uint64(4-k)
				cells = append(cells, Cell{Lo: lo + float64(k)*w, Hi: lo + float64(k+1)*w, N: m})
				left -= m
			}
			h.cells[i] = [2][]Cell{cells, cells}
		}
	}
	return h
}

func (h refHist) total() uint64 {
	var n uint64
	for _, c := range h.counts {
		n += c
	}
	return n
}

// randomOverheads is an overhead distribution of 100 to 2,100 echoed
// calls: a bulk near 1 us and a long tail to milliseconds, in 25 ns
// buckets, with a few batch medians.
func randomOverheads(rng *rand.Rand) OverheadDist {
	n := 100 + rng.IntN(2000)
	xs := make([]float64, n)
	for i := range xs {
		x := 900 + 150*rng.NormFloat64()
		if rng.Float64() < 0.05 {
			x += 1000 * math.Exp(4*rng.Float64())
		}
		xs[i] = 25 * math.Ceil(math.Max(0, x)/25)
	}
	od := OverheadDist{Hist: bucketsOf(xs), N: uint64(n), Error: 50 * rng.Float64()}
	for range rng.IntN(4) {
		od.BatchMedians = append(od.BatchMedians, 850+100*rng.Float64())
	}
	return od
}

// TestHistogramQuantileValueSame: the point estimate without the rank
// tables is QuantileOfHistogram's, to the bit, on random histograms and
// levels (refined ones among them), and its errors are the same.
func TestHistogramQuantileValueSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 25))
	for run := 0; run < 60; run++ {
		h := randomDurations(rng)
		lowest, highest := h.edges[0]+rng.Float64(), h.edges[len(h.edges)-1]-rng.Float64()
		o := Options{Confidence: []float64{0, 0.8, 0.95, 0.99}[rng.IntN(4)]}
		for _, p := range []float64{0.5, 0.9, 0.99, 0.999, 0.9999, rng.Float64(), 0, 1} {
			q, werr := QuantileOfHistogram(h, lowest, highest, p, o)
			v, err := HistogramQuantileValue(h, lowest, highest, p, o)
			if (err == nil) != (werr == nil) || (err == nil && v != q.Value) {
				t.Fatalf("run %d, n %d, p %v: %v (%v), want %v (%v)", run, h.total(), p, v, err, q.Value, werr)
			}
		}
	}
}
