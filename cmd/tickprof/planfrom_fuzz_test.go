package main

import (
	"bytes"
	"io"
	"math"
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
)

// FuzzPlanFrom feeds arbitrary pilot files through what `plan --from`
// does with them (a time JSON document, a time profile or a CPU profile,
// planned and printed): an error, or rows whose counts and times are not
// negative and whose needed run time is not NaN; never a panic.
func FuzzPlanFrom(f *testing.F) {
	f.Add([]byte(`{"confidence":0.95,"duration_s":3,"targets":[{"target":"f","calls":1000,"mean_ns":100,"low_ns":95,"high_ns":105,"confidence":0.95}]}`), 0.05, 0.0)
	f.Add([]byte(`{"confidence":7,"targets":[{"target":"f","calls":4,"mean_ns":100,"low_ns":90,"high_ns":110,"confidence":7}]}`), 0.02, 10.0)
	f.Add([]byte(`{"duration_s":1e-300,"targets":[{"target":"f","calls":18446744073709551615,"mean_ns":1e-300,"low_ns":0,"high_ns":1e300,"confidence":0.999999}]}`), 1e-9, 0.0)
	var buf bytes.Buffer
	run := &export.TimeRun{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []export.TimeTarget{
		{Name: "f", Calls: 100, Ticks: 100, Estimate: estimate.Result{Mean: 100, Low: 80, High: 120, Confidence: 0.95}}}}
	if p, err := export.EncodeTime(run); err == nil {
		p.Write(&buf)
		f.Add(append([]byte{}, buf.Bytes()...), 0.05, 0.0)
	}
	f.Fuzz(func(t *testing.T, data []byte, rel, rate float64) {
		if !(rel > 0 && rel < 1) || !(rate >= 0) || math.IsInf(rate, 0) {
			return
		}
		goal := pilotPlan{From: "fuzz", Confidence: 0.95, RelHalfWidth: rel}
		var rows []pilotRow
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
			ts, err := readPilotJSON(data, "fuzz")
			if err != nil {
				return
			}
			goal.Kind, rows = "time", planTargets(ts, goal, rate)
		} else {
			prof, err := export.ReadProfile(data, "fuzz")
			if err != nil {
				return
			}
			if export.IsTimeProfile(prof) {
				tab, err := export.TimeReport(prof)
				if err != nil {
					return
				}
				var ts []pilotTarget
				for _, r := range tab.Rows {
					pc := tab.Confidence
					if pc == 0 {
						pc = goal.Confidence
					}
					ts = append(ts, pilotTarget{name: r.Target, calls: r.Calls, mean: r.Mean, low: r.Low, high: r.High,
						conf: pc, ok: r.HasEstimate, err: "no calls", durationSec: tab.Duration / 1e9})
				}
				goal.Kind, rows = "time", planTargets(ts, goal, rate)
			} else {
				tab, err := export.CPUReport(prof, estimate.Options{Confidence: goal.Confidence})
				if err != nil {
					return
				}
				goal.Kind, rows = "cpu", planShares(tab, goal, rate)
			}
		}
		for _, r := range rows {
			if r.Error != "" {
				continue
			}
			if r.Need > estimate.MaxExecutions || (r.MoreTimeNs != nil && (math.IsNaN(*r.MoreTimeNs) || *r.MoreTimeNs < 0)) {
				t.Fatalf("row %+v out of range", r)
			}
		}
		goal.Targets = rows
		writePilotPlan(io.Discard, goal)
	})
}
