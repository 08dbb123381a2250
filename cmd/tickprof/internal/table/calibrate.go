// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/internal/units"
)

// WriteCalibration prints a calibration's tables: clock resolutions, clock
// read costs and probe overheads.
func WriteCalibration(w io.Writer, c *calibrate.Calibration) error {
	fmt.Fprintf(w, "machine: kernel %s, %s, %d CPUs; %s\n\n", c.Machine.KernelRelease, c.Machine.CPUModel, c.Machine.CPUs, c.Date.Format(time.RFC3339))
	if err := table(w, "CLOCK\tREAD IN\tCHANGES\tINCREMENT min / mean / max\tPERIOD min / mean / max\tMEAN PERIOD INTERVAL", func(tw io.Writer) {
		for _, r := range c.Clocks {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s / %s / %s\t%s / %s / %s\t[%s, %s] (%s)\n", r.Clock, r.Where, r.Changes,
				units.Ns(r.IncMinNs), units.Ns(r.IncMeanNs), units.Ns(r.IncMaxNs),
				units.Ns(r.PeriodMinNs), units.Ns(r.PeriodMeanNs), units.Ns(r.PeriodMaxNs),
				units.Ns(r.PeriodLowNs), units.Ns(r.PeriodHighNs), units.Percent(r.Confidence))
		}
	}); err != nil {
		return err
	}
	if len(c.ClockCosts) > 0 {
		fmt.Fprintln(w)
		if err := table(w, "CLOCK READ (BPF)\tCOST PER READ\tINTERVAL\tREADS", func(tw io.Writer) {
			for _, k := range c.ClockCosts {
				fmt.Fprintf(tw, "%s\t%s\t[%s, %s] (%s)\t%d\n", k.Helper, units.Ns(k.NsPerRead), units.Ns(k.LowNs), units.Ns(k.HighNs), units.Percent(k.Confidence), k.Reads)
			}
		}); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE KIND\tEMPTY TARGET\tRUNS\tCALLS\tT_ovhd MEAN\tMEAN'S INTERVAL\tA RUN'S T_ovhd (subtracted)\tRUN MEANS\tMIN\tBPF TIME/CALL (total)")
	for _, o := range c.Overheads {
		bpfCost := "-"
		if o.BPFNsPerCall > 0 {
			bpfCost = units.Ns(o.BPFNsPerCall)
		}
		runs, means, meanIv := max(o.Runs, 1), "-", "-"
		if len(o.RunMeansNs) > 0 {
			ms := make([]string, len(o.RunMeansNs))
			for i, m := range o.RunMeansNs {
				ms[i] = strconv.FormatFloat(m, 'f', 0, 64)
			}
			means = strings.Join(ms, " ") + " ns"
			meanIv = fmt.Sprintf("[%s, %s] (%s)", units.Ns(o.MeanLowNs), units.Ns(o.MeanHighNs), units.Percent(o.Confidence))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t[%s, %s] (%s, %s)\t%s\t%s\t%s\n", o.Kind, o.Target, runs, o.Calls, units.Ns(o.MeanNs), meanIv,
			units.Ns(o.LowNs), units.Ns(o.HighNs), units.Percent(o.Confidence), o.Method, means, units.Ns(float64(o.MinNs)), bpfCost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range c.Overheads {
		fmt.Fprintf(w, "  %s: %s\n", o.Kind, o.Note)
	}
	if err := writeInCall(w, c); err != nil {
		return err
	}
	for _, s := range c.Skipped {
		fmt.Fprintf(w, "not measured: %s\n", s)
	}
	return nil
}

// noisyModel is the model error S1 above which the calibration is said to
// have run disturbed: on the development machine at load 2-3 the fitted S1
// was 0.05-0.19; a run beside other tests gave 0.64.
const noisyModel = 0.3

// writeInCall prints each probe kind's in-call overhead model and the call
// patterns it was fitted on: what time subtracts inside a call, given the
// echo's gap G_on and wait P measured in the run itself.
func writeInCall(w io.Writer, c *calibrate.Calibration) error {
	for _, o := range c.Overheads {
		m := o.InCall
		if m == nil {
			continue
		}
		fmt.Fprintf(w, "\nin-call overhead, %s: O = %s + (%.3f + %.3f u) G_on + P, model error sqrt((%s)^2 + (%.3f G_on)^2) (one SD)\n",
			o.Kind, units.Ns(m.A), m.B, m.C, units.Ns(m.S0), m.S1)
		if m.S1 < calibrate.MinProgramSpread {
			fmt.Fprintf(w, "  corrections carry %.2f G_on instead of %.3f G_on: the least error for a program that was not calibrated (docs/overhead.md)\n", calibrate.MinProgramSpread, m.S1)
		}
		if m.S1 > noisyModel {
			fmt.Fprintf(w, "  note: the patterns miss the model by %.0f%% of G_on (one SD), more than the %.0f%% of a quiet machine: the calibration ran disturbed (load, other guests); every correction carries that error, so run `tickprof calibrate` again when the machine is quieter for tighter intervals\n",
				100*m.S1, 100*noisyModel)
		}
		if err := table(w, "  PATTERN\tCALLS\tECHOES\tBODY\tG_on\tP\tO MEASURED (± 1 SE)\tO MODEL", func(tw io.Writer) {
			for _, p := range m.Patterns {
				fit := m.Model().Predict(p.GNs, p.PNs, p.BodyNs)
				fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%s\t%s ± %s\t%s\n", p.Name, p.Calls, p.Echoes, units.Ns(p.BodyNs),
					units.Ns(p.GNs), units.Ns(p.PNs), units.Ns(p.ONs), units.Ns(p.ONsSE), units.Ns(fit))
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// table prints a header and the rows rows writes (tab-separated cells,
// one line each) as columns two spaces apart.
func table(w io.Writer, header string, rows func(tw io.Writer)) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	return tw.Flush()
}
