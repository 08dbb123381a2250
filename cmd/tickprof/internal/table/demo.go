// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/timing"
)

// WriteDemoTable prints the demo's raw and corrected intervals beside the
// truth (each function's own mean, ns). The corrected interval is the one
// `tickprof time` reports: the raw estimate less the probe's cost inside
// the calls, measured where the calls happen, its uncertainty included.
func WriteDemoTable(w io.Writer, run *timing.Result, truth map[string]float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FUNCTION\tCALLS\tRAW MEAN (jiffies)\tINTERVAL\tCORRECTED\tINTERVAL\tTRUTH\tTRUTH INSIDE?\t")
	for _, t := range run.Targets {
		tr, haveTruth := truth[t.Name]
		truthS := "-"
		if haveTruth {
			truthS = units.Ns(tr)
		}
		r := t.Raw
		if t.Err != "" || !(r.Confidence > 0 && r.Confidence < 1) {
			fmt.Fprintf(tw, "%s\t%d\t-\tno estimate: %s\t-\t-\t%s\t-\t\n", t.Name, t.Calls, ShortErr(t.Err), truthS)
			continue
		}
		conf := units.Percent(r.Confidence)
		m, lo, hi := units.Interval(r.Mean, r.Low, r.High)
		corr, cs, inside := "-", "not corrected", "-"
		if c := t.Estimate; t.Corrected {
			cm, clo, chi := units.Interval(c.Mean, c.Low, c.High)
			corr, cs = cm, "["+clo+", "+chi+"] ("+units.Percent(c.Confidence)+")"
			if haveTruth {
				inside = map[bool]string{true: "yes", false: "no"}[c.Low <= tr && tr <= c.High]
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t[%s, %s] (%s)\t%s\t%s\t%s\t%s\t\n", t.Name, t.Calls, m, lo, hi, conf, corr, cs, truthS, inside)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "TRUTH: the mean of the function's own clock_gettime measurements over the same run (exact ns, every call).")
	return nil
}

// WriteDemoSummary prints the end of the demo: the intervals beside the
// truth (WriteDemoTable), where the correction came from, and the
// commands that open the profiles written.
func WriteDemoSummary(w io.Writer, run *timing.Result, truth map[string]float64, corrFrom, timeOut, cpuOut string) error {
	fmt.Fprintf(w, "\n== each function's mean per call, timed with a %s clock, beside the truth the workload measured itself\n", units.Ns(run.Resolution))
	if err := WriteDemoTable(w, run, truth); err != nil {
		return err
	}
	fmt.Fprintf(w, "CORRECTED: the raw mean less the probes' own cost inside the calls, as `tickprof time` reports it (docs/overhead.md), from %s.\n", corrFrom)
	fmt.Fprintf(w, "\nOpen the profiles:\n  go tool pprof -top %s\n  go tool pprof -http=: %s\n  go tool pprof -top %s\n", timeOut, timeOut, cpuOut)
	return nil
}
