package export

import (
	"fmt"
	"io"

	"github.com/tickprof/tickprof/internal/units"
)

// Plan is how many executions (and how long) to measure for a precision,
// as plan prints it (JSON keys are part of the interface).
type Plan struct {
	Executions   uint64   `json:"executions"`
	ResolutionNs float64  `json:"resolution_ns"`
	ExpectNs     float64  `json:"expect_ns"`
	Confidence   float64  `json:"confidence"`
	HalfWidthNs  float64  `json:"half_width_ns"`
	RelHalfWidth float64  `json:"rel_half_width"`
	RunTimeNs    *float64 `json:"run_time_ns,omitempty"`
	// RatePerSec or LoopNs echo how the run time was computed.
	RatePerSec *float64 `json:"rate_per_sec,omitempty"`
	LoopNs     *float64 `json:"loop_ns,omitempty"`
	// Budget (a fraction), Duty and BudgetRunTimeNs: the run time under an
	// overhead budget at the duty cycle that holds it, for a probe cost of
	// CostNs per call (plan --overhead).
	Budget          *float64 `json:"overhead_budget,omitempty"`
	Duty            *float64 `json:"duty_cycle,omitempty"`
	BudgetRunTimeNs *float64 `json:"budget_run_time_ns,omitempty"`
	CostNs          *float64 `json:"probe_cost_ns,omitempty"`
	// Note warns when the plan rests on a degenerate model.
	Note string `json:"note,omitempty"`
}

// WritePlan prints a plan for a person.
func WritePlan(w io.Writer, p Plan) error {
	goal := "±" + units.Percent(p.RelHalfWidth) + " (±" + units.Ns(p.HalfWidthNs) + ")"
	noun := "executions"
	if p.Executions == 1 {
		noun = "execution"
	}
	if _, err := fmt.Fprintf(w, "%d %s  for %s at %s confidence  (expected %s, resolution %s, two-point model)\n",
		p.Executions, noun, goal, units.Percent(p.Confidence), units.NsExact(p.ExpectNs), units.NsExact(p.ResolutionNs)); err != nil {
		return err
	}
	if p.RunTimeNs != nil {
		how := ""
		if p.RatePerSec != nil {
			how = "at " + units.Number(*p.RatePerSec) + " calls/s"
		} else {
			how = "at one execution per " + units.NsExact(*p.LoopNs)
		}
		if _, err := fmt.Fprintf(w, "run time  %s  %s\n", units.LongNs(*p.RunTimeNs), how); err != nil {
			return err
		}
	}
	if p.Budget != nil && p.Duty != nil && p.BudgetRunTimeNs != nil {
		if _, err := fmt.Fprintf(w, "under a %s overhead budget  %s  probed %s of the time (probe cost %s per call)\n",
			units.Percent(*p.Budget), units.LongNs(*p.BudgetRunTimeNs), units.Percent(*p.Duty), units.Ns(*p.CostNs)); err != nil {
			return err
		}
	}
	if p.Note != "" {
		if _, err := fmt.Fprintf(w, "note: %s\n", p.Note); err != nil {
			return err
		}
	}
	return nil
}
