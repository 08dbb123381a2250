// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"

	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/plan"
)

// WritePlan prints a plan for a person.
func WritePlan(w io.Writer, p plan.Result) error {
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
