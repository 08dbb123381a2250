package export

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/tickprof/tickprof/internal/units"
)

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

// PilotPlan is a plan from a pilot run: per target, the count and time
// still needed for a goal.
type PilotPlan struct {
	From         string     `json:"from"`
	Kind         string     `json:"kind"` // "time" or "cpu"
	Confidence   float64    `json:"confidence"`
	RelHalfWidth float64    `json:"rel_half_width,omitempty"`
	AbsHalfWidth float64    `json:"abs_half_width_ns,omitempty"`
	Targets      []PilotRow `json:"targets"`
}

// WritePilotPlan prints a plan from a pilot for a person.
func WritePilotPlan(w io.Writer, p PilotPlan) error {
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
