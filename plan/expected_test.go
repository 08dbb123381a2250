// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"errors"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

func TestExpectedPlan(t *testing.T) {
	o := estimate.Options{Confidence: 0.95}
	goal := estimate.Goal{RelHalfWidth: 0.1}
	// Chan's example with a loop period: the run time is one cycle per
	// execution.
	p, err := Expected{Resolution: 16.666e6, Expect: 3.3332e6, Goal: goal, Options: o, Loop: 10e6}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want, err := estimate.PlanExecutions(3.3332e6, 16.666e6, goal, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Executions != want.Executions || p.LoopNs == nil || *p.RunTimeNs != float64(want.Executions)*10e6 || p.RatePerSec != nil || p.Note != "" {
		t.Errorf("loop plan %+v, want %d executions of a 10 ms cycle", p, want.Executions)
	}
	// A rate under a budget: the duty that holds 1% at 2000 calls/s of 1 µs.
	p, err = Expected{Resolution: 4e6, Expect: 50e3, Goal: goal, Options: o, Rate: 2000, Budget: 0.01, Cost: 1000}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	q, err := estimate.DutyForBudget(0.01, 2000*1000e-9)
	if err != nil {
		t.Fatal(err)
	}
	if p.RatePerSec == nil || *p.RatePerSec != 2000 || p.Duty == nil || *p.Duty != q || p.BudgetRunTimeNs == nil || *p.BudgetRunTimeNs < *p.RunTimeNs {
		t.Errorf("budget plan %+v, want duty %g and a run time at least the unbudgeted one", p, q)
	}
	// A whole number of ticks: the model predicts no spread; the plan says so.
	if p, err = (Expected{Resolution: 4e6, Expect: 8e6, Goal: goal, Options: o}).Plan(); err != nil || p.Note == "" {
		t.Errorf("whole-tick plan %+v (%v) has no note", p, err)
	}
	if _, err := (Expected{Resolution: 4e6, Expect: 0, Goal: goal, Options: o}).Plan(); !errors.Is(err, estimate.ErrInvalid) {
		t.Errorf("zero expected duration: %v, want estimate.ErrInvalid", err)
	}
}
