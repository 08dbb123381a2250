package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/safefile"
)

// addPlanFrom adds `--from FILE` to the plan command: planning from a pilot
// run (a `tickprof time --json` file, a `tickprof time` profile, or any
// pprof CPU profile) instead of from an expected duration. Without --from
// the command runs as before.
func addPlanFrom(cmd *cobra.Command) {
	var from string
	cmd.Flags().StringVar(&from, "from", "", "plan from a pilot run: a tickprof time --json `FILE`, a tickprof time profile or a pprof CPU profile")
	cmd.Long += `

With --from FILE, plan from a pilot run instead: for every target of a
tickprof time result (its JSON or its profile), the calls and the run time
still needed for --precision (or --abs-error) at --confidence, from the
pilot's observed spread and call rate (Lilja eq. 4.21); for a CPU profile,
the samples and sampling time still needed to know each top function's share
that well (Lilja eq. 4.28). --rate overrides the pilot's call rate.`
	cmd.Example += `

  # How much longer to time for ±2%, from a 10 s pilot
  tickprof time -u work --duration 10s --json pilot.json -- ./app
  tickprof plan --from pilot.json --precision 2%`
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("from") {
			return run(c, args)
		}
		return runPlanFrom(c, from)
	}
}

// pilotRow is one target's plan from a pilot.
type pilotRow struct {
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

// pilotPlan is what `plan --from` prints.
type pilotPlan struct {
	From         string     `json:"from"`
	Kind         string     `json:"kind"` // "time" or "cpu"
	Confidence   float64    `json:"confidence"`
	RelHalfWidth float64    `json:"rel_half_width,omitempty"`
	AbsHalfWidth float64    `json:"abs_half_width_ns,omitempty"`
	Targets      []pilotRow `json:"targets"`
}

// pilotTarget is a timed target read from a pilot file.
type pilotTarget struct {
	name            string
	calls           uint64
	mean, low, high float64
	conf            float64
	ok              bool
	err             string
	durationSec     float64
}

func runPlanFrom(cmd *cobra.Command, path string) error {
	fl := cmd.Flags()
	for _, name := range []string{"resolution", "expect", "digits", "loop"} {
		if fl.Changed(name) {
			return usagef("--%s does not go with --from: the pilot gives the durations; give --precision or --abs-error", name)
		}
	}
	prec, _ := fl.GetString("precision")
	absErr, _ := fl.GetString("abs-error")
	confS, _ := fl.GetString("confidence")
	asJSON, _ := fl.GetBool("json")
	conf, err := parseConfidence(confS)
	if err != nil {
		return usagef("--confidence: %v", err)
	}
	out := pilotPlan{From: path, Confidence: conf}
	switch {
	case fl.Changed("precision") && fl.Changed("abs-error"):
		return usagef("give --precision or --abs-error, not both")
	case fl.Changed("abs-error"):
		if out.AbsHalfWidth, err = positiveDuration("--abs-error", absErr); err != nil {
			return err
		}
	default:
		if prec == "" {
			prec = "5%"
		}
		p, err := parsePercent(prec)
		if err != nil || !(p > 0 && p < 1) {
			return usagef("--precision %q: want a relative half-width such as 5%%", prec)
		}
		out.RelHalfWidth = p
	}
	rate := 0.0
	if fl.Changed("rate") {
		r, _ := fl.GetString("rate")
		if rate, err = parseRate(r); err != nil {
			return usagef("--rate: %v", err)
		}
	}
	data, err := safefile.ReadFile(path, "pilot", export.MaxProfileFile)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		ts, err := readPilotJSON(data, path)
		if err != nil {
			return err
		}
		out.Kind = "time"
		out.Targets = planTargets(ts, out, rate)
	} else {
		prof, err := export.ReadProfile(data, path)
		if err != nil {
			return err
		}
		if export.IsTimeProfile(prof) {
			tab, err := export.TimeReport(prof)
			if err != nil {
				return err
			}
			var ts []pilotTarget
			for _, r := range tab.Rows {
				pc := tab.Confidence
				if pc == 0 {
					pc = conf
				}
				ts = append(ts, pilotTarget{name: r.Target, calls: r.Calls, mean: r.Mean, low: r.Low, high: r.High,
					conf: pc, ok: r.HasEstimate, err: "no calls", durationSec: tab.Duration / 1e9})
			}
			out.Kind = "time"
			out.Targets = planTargets(ts, out, rate)
		} else {
			if out.AbsHalfWidth > 0 {
				return usagef("--abs-error: a CPU profile gives shares; give --precision")
			}
			tab, err := export.CPUReport(prof, estimate.Options{Confidence: conf})
			if err != nil {
				return err
			}
			out.Kind = "cpu"
			out.Targets = planShares(tab, out, rate)
		}
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), out)
	}
	return writePilotPlan(cmd.OutOrStdout(), out)
}

// readPilotJSON reads the targets of a `tickprof time --json` file. A
// corrected run is planned from its measured (raw) spread: the overhead's
// own uncertainty does not shrink with more calls.
func readPilotJSON(data []byte, path string) ([]pilotTarget, error) {
	run, err := export.ReadTimeJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var ts []pilotTarget
	for _, t := range run.Targets {
		pt := pilotTarget{name: t.Name, calls: t.Calls, conf: t.Raw.Confidence, err: t.Err, durationSec: run.Duration.Seconds()}
		if t.Err == "" {
			pt.mean, pt.low, pt.high, pt.ok = t.Raw.Mean, t.Raw.Low, t.Raw.High, true
		}
		ts = append(ts, pt)
	}
	return ts, nil
}

