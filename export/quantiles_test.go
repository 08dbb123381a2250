// SPDX-License-Identifier: Apache-2.0

package export

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
)

func testHist(n int, scale float64) *histogram.Hist {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	h := &histogram.Hist{}
	for i := 0; i < n; i++ {
		h.Add(uint64(scale * math.Exp(0.5*r.NormFloat64())))
	}
	return h
}

func quantilesOf(t *testing.T, h *histogram.Hist, ps ...float64) []estimate.Quantile {
	t.Helper()
	var qs []estimate.Quantile
	for _, p := range ps {
		q, err := h.Quantile(p, estimate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}

func TestQuantileCells(t *testing.T) {
	h := testHist(500, 20000)
	qs := quantilesOf(t, h, 0.5, 0.9, 0.99, 0.999)
	if got := QuantileName(0.999); got != "p99.9" {
		t.Errorf("QuantileName(0.999) = %q", got)
	}
	if c := QuantileCell(qs[0]); !strings.Contains(c, "µs [") {
		t.Errorf("p50 cell %q", c)
	}
	// p99.9 from 500 calls: no interval, a bound and the calls needed.
	if c := QuantileCell(qs[3]); !strings.HasPrefix(c, ">= ") || !strings.Contains(c, "too few calls: 2995 needed") {
		t.Errorf("p99.9 from 500 calls: cell %q", c)
	}
}

func TestQuantileJSONAndLabelsRoundTrip(t *testing.T) {
	h := testHist(5000, 1e6)
	qs := quantilesOf(t, h, 0.5, 0.99, 0.999)
	hj := NewHistogramJSON(h)
	back, err := hj.Hist()
	if err != nil || *back != *h {
		t.Fatalf("histogram JSON round trip: %v", err)
	}
	bad := *hj
	bad.Layout = "log2"
	if _, err := bad.Hist(); err == nil {
		t.Error("a foreign layout was accepted")
	}
	for _, q := range qs {
		got := NewQuantileJSON(q).ToQuantile()
		if got.P != q.P || got.Low != q.Low || got.High != q.High || got.Value != q.Value || got.TooFew != q.TooFew || got.Ranks.MinCalls != q.Ranks.MinCalls {
			t.Errorf("JSON round trip of %+v gave %+v", q, got)
		}
	}
	labels := map[string][]int64{}
	QuantileLabels(qs, labels)
	lq := QuantilesFromLabels(labels, 0.95, h.Total())
	if len(lq) != len(qs) {
		t.Fatalf("labels gave %d quantiles, want %d", len(lq), len(qs))
	}
	for i, q := range qs {
		if lq[i].P != q.P || lq[i].ValueLow != math.Floor(q.ValueLow) || lq[i].TooFew != q.TooFew || math.Abs(lq[i].Low-q.Low) > 1 || (!q.TooFew && math.Abs(lq[i].High-q.High) > 1) {
			t.Errorf("labels round trip of %v: %+v", QuantileName(q.P), lq[i])
		}
	}
	// A quantile corrected for the probe overhead says so in both.
	c, err := estimate.CorrectQuantile(qs[1], estimate.Result{Mean: 1500, Low: 1400, High: 1600})
	if err != nil {
		t.Fatal(err)
	}
	if got := NewQuantileJSON(c).ToQuantile(); !got.Corrected || got.OverheadLow != 1400 || got.OverheadHigh != 1600 {
		t.Errorf("JSON round trip of a corrected quantile: %+v", got)
	}
	labels = map[string][]int64{}
	QuantileLabels([]estimate.Quantile{c}, labels)
	if lq := QuantilesFromLabels(labels, 0.95, h.Total()); len(lq) != 1 || !lq[0].Corrected || lq[0].OverheadLow != 1400 || lq[0].OverheadHigh != 1600 {
		t.Errorf("labels round trip of a corrected quantile: %+v", lq)
	}
}

func TestQuantileChanges(t *testing.T) {
	base := quantilesOf(t, testHist(20000, 1e5), 0.5, 0.99)
	slow := quantilesOf(t, testHist(20001, 1.3e5), 0.5, 0.99)
	same := quantilesOf(t, testHist(20002, 1e5), 0.5, 0.99)
	for _, c := range QuantileChanges(base, slow) {
		if c.Err != "" || !c.Diff.Significant || c.Diff.Low <= 0 {
			t.Errorf("30%% slower: %v", c)
		}
		t.Log(c)
	}
	for _, c := range QuantileChanges(base, same) {
		if c.Err != "" || c.Diff.Significant {
			t.Errorf("same law: %v", c)
		}
	}
}

// TestHistogramLabels: a histogram survives pprof labels, and labels that
// do not fit the layout are refused.
func TestHistogramLabels(t *testing.T) {
	h := testHist(5000, 20000)
	labels := map[string][]int64{}
	HistogramLabels(h, labels)
	back, err := HistogramFromLabels(labels)
	if err != nil || back == nil || *back != *h {
		t.Fatalf("round trip: %v, equal %v", err, back != nil && *back == *h)
	}
	if h, err := HistogramFromLabels(map[string][]int64{"mean_ns": {1}}); h != nil || err != nil {
		t.Errorf("no histogram labels: %v %v", h, err)
	}
	for _, bad := range []map[string][]int64{
		{"hist_low_ns": {1000, 1043}, "hist_calls": {1}, "min_ns": {1000}, "max_ns": {1100}},
		{"hist_low_ns": {1001}, "hist_calls": {1}, "min_ns": {1001}, "max_ns": {1001}},
		{"hist_low_ns": {1024}, "hist_calls": {-1}, "min_ns": {1024}, "max_ns": {1024}},
		{"hist_low_ns": {1024}, "hist_calls": {1}},
	} {
		if _, err := HistogramFromLabels(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}
