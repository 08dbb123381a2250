package timing

import (
	"context"
	"testing"
	"time"

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
	run, err := s.Run(context.Background(), func(pr Progress) {
		// A quantile goal has no time estimate, but one entry per row.
		if len(pr.Remaining) != len(pr.Rows) || pr.Remaining[0] != -1 {
			t.Errorf("progress: remaining %v for %d rows, want -1 each", pr.Remaining, len(pr.Rows))
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
	t.Logf("stopped after %d calls, %.1fs: p50 %.0f ns [%.0f, %.0f]", tg.Calls, run.Duration.Seconds(), q.Value, q.Low, q.High)
}