// planTargets plans every timed target from its pilot estimate:
// estimate.PlanFromPilot (Lilja eq. 4.21) on the pilot's standard error,
// recovered from its interval as half-width / z.
func planTargets(ts []pilotTarget, goal pilotPlan, rate float64) []pilotRow {
	var rows []pilotRow
	for _, t := range ts {
		row := pilotRow{Target: t.name, Unit: "calls", Have: t.calls, Mean: t.mean, Low: t.low, High: t.high, PilotConfidence: t.conf}
		if !t.ok {
			row.Error = t.err
			rows = append(rows, row)
			continue
		}
		if t.mean != 0 {
			row.RelHalfWidthNow = (t.high - t.low) / 2 / math.Abs(t.mean)
		}
		rel := goal.RelHalfWidth
		if goal.AbsHalfWidth > 0 && t.mean > 0 {
			rel = goal.AbsHalfWidth / t.mean
		}
		r := estimate.Result{Mean: t.mean, Low: t.low, High: t.high, Confidence: t.conf,
			StdErr: (t.high - t.low) / 2 / estimate.Z(t.conf)}
		p, err := estimate.PlanFromPilot(r, t.calls, rel, estimate.Options{Confidence: goal.Confidence})
		if err != nil {
			row.Error = err.Error()
			rows = append(rows, row)
			continue
		}
		row.Need = p.Executions
		if p.Executions > t.calls {
			row.More = p.Executions - t.calls
		}
		row.RatePerSec = rate
		if rate == 0 && t.durationSec > 0 {
			row.RatePerSec = float64(t.calls) / t.durationSec
		}
		if row.RatePerSec > 0 {
			rt := estimate.RunTime(row.More, row.RatePerSec)
			row.MoreTimeNs = &rt
		}
		rows = append(rows, row)
	}
	return rows
}

// maxPlanShares is how many functions of a CPU profile are planned.
const maxPlanShares = 10

// planShares plans the samples needed to know each top function's flat
// share p to a relative half-width e: n = z^2 (1-p) / (p e^2) (Lilja eq.
// 4.28), which is estimate.PlanExecutions with ET/d = p (k = 0).
func planShares(tab *export.CPUTable, goal pilotPlan, rate float64) []pilotRow {
	var rows []pilotRow
	for i, f := range tab.Rows {
		if i == maxPlanShares {
			break
		}
		row := pilotRow{Target: f.Function, Unit: "samples", Have: tab.Samples, Mean: f.Flat.Share, Low: f.Flat.Low, High: f.Flat.High, PilotConfidence: tab.Confidence}
		if f.Flat.Share > 0 {
			row.RelHalfWidthNow = (f.Flat.High - f.Flat.Low) / 2 / f.Flat.Share
		}
		if f.Flat.Hits == 0 || f.Flat.Share >= 1 {
			row.Error = "no flat samples to plan from"
			if f.Flat.Share >= 1 {
				row.Error = "the only function sampled: its share is 100%"
			}
			rows = append(rows, row)
			continue
		}
		p, err := estimate.PlanExecutions(f.Flat.Share, 1, estimate.Goal{RelHalfWidth: goal.RelHalfWidth}, estimate.Options{Confidence: goal.Confidence})
		if err != nil {
			row.Error = err.Error()
			rows = append(rows, row)
			continue
		}
		row.Need = p.Executions
		if p.Executions > tab.Samples {
			row.More = p.Executions - tab.Samples
		}
		row.RatePerSec = rate
		if rate == 0 && tab.Duration > 0 {
			row.RatePerSec = float64(tab.Samples) / (tab.Duration / 1e9)
		}
		if row.RatePerSec > 0 {
			rt := estimate.RunTime(row.More, row.RatePerSec)
			row.MoreTimeNs = &rt
		}
		rows = append(rows, row)
	}
	return rows
}

// writePilotPlan prints the plan for a person.
func writePilotPlan(w io.Writer, p pilotPlan) error {
	goal := "±" + formatPercent(p.RelHalfWidth)
	if p.AbsHalfWidth > 0 {
		goal = "±" + formatNs(p.AbsHalfWidth)
	}
	fmt.Fprintf(w, "plan from %s: %s at %s confidence\n", p.From, goal, formatPercent(p.Confidence))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if p.Kind == "cpu" {
		fmt.Fprintln(tw, "FUNCTION\tFLAT SHARE [INTERVAL]\tNOW\tSAMPLES NEEDED\tMORE\tMORE TIME")
	} else {
		fmt.Fprintln(tw, "TARGET\tMEAN [INTERVAL]\tNOW\tCALLS NEEDED\tMORE\tMORE TIME")
	}
	for _, r := range p.Targets {
		var est string
		if p.Kind == "cpu" {
			est = fmt.Sprintf("%s [%s, %s] (%s)", formatPercent(r.Mean), formatPercent(r.Low), formatPercent(r.High), formatPercent(r.PilotConfidence))
		} else if r.Error == "" {
			m, lo, hi := formatInterval(r.Mean, r.Low, r.High)
			est = fmt.Sprintf("%s [%s, %s] (%s)", m, lo, hi, formatPercent(r.PilotConfidence))
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\tno plan: %s\n", r.Target, orDash(est), r.Error)
			continue
		}
		more := "reached"
		if r.More > 0 {
			more = "unknown rate"
			if r.MoreTimeNs != nil {
				more = formatLongNs(*r.MoreTimeNs) + fmt.Sprintf(" at %s/s", trimFloat(math.Round(r.RatePerSec)))
			}
		} else {
			more = "0 (reached)"
		}
		fmt.Fprintf(tw, "%s\t%s\t±%s\t%d\t%d\t%s\n", r.Target, est, formatPercent(r.RelHalfWidthNow), r.Need, r.More, more)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
