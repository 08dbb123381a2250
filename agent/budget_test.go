// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/timing"
)

// fixedCost is a timing.Corrector with one probe cost for every kind.
type fixedCost struct{ cost estimate.Result }

func (fixedCost) OverheadKind(timing.Target) (string, error) { return "user", nil }
func (f fixedCost) Overhead(string, float64) (estimate.Result, bool) {
	return f.cost, true
}
func (fixedCost) Correct(_ string, r estimate.Result) (estimate.Result, error) { return r, nil }

func (fixedCost) Calibration(string) (timing.OverheadCalibration, bool) {
	return timing.OverheadCalibration{}, false
}

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
	cost := estimate.Result{Mean: 120000, Low: 110000, High: 130000, Confidence: 0.95}
	r := timeBurnA(t, "tpbudget", Config{Frequency: 19, Overhead: 0.05, Corrector: fixedCost{cost}}, 12)
	if r.row.Calls == 0 || float64(r.row.Calls) > 0.6*float64(r.c.Calls) {
		t.Errorf("under the budget the windows counted %d calls, the full-time session %d: the probes were not windowed", r.row.Calls, r.c.Calls)
	}
	r.sameMean(t)
}
