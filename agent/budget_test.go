package agent

import (
	"context"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/pushtest"
)

// fixedCost is a timing.Corrector with one probe cost for every kind.
type fixedCost struct{ cost estimate.Result }

func (fixedCost) OverheadKind(loader.Spec) (string, error) { return "user", nil }
func (f fixedCost) Overhead(string, float64) (estimate.Result, bool) {
	return f.cost, true
}
func (fixedCost) Correct(_ string, r estimate.Result) (estimate.Result, error) { return r, nil }

// TestAgentOverheadBudget times burn_a (about 600 calls a second) under a
// 5% budget with a stated probe cost of 110-130 us a call, which makes the
// budget bind (probing all the time would cost about 7%; the first slot,
// planned for the worst case, lasts about 11 s): the merged
// windows hold well under the calls a full-time session counts over a
// longer span (the probes were attached a fraction of the time), and a
// mean per call whose difference from the full-time session's holds 0 at
// 99% (calls counted in random windows are an unbiased sample of calls).
func TestAgentOverheadBudget(t *testing.T) {
	bpftest.Require(t)
	exe := buildBurn(t, "tpbudget")
	target := startBurn(t, exe, 60)
	ing := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, ing)
	sink, _ := push.NewIngest("http://"+ln.Addr().String(), push.HTTPOptions{})
	cost := estimate.Result{Mean: 120000, Low: 110000, High: 130000, Confidence: 0.95}
	a, err := New(Config{PIDs: []int{target.Process.Pid}, Frequency: 19, Window: 2 * time.Second, Users: []string{"burn_a"},
		Overhead: 0.05, Corrector: fixedCost{cost}, Confidence: 0.99, Sinks: []push.Sink{sink}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	specs, err := loader.ResolveUser(target.Process.Pid, "burn_a", 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := loader.Open(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}, PID: target.Process.Pid, NoRecords: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil && a.Stats().Windows < 12 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ref.Stop()
	rp, err := ref.Poll()
	if err != nil {
		t.Fatal(err)
	}
	var profs []*profile.Profile
	for _, in := range ing.Received() {
		if export.IsTimeProfile(in.Profile) {
			profs = append(profs, in.Profile)
		}
	}
	if len(profs) < 2 {
		t.Fatalf("%d time windows", len(profs))
	}
	merged, err := profile.Merge(profs)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := export.TimeReport(merged)
	if err != nil || len(tab.Rows) != 1 || !tab.Rows[0].HasEstimate {
		t.Fatalf("time report of the merged windows: %v %+v", err, tab)
	}
	row, c := tab.Rows[0], rp.Totals[0]
	want, err := estimate.Time(estimate.Counts{Resolution: 1, Calls: c.Calls, Ticks: c.Ticks, TicksSq: c.TicksSq.Lo, HasTicksSq: true},
		estimate.Options{Confidence: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d windows merged: %d calls, mean %.0f ns [%.0f, %.0f] (%s); full-time session: %d calls, %.0f ns [%.0f, %.0f]",
		len(profs), row.Calls, row.Mean, row.Low, row.High, row.Method, c.Calls, want.Mean, want.Low, want.High)
	if row.Calls == 0 || float64(row.Calls) > 0.6*float64(c.Calls) {
		t.Errorf("under the budget the windows counted %d calls, the full-time session %d: the probes were not windowed", row.Calls, c.Calls)
	}
	got := estimate.Result{Mean: row.Mean, Low: row.Low, High: row.High, Confidence: tab.Confidence,
		StdErr: (row.High - row.Low) / (2 * 2.575829), Calls: row.Calls}
	if d, err := estimate.DiffResults(want, got); err != nil || d.Significant {
		t.Errorf("budgeted windows and the full-time session disagree on burn_a's mean: %+v %v", d, err)
	}
}
