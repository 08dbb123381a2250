// SPDX-License-Identifier: Apache-2.0

package plan

import (
	"bytes"
	"fmt"
	"math"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/safefile"
)

// Quantile plans (plan --quantile): the calls a quantile's interval needs,
// from a pilot's histograms or an assumed law. For these, pilot imports
// histogram too.

// QuantileGoal is a plan for a quantile's interval: the calls its
// distribution-free interval needs to reach a relative half-width, as
// `time` reports it (widened to the histogram's buckets).
type QuantileGoal struct {
	// P is the quantile's level (0.99); Rel the relative half-width
	// (0.05 for ±5%); Confidence the interval's level.
	P, Rel, Confidence float64
	// Rate is the call rate (calls/s) to turn calls into run time; 0
	// for none, or, from a pilot run, its own rate.
	Rate float64
}

// QuantileAssumed plans under an assumed lognormal law of shape sigma (the
// standard deviation of the log durations; relative precisions do not
// depend on the median), with buckets of average width
// (histogram.MeanWidth).
func QuantileAssumed(g QuantileGoal, sigma float64) (Quantile, error) {
	out := Quantile{Quantile: g.P, RelHalfWidth: g.Rel, Confidence: g.Confidence}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return out, fmt.Errorf("lognormal shape %v is not positive: want, e.g., 1 (p99/p50 = 10)", sigma)
	}
	out.Assumption = fmt.Sprintf("durations assumed lognormal with shape %.3g (p99/p50 = %.3g), buckets of average width", sigma, math.Exp(2.326*sigma))
	qf := estimate.LogNormalQuantiles(sigma)
	out.Rows = []QuantileRow{quantileRow(g, "", g.Rate, func(o estimate.Options) (estimate.QuantilePlan, error) {
		return estimate.PlanQuantile(g.P, g.Rel, qf, histogram.MeanWidth, o)
	})}
	return out, nil
}

// QuantileFromFile plans every target of a pilot run (a `tickprof time
// --json` file, exact clock) from its own histogram, interpolated within
// buckets (histogram.Hist.PlanQuantile), and its call rate unless g.Rate
// is set. A target without a histogram, or with too few calls beyond the
// quantile to know the law's shape there, gets a row saying so.
func QuantileFromFile(path string, g QuantileGoal) (Quantile, error) {
	out := Quantile{Quantile: g.P, RelHalfWidth: g.Rel, Confidence: g.Confidence}
	data, err := safefile.ReadFile(path, "pilot", export.MaxProfileFile)
	if err != nil {
		return out, err
	}
	run, err := export.ReadTimeJSON(bytes.NewReader(data))
	if err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	out.Assumption = "durations as in " + path + " (each target's histogram, interpolated within buckets)"
	for i := range run.Targets {
		t := &run.Targets[i]
		if t.Hist == nil || t.Hist.Total() == 0 {
			out.Rows = append(out.Rows, QuantileRow{Target: t.Name, Err: "no duration histogram in the run: time it with the exact clock"})
			continue
		}
		rate := g.Rate
		if rate == 0 && run.Duration > 0 {
			rate = float64(t.Calls) / run.Duration.Seconds()
		}
		h := t.Hist
		out.Rows = append(out.Rows, quantileRow(g, t.Name, rate, func(o estimate.Options) (estimate.QuantilePlan, error) {
			return h.PlanQuantile(g.P, g.Rel, o)
		}))
	}
	return out, nil
}

// quantileRow is one row of a plan: plan's calls, and the run time at
// rate when rate is known.
func quantileRow(g QuantileGoal, name string, rate float64, plan func(o estimate.Options) (estimate.QuantilePlan, error)) QuantileRow {
	r := QuantileRow{Target: name, MinCalls: estimate.MinCallsForQuantile(g.P, g.Confidence)}
	pl, err := plan(estimate.Options{Confidence: g.Confidence})
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.Calls, r.ExpectedRelHalfWidth = pl.Calls, pl.RelHalfWidth
	if rate > 0 {
		rt := estimate.RunTime(pl.Calls, rate)
		r.RatePerSec, r.RunTimeNs = &rate, &rt
	}
	return r
}
