package timing

import (
	"context"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/loader"
)

// TestQuantilePrecisionStop times testdata/c/qdist (a known bimodal law)
// with the exact clock and --precision 10% on p50: the run must stop on
// the precision, before the target ends, with every quantile estimated
// from a histogram that holds every call, and p50's interval within 10%.

func TestQuantilePrecisionStop(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "c/qdist.c", "qdist", "-Wl,--no-as-needed", "-lm")
	cfg := Config{
		Command: []string{bin, "200000", "7"}, Clock: loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond},
		Targets:   Targets{Users: []string{"tp_qwork"}, MaxProbes: 1},
		Quantiles: DefaultQuantiles, Precision: 0.10, PrecisionQuantile: 0.5,
		Duration: 60 * time.Second, Interval: 100 * time.Millisecond, Correction: CorrectionOff,
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The forecast: unknown (-1) until the rule has planned from the
	// histogram, then the time to the stop; the first one, with the time
	// already spent, must be within a factor of 3 of the run's length
	// (the target calls at a steady rate; the machine's load moves it).
	first := time.Duration(-1)
	run, err := s.Run(context.Background(), func(pr Progress) {
		if len(pr.Remaining) != len(pr.Rows) || pr.Remaining[0] < -1 {
			t.Errorf("progress: remaining %v for %d rows", pr.Remaining, len(pr.Rows))
		}
		if first < 0 && pr.Remaining[0] > 0 {
			first = pr.Elapsed + pr.Remaining[0]
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.StopReason != StopPrecision {
		t.Fatalf("stopped: %s, want %s", run.StopReason, StopPrecision)
	}
	tg := run.Targets[0]
	// The histogram is read just before the final counters: a call or two
	// may end in between.
	if tg.Hist == nil || tg.Hist.Total() > tg.Calls || tg.Hist.Total()+tg.Calls/100 < tg.Calls || len(tg.Quantiles) != len(DefaultQuantiles) {
		t.Fatalf("histogram %v (%d calls), %d calls, %d quantiles", tg.Hist != nil, tg.Hist.Total(), tg.Calls, len(tg.Quantiles))
	}
	q := tg.Quantiles[0]
	if q.P != 0.5 || q.TooFew || q.RelHalfWidth() > 0.10 {
		t.Errorf("p50 at stop: %+v (relative half-width %.3f)", q, q.RelHalfWidth())
	}
	t.Logf("stopped after %d calls, %.1fs: p50 %.0f ns [%.0f, %.0f]; first forecast of the run's length %.1fs", tg.Calls, run.Duration.Seconds(), q.Value, q.Low, q.High, first.Seconds())
	if first <= 0 || first > 3*run.Duration || 3*first < run.Duration {
		t.Errorf("first forecast of the run's length %v, run took %v", first, run.Duration)
	}
}

// TestCorrectedQuantiles: where the mean is corrected for the probe
// overhead, the quantiles are shifted by its interval and the measured
// ones kept; where it is not (no calibrated kind), they stay as measured.
func TestCorrectedQuantiles(t *testing.T) {
	cost := estimate.Result{Mean: 1500, Low: 1400, High: 1600, Confidence: 0.95}
	q := estimate.Quantile{P: 0.99, Value: 9000, Low: 8000, High: 10000, Confidence: 0.95, Calls: 1000}
	s := &Session{cfg: Config{Corrector: fixedCost{cost}}, kinds: []string{"user", ""}}
	run := &Result{Targets: []TargetResult{
		{Name: "a", Quantiles: []estimate.Quantile{q}},
		{Name: "b", Quantiles: []estimate.Quantile{q}},
	}}
	s.correct(run)
	a, b := run.Targets[0], run.Targets[1]
	if !a.Corrected || len(a.RawQuantiles) != 1 || a.RawQuantiles[0] != q {
		t.Fatalf("target a: corrected %v, raw %+v", a.Corrected, a.RawQuantiles)
	}
	if c := a.Quantiles[0]; c.Low != 8000-1600 || c.High != 10000-1400 || c.Value != 9000-1500 || !c.Corrected {
		t.Errorf("corrected p99 %+v", c)
	}
	if b.Corrected || b.RawQuantiles != nil || b.Quantiles[0] != q {
		t.Errorf("target b without a calibrated kind: %+v", b)
	}
}
