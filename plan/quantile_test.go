// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/timing"
)

// TestQuantileFromFile plans p99 within ±5% from a pilot run's JSON: a
// target with 10^6 lognormal calls (shape 1) in 2 s gets the plan of its
// histogram (within 15% of the plan under the true law), its own rate,
// and the run time; a target with too few calls beyond p99, and one
// without a histogram, get rows saying why. (A pilot's plan is as noisy as
// its histogram's tail: from 20000 calls, five seeds gave 0.61 to 1.08
// times the true law's plan; from 10^6, 0.87 to 0.98.)
func TestQuantileFromFile(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var h, small histogram.Hist
	for i := 0; i < 1000000; i++ {
		h.Add(uint64(10000 * math.Exp(r.NormFloat64())))
	}
	for i := 0; i < 1000; i++ {
		small.Add(uint64(10000 * math.Exp(r.NormFloat64())))
	}
	est := estimate.Result{Mean: 16000, Low: 15000, High: 17000, Confidence: 0.95, Calls: 20000}
	run := &timing.Result{Duration: 2 * time.Second, Confidence: 0.95, Resolution: 1, Targets: []timing.TargetResult{
		{Name: "f", Kind: "user", Calls: 1000000, Estimate: est, Raw: est, Hist: &h},
		{Name: "g", Kind: "user", Calls: 1000, Estimate: est, Raw: est, Hist: &small},
		{Name: "k", Kind: "user", Calls: 1000, Estimate: est, Raw: est},
	}}
	path := filepath.Join(t.TempDir(), "pilot.json")
	if err := export.WriteTimeJSONFile(path, run); err != nil {
		t.Fatal(err)
	}
	g := QuantileGoal{P: 0.99, Rel: 0.05, Confidence: 0.95}
	p, err := QuantileFromFile(path, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(p.Rows), p.Rows)
	}
	f := p.Rows[0]
	truth, err := estimate.PlanQuantile(0.99, 0.05, func(u float64) float64 { return 10000 * estimate.LogNormalQuantiles(1)(u) }, histogram.Width, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Err != "" || math.Abs(float64(f.Calls)/float64(truth.Calls)-1) > 0.15 || f.RatePerSec == nil || *f.RatePerSec != 500000 ||
		math.Abs(*f.RunTimeNs-float64(f.Calls)/500000*1e9) > 1 {
		t.Errorf("target f: %+v, want about %d calls at 500000/s", f, truth.Calls)
	}
	if !strings.Contains(p.Rows[1].Err, "too few to know the durations' shape") {
		t.Errorf("target g: %+v", p.Rows[1])
	}
	if !strings.Contains(p.Rows[2].Err, "no duration histogram") {
		t.Errorf("target k: %+v", p.Rows[2])
	}
	// A missing file and a file that is not a run are errors.
	if _, err := QuantileFromFile(filepath.Join(t.TempDir(), "none.json"), g); err == nil {
		t.Error("a missing pilot file accepted")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{"), 0o600)
	if _, err := QuantileFromFile(bad, g); err == nil {
		t.Error("a broken pilot file accepted")
	}
}

// TestQuantileAssumed: the assumed-law plan is estimate.PlanQuantile's, and
// a shape that is not positive is refused.
func TestQuantileAssumed(t *testing.T) {
	g := QuantileGoal{P: 0.99, Rel: 0.05, Confidence: 0.95, Rate: 1000}
	p, err := QuantileAssumed(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := estimate.PlanQuantile(0.99, 0.05, estimate.LogNormalQuantiles(1), histogram.MeanWidth, estimate.Options{})
	if len(p.Rows) != 1 || p.Rows[0].Calls != want.Calls || p.Rows[0].MinCalls != 299 || p.Rows[0].RunTimeNs == nil {
		t.Errorf("plan %+v, want %d calls", p, want.Calls)
	}
	for _, s := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := QuantileAssumed(g, s); err == nil {
			t.Errorf("shape %v accepted", s)
		}
	}
}
