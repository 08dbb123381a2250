// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/timing"
)

// demoResult is a target's measured estimate, with the normal standard error
// its interval implies (for the correction's combined uncertainty).
func demoResult(t timing.TargetResult) (estimate.Result, bool) {
	r := t.Raw
	if t.Err != "" || !(r.Confidence > 0 && r.Confidence < 1) {
		return estimate.Result{}, false
	}
	r.StdErr = (r.High - r.Low) / 2 / estimate.Z(r.Confidence)
	return r, true
}

// WriteDemoTable prints the demo's raw and corrected intervals beside the
// truth (each function's own mean, ns), ovhd subtracted.
func WriteDemoTable(w io.Writer, run *timing.Result, truth map[string]float64, ovhd calibrate.Overhead) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FUNCTION\tCALLS\tMEAN (jiffies)\tINTERVAL\tCORRECTED\tINTERVAL\tTRUTH\tTRUTH INSIDE?\t")
	for _, t := range run.Targets {
		tr, haveTruth := truth[t.Name]
		truthS := "-"
		if haveTruth {
			truthS = units.Ns(tr)
		}
		r, ok := demoResult(t)
		if !ok {
			fmt.Fprintf(tw, "%s\t%d\t-\tno estimate: %s\t-\t-\t%s\t-\t\n", t.Name, t.Calls, ShortErr(t.Err), truthS)
			continue
		}
		conf := units.Percent(r.Confidence)
		m, lo, hi := units.Interval(r.Mean, r.Low, r.High)
		corr, cs, inside := "-", "-", "-"
		if c, err := calibrate.Correct(r, ovhd); err == nil {
			cm, clo, chi := units.Interval(c.Mean, c.Low, c.High)
			corr, cs = cm, "["+clo+", "+chi+"] ("+conf+")"
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
// truth (WriteDemoTable), the overhead subtracted and where it came from,
// and the commands that open the profiles written.
func WriteDemoSummary(w io.Writer, run *timing.Result, truth map[string]float64, ovhd calibrate.Overhead, ovhdFrom, timeOut, cpuOut string) error {
	fmt.Fprintf(w, "\n== each function's mean per call, timed with a %s clock, beside the truth the workload measured itself\n", units.Ns(run.Resolution))
	if err := WriteDemoTable(w, run, truth, ovhd); err != nil {
		return err
	}
	fmt.Fprintf(w, "T_ovhd (probe overhead subtracted in CORRECTED) = %s [%s, %s] at %s, %s.\n",
		units.Ns(ovhd.MeanNs), units.Ns(ovhd.LowNs), units.Ns(ovhd.HighNs), units.Percent(ovhd.Confidence), ovhdFrom)
	fmt.Fprintf(w, "\nOpen the profiles:\n  go tool pprof -top %s\n  go tool pprof -http=: %s\n  go tool pprof -top %s\n", timeOut, timeOut, cpuOut)
	return nil
}
