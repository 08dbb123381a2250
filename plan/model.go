// SPDX-License-Identifier: Apache-2.0

// Model of the plans this package computes: what `tickprof plan` prints
// and writes as JSON (the keys are part of the interface).

package plan

// Result is how many executions (and how long) to measure for a precision,
// as plan prints it (JSON keys are part of the interface).
type Result struct {
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

// Pilot is a plan from a pilot run: per target, the count and time
// still needed for a goal.
type Pilot struct {
	From         string     `json:"from"`
	Kind         string     `json:"kind"` // "time" or "cpu"
	Confidence   float64    `json:"confidence"`
	RelHalfWidth float64    `json:"rel_half_width,omitempty"`
	AbsHalfWidth float64    `json:"abs_half_width_ns,omitempty"`
	Targets      []PilotRow `json:"targets"`
}

// PilotRow is one target's plan from a pilot.
type PilotRow struct {
	Target string `json:"target"`
	// Unit is what is counted: "calls" (timed targets) or "samples" (CPU
	// profile shares).
	Unit string `json:"unit"`
	// Have is the pilot's count; Need the count for the goal; More the
	// difference (0 when reached).
	Have uint64 `json:"have"`
	Need uint64 `json:"need"`
	More uint64 `json:"more"`
	// Mean, Low, High: the pilot's estimate (ns for calls, share for
	// samples) at PilotConfidence.
	Mean            float64 `json:"mean"`
	Low             float64 `json:"low"`
	High            float64 `json:"high"`
	PilotConfidence float64 `json:"pilot_confidence"`
	// RelHalfWidthNow is the pilot's relative half-width.
	RelHalfWidthNow float64 `json:"rel_half_width_now"`
	// RatePerSec is the pilot's rate of Unit per second (0: unknown);
	// MoreTimeNs the run time still needed at that rate.
	RatePerSec float64  `json:"rate_per_sec"`
	MoreTimeNs *float64 `json:"more_time_ns,omitempty"`
	// Error says why there is no plan for this target.
	Error string `json:"error,omitempty"`
}

// Quantile is how many calls a quantile's interval needs for a
// relative precision (plan --quantile), per target when planned from a
// run, and the run time at a call rate (JSON keys are part of the
// interface).
type Quantile struct {
	Quantile     float64 `json:"quantile"`
	RelHalfWidth float64 `json:"rel_half_width"`
	Confidence   float64 `json:"confidence"`
	// Assumption states the duration law planned under.
	Assumption string `json:"assumption"`
	// Rows: one without a target name when planned from an assumed law.
	Rows []QuantileRow `json:"plans"`
}

// QuantileRow is one plan.
type QuantileRow struct {
	Target string `json:"target,omitempty"`
	// Calls is the number of calls needed in all; MinCalls the fewest for
	// any two-sided interval at this confidence.
	Calls    uint64 `json:"calls"`
	MinCalls uint64 `json:"min_calls"`
	// ExpectedRelHalfWidth is the relative half-width expected at Calls.
	ExpectedRelHalfWidth float64 `json:"expected_rel_half_width"`
	// RatePerSec and RunTimeNs: the run time at a call rate, when known.
	RatePerSec *float64 `json:"rate_per_sec,omitempty"`
	RunTimeNs  *float64 `json:"run_time_ns,omitempty"`
	// Err says why there is no plan (e.g. a precision finer than the
	// histogram's buckets).
	Err string `json:"error,omitempty"`
}
