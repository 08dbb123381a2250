// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/safefile"
)

// target is a timed target read from a pilot file.
type target struct {
	name            string
	calls           uint64
	mean, low, high float64
	conf            float64
	ok              bool
	err             string
	durationSec     float64
}

// readTimeJSON reads the targets of a `tickprof time --json` file. A
// corrected run is planned from its measured (raw) spread: the overhead's
// own uncertainty does not shrink with more calls.
func readTimeJSON(data []byte, path string) ([]target, error) {
	run, err := export.ReadTimeJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var ts []target
	for _, t := range run.Targets {
		pt := target{name: t.Name, calls: t.Calls, conf: t.Raw.Confidence, err: t.Err, durationSec: run.Duration.Seconds()}
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
func planTargets(ts []target, goal Pilot, rate float64) []PilotRow {
	var rows []PilotRow
	for _, t := range ts {
		row := PilotRow{Target: t.name, Unit: "calls", Have: t.calls, Mean: t.mean, Low: t.low, High: t.high, PilotConfidence: t.conf}
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
		need(&row, p.Executions, t.calls, rate, t.durationSec)
		rows = append(rows, row)
	}
	return rows
}

// maxPlanShares is how many functions of a CPU profile are planned.
const maxPlanShares = 10

// planShares plans the samples needed to know each top function's flat
// share p to a relative half-width e: n = z^2 (1-p) / (p e^2) (Lilja eq.
// 4.28), which is estimate.PlanExecutions with ET/d = p (k = 0).
func planShares(tab *export.CPUTable, goal Pilot, rate float64) []PilotRow {
	var rows []PilotRow
	for i, f := range tab.Rows {
		if i == maxPlanShares {
			break
		}
		row := PilotRow{Target: f.Function, Unit: "samples", Have: tab.Samples, Mean: f.Flat.Share, Low: f.Flat.Low, High: f.Flat.High, PilotConfidence: tab.Confidence}
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
		need(&row, p.Executions, tab.Samples, rate, tab.Duration/1e9)
		rows = append(rows, row)
	}
	return rows
}

// ErrSharesNeedRelative is returned when an absolute goal is asked of a CPU
// profile, whose estimates are shares.
var ErrSharesNeedRelative = errors.New("a CPU profile gives shares: give a relative precision")

// FromFile plans from the pilot run in the file at path: a time result's
// JSON, a time profile, or a pprof CPU profile. goal holds the confidence
// and the precision (RelHalfWidth or AbsHalfWidth); rate, when above 0,
// overrides the pilot's rate of calls (or samples) per second.
//
// The file must be a regular file of at most export.MaxProfileFile bytes
// (/dev/zero and FIFOs fail at once), and every value read from it is
// checked as export's readers check them.
func FromFile(path string, goal Pilot, rate float64) (*Pilot, error) {
	data, err := safefile.ReadFile(path, "pilot", export.MaxProfileFile)
	if err != nil {
		return nil, err
	}
	return FromData(data, path, goal, rate)
}

// FromData is FromFile on the file's content; path names it in errors.
func FromData(data []byte, path string, goal Pilot, rate float64) (*Pilot, error) {
	out := goal
	out.From = path
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		ts, err := readTimeJSON(data, path)
		if err != nil {
			return nil, err
		}
		out.Kind = "time"
		out.Targets = planTargets(ts, out, rate)
		return &out, nil
	}
	prof, err := export.ReadProfile(data, path)
	if err != nil {
		return nil, err
	}
	if export.IsTimeProfile(prof) {
		tab, err := export.TimeReport(prof)
		if err != nil {
			return nil, err
		}
		var ts []target
		for _, r := range tab.Rows {
			pc := tab.Confidence
			if pc == 0 {
				pc = goal.Confidence
			}
			ts = append(ts, target{name: r.Target, calls: r.Calls, mean: r.Mean, low: r.Low, high: r.High,
				conf: pc, ok: r.HasEstimate, err: "no calls", durationSec: tab.Duration / 1e9})
		}
		out.Kind = "time"
		out.Targets = planTargets(ts, out, rate)
		return &out, nil
	}
	if out.AbsHalfWidth > 0 {
		return nil, ErrSharesNeedRelative
	}
	tab, err := export.CPUReport(prof, estimate.Options{Confidence: goal.Confidence})
	if err != nil {
		return nil, err
	}
	out.Kind = "cpu"
	out.Targets = planShares(tab, out, rate)
	return &out, nil
}

// need completes a row: the count needed, the count still to gather beyond
// have, and the time that takes at rate (0: the pilot's own rate, have
// over its seconds).
func need(row *PilotRow, executions, have uint64, rate, seconds float64) {
	row.Need = executions
	if executions > have {
		row.More = executions - have
	}
	row.RatePerSec = rate
	if rate == 0 && seconds > 0 {
		row.RatePerSec = float64(have) / seconds
	}
	if row.RatePerSec > 0 {
		rt := estimate.RunTime(row.More, row.RatePerSec)
		row.MoreTimeNs = &rt
	}
}
