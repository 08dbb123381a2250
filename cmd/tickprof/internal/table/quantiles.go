// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/plan"
	"github.com/tickprof/tickprof/timing"
)

// quantileColumns are the quantile levels of a run's table (those of its
// first target with quantiles) and whether it shows MIN and MAX (exact
// clock).
func quantileColumns(r *timing.Result) (levels []float64, extremes bool) {
	for i := range r.Targets {
		t := &r.Targets[i]
		if t.Exact != nil && !r.Validate {
			extremes = true
		}
		if levels == nil && len(t.Quantiles) > 0 {
			for _, q := range t.Quantiles {
				levels = append(levels, q.P)
			}
		}
	}
	return levels, extremes
}

// quantileCells are a target's MIN, MAX and quantile cells.
func quantileCells(t *timing.TargetResult, levels []float64, extremes bool) string {
	var s string
	if extremes {
		if x := t.Exact; x != nil && t.Calls > 0 && t.Corrected && x.Max > 0 {
			// On the quantiles' footing: the overhead's mean subtracted.
			s += units.Ns(x.CorrectedMin) + "\t" + units.Ns(x.CorrectedMax) + "\t"
		} else if x != nil && t.Calls > 0 {
			s += units.Ns(float64(x.Min)) + "\t" + units.Ns(float64(x.Max)) + "\t"
		} else {
			s += "-\t-\t"
		}
	}
	for _, p := range levels {
		cell := "-"
		for _, q := range t.Quantiles {
			if q.P == p {
				cell = export.QuantileCell(q)
			}
		}
		s += cell + "\t"
	}
	return s
}

// writeQuantileNotes draws each target's histogram with its quantiles
// marked and says how the quantile intervals are built.
func writeQuantileNotes(w io.Writer, r *timing.Result, levels []float64) error {
	if len(levels) == 0 {
		return nil
	}
	corrected, byDist := false, false
	for i := range r.Targets {
		t := &r.Targets[i]
		if t.Hist == nil || t.Hist.Total() == 0 {
			continue
		}
		fmt.Fprintln(w)
		// The histogram is of the measured durations: mark the measured
		// quantiles.
		qs := t.Quantiles
		if t.RawQuantiles != nil {
			qs, corrected = t.RawQuantiles, true
			byDist = byDist || t.Overhead.Method == "echo"
		}
		if err := WriteHistogram(w, t.Name, t.Hist, qs); err != nil {
			return err
		}
	}
	note := "they are of the measured durations, probe overhead included"
	if byDist {
		note = "in the table they are corrected by the distribution of the probe overhead its echoes measured in this run (bounds that hold whatever the overhead's relation to the call, docs/overhead.md), and MIN and MAX less its mean; in the histograms as measured"
	} else if corrected {
		note = "in the table they are corrected for the probe overhead (its interval subtracted from each end), and MIN and MAX less its mean; in the histograms as measured"
	}
	_, err := fmt.Fprintf(w, "\nquantiles: distribution-free order-statistic intervals (exact binomial ranks) widened to the histogram's buckets (16 per power of two, at most 4.5%% wide), or to the finer bins of the buckets refined near them while the calls came in; %s\n", note)
	return err
}

// WriteQuantilePlan prints a quantile plan for a person.
func WriteQuantilePlan(w io.Writer, p plan.Quantile) error {
	fmt.Fprintf(w, "%s within ±%s at %s confidence, %s\n", export.QuantileName(p.Quantile), units.Percent(p.RelHalfWidth), units.Percent(p.Confidence), p.Assumption)
	for _, r := range p.Rows {
		name := ""
		if r.Target != "" {
			name = r.Target + ": "
		}
		if r.Err != "" {
			fmt.Fprintf(w, "%sno plan: %s\n", name, r.Err)
			continue
		}
		fmt.Fprintf(w, "%s%d calls (expected ±%s; at least %d for any interval)", name, r.Calls, units.Percent(r.ExpectedRelHalfWidth), r.MinCalls)
		if r.RunTimeNs != nil {
			fmt.Fprintf(w, ", %s at %.4g calls/s", units.LongNs(*r.RunTimeNs), *r.RatePerSec)
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintln(w, "the interval is the order-statistic one time reports, widened to the histogram's buckets; time --precision-of stops after it holds at two looks 25% apart, so a run may take up to about 1.6x the calls above")
	return err
}
