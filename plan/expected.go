// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/budget"
)

// Expected is a plan made before any run, from an expected duration.
type Expected struct {
	// Resolution and Expect are the clock's tick length and the expected
	// duration of one execution, in ns.
	Resolution, Expect float64
	// Goal is the precision wanted; Options the confidence.
	Goal    estimate.Goal
	Options estimate.Options
	// Rate (calls per second) or Loop (ns per execution) turn executions
	// into a run time; 0 leaves it out.
	Rate, Loop float64
	// Budget (a fraction) with Rate adds the run time under an overhead
	// budget for a probe cost of Cost ns per call; 0 leaves it out.
	Budget, Cost float64
}

// Plan computes the executions needed with the two-point model
// (estimate.PlanExecutions), the run time they take at the rate or loop
// period, and, under a budget, the duty cycle that holds it
// (estimate.DutyForBudget, one thread: the safe case) and the time the
// executions take at that duty in windows of budget.DefaultWindow
// (estimate.PlanUnderBudget). Invalid inputs wrap estimate.ErrInvalid.
func (e Expected) Plan() (Result, error) {
	p, err := estimate.PlanExecutions(e.Expect, e.Resolution, e.Goal, e.Options)
	if err != nil {
		return Result{}, err
	}
	out := Result{Executions: p.Executions, ResolutionNs: e.Resolution, ExpectNs: e.Expect,
		Confidence: p.Confidence, HalfWidthNs: p.HalfWidth, RelHalfWidth: p.RelHalfWidth}
	switch {
	case e.Rate > 0:
		rt, r := estimate.RunTime(p.Executions, e.Rate), e.Rate
		out.RunTimeNs, out.RatePerSec = &rt, &r
	case e.Loop > 0:
		rt, l := estimate.LoopRunTime(p.Executions, e.Loop), e.Loop
		out.RunTimeNs, out.LoopNs = &rt, &l
	}
	if e.Budget > 0 && e.Rate > 0 {
		q, err := estimate.DutyForBudget(e.Budget, e.Rate*e.Cost*1e-9)
		if err != nil {
			return out, err
		}
		rt := estimate.PlanUnderBudget(p.Executions, e.Rate, q, float64(budget.DefaultWindow))
		b, c := e.Budget, e.Cost
		out.Budget, out.Duty, out.BudgetRunTimeNs, out.CostNs = &b, &q, &rt, &c
	}
	if x := e.Expect / e.Resolution; x == float64(int64(x)) {
		out.Note = "the expected duration is a whole number of ticks, where the two-point model predicts no spread at all; time a pilot run and plan from its measured spread"
	}
	return out, nil
}
