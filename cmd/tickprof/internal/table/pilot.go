// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/plan"
)

// WritePilotPlan prints a plan from a pilot for a person.
func WritePilotPlan(w io.Writer, p plan.Pilot) error {
	goal := "±" + units.Percent(p.RelHalfWidth)
	if p.AbsHalfWidth > 0 {
		goal = "±" + units.Ns(p.AbsHalfWidth)
	}
	fmt.Fprintf(w, "plan from %s: %s at %s confidence\n", p.From, goal, units.Percent(p.Confidence))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if p.Kind == "cpu" {
		fmt.Fprintln(tw, "FUNCTION\tFLAT SHARE [INTERVAL]\tNOW\tSAMPLES NEEDED\tMORE\tMORE TIME")
	} else {
		fmt.Fprintln(tw, "TARGET\tMEAN [INTERVAL]\tNOW\tCALLS NEEDED\tMORE\tMORE TIME")
	}
	for _, r := range p.Targets {
		var est string
		if p.Kind == "cpu" {
			est = fmt.Sprintf("%s [%s, %s] (%s)", units.Percent(r.Mean), units.Percent(r.Low), units.Percent(r.High), units.Percent(r.PilotConfidence))
		} else if r.Error == "" {
			m, lo, hi := units.Interval(r.Mean, r.Low, r.High)
			est = fmt.Sprintf("%s [%s, %s] (%s)", m, lo, hi, units.Percent(r.PilotConfidence))
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\tno plan: %s\n", r.Target, orDash(est), r.Error)
			continue
		}
		more := "reached"
		if r.More > 0 {
			more = "unknown rate"
			if r.MoreTimeNs != nil {
				more = units.LongNs(*r.MoreTimeNs) + fmt.Sprintf(" at %s/s", units.Number(math.Round(r.RatePerSec)))
			}
		} else {
			more = "0 (reached)"
		}
		fmt.Fprintf(tw, "%s\t%s\t±%s\t%d\t%d\t%s\n", r.Target, est, units.Percent(r.RelHalfWidthNow), r.Need, r.More, more)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
