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

func TestMain(m *testing.M) { testtarget.Main(m) }

// fixedCost is a Corrector with one probe cost for every kind.
type fixedCost struct{ cost estimate.Result }

func (fixedCost) OverheadKind(loader.Spec) (string, error) { return "user", nil }
func (f fixedCost) Overhead(string, float64) (estimate.Result, bool) {
	return f.cost, true
}
func (fixedCost) Correct(_ string, r estimate.Result) (estimate.Result, error) { return r, nil }

// TestBudgetedSession times a function called back to back under a 5%
// budget through a timing session: the result holds the windowed mean, the
// duty cycle, the windows and the projected slowdown.
func TestBudgetedSession(t *testing.T) {
	bpftest.Require(t)
	g := testtarget.StartGated(t, testtarget.Timed(t), "spin1us", "0") // calls forever
	cost := estimate.Result{Mean: 1500, Low: 1000, High: 2000, Confidence: 0.95}
	s, err := Open(Config{PID: g.Pid(), Targets: Targets{Users: []string{"tp_spin1us"}, MaxProbes: 1},
		Clock: loader.Clock{Kind: loader.ClockNS}, Duration: 4 * time.Second, Overhead: 0.05,
		Window: 20 * time.Millisecond, Corrector: fixedCost{cost}, Correction: CorrectionOn})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g.Release(t)
	run, err := s.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := run.Budget
	if b == nil {
		t.Fatal("no budget figures in the result")
	}
	tr := run.Targets[0]
	t.Logf("%d windows, duty %.3f, slowdown %.2f%% [%.2f, %.2f]; mean %.0f ns [%.0f, %.0f] over %d windows with calls; stop: %s",
		b.Windows, b.Duty, 100*b.Slowdown.Mean, 100*b.Slowdown.Low, 100*b.Slowdown.High,
		tr.Estimate.Mean, tr.Estimate.Low, tr.Estimate.High, tr.Estimate.Batches, run.StopReason)
	if b.Windows < 2 || !b.Binding || b.Cost.Mean != uprobePairFactor*cost.Mean { // the whole pair: see budgetCost
		t.Errorf("budget figures %+v", b)
	}
	if tr.Err != "" || tr.Estimate.Method != "batch-means" || !(tr.Estimate.Mean > 1000) {
		t.Errorf("target %s: estimate %+v, err %q: want the windowed batch-means mean", tr.Name, tr.Estimate, tr.Err)
	}
	if run.StopReason != StopDuration {
		t.Errorf("stop reason %q", run.StopReason)
	}
}
