// SPDX-License-Identifier: Apache-2.0

package table

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
)

// TestWriteHistogram draws 500 log-normal calls and checks the rows that
// hold each quantile are marked, and that a quantile without an interval
// (p99.9 from 500 calls) is not.
func TestWriteHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(500, 1))
	h := &histogram.Hist{}
	for i := 0; i < 500; i++ {
		h.Add(uint64(20000 * math.Exp(0.5*r.NormFloat64())))
	}
	var qs []estimate.Quantile
	for _, p := range []float64{0.5, 0.9, 0.99, 0.999} {
		q, err := h.Quantile(p, estimate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	var b strings.Builder
	if err := WriteHistogram(&b, "f", h, qs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"f: 500 calls", "<- p50 ", "p90 ", "p99 ", "|****************************************|"} {
		if !strings.Contains(out, want) {
			t.Errorf("histogram lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "p99.9 ") {
		t.Errorf("a quantile without interval is marked:\n%s", out)
	}
}
