package main

import (
	"fmt"
	"math"
	"os"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/histogram"
	"github.com/tickprof/tickprof/units"
)

// addPlanQuantile adds `--quantile Q` (and --shape) to the plan command:
// the calls a quantile's interval needs for --precision, under an assumed
// lognormal law or, with --from, the histogram of an earlier
// `tickprof time --json` run with the exact clock.
func addPlanQuantile(cmd *cobra.Command) {
	var quantile string
	var shape float64
	cmd.Flags().StringVar(&quantile, "quantile", "", "plan for a quantile's interval instead of the mean, e.g. 99 or p99.9 (with --precision)")
	cmd.Flags().Float64Var(&shape, "shape", 1, "with --quantile and no --from: the assumed lognormal shape (sd of log durations; 1 is p99/p50 = 10)")
	cmd.Long += `

With --quantile Q, plan the calls a quantile's distribution-free interval
needs to reach --precision (a relative half-width), as time --quantiles
reports it: widened to the histogram's buckets, so precisions below about
±3% cannot be promised. The durations' law is an assumption: lognormal with
--shape (its relative precision does not depend on the median), or, with
--from FILE (a tickprof time --json run with the exact clock), each target's
measured histogram and call rate.`
	cmd.Example += `

  # calls for p99 within ±5%, durations assumed lognormal with p99/p50 = 10
  tickprof plan --quantile 99 --precision 5%
  # from a pilot run's histograms
  tickprof plan --quantile 99.9 --precision 10% --from pilot.json`
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("quantile") {
			if c.Flags().Changed("shape") {
				return usagef("--shape goes with --quantile")
			}
			return run(c, args)
		}
		p, err := runPlanQuantile(c, quantile, shape)
		if err != nil {
			return err
		}
		if asJSON, _ := c.Flags().GetBool("json"); asJSON {
			return export.WriteJSON(c.OutOrStdout(), p)
		}
		return export.WriteQuantilePlan(c.OutOrStdout(), p)
	}
}

func runPlanQuantile(cmd *cobra.Command, quantile string, shape float64) (export.QuantilePlan, error) {
	var out export.QuantilePlan
	fl := cmd.Flags()
	for _, name := range []string{"resolution", "expect", "digits", "loop", "abs-error"} {
		if fl.Changed(name) {
			return out, usagef("--%s does not go with --quantile: give --precision (and --rate or --from)", name)
		}
	}
	p, err := parseQuantile(quantile)
	if err != nil {
		return out, usagef("--quantile: %v", err)
	}
	precS, _ := fl.GetString("precision")
	if precS == "" {
		return out, usagef("--quantile needs --precision, e.g. --precision 5%%")
	}
	rel, err := units.ParsePercent(precS)
	if err != nil || !(rel > 0 && rel < 1) {
		return out, usagef("--precision %q: want a relative half-width such as 5%%", precS)
	}
	confS, _ := fl.GetString("confidence")
	conf, err := units.ParseConfidence(confS)
	if err != nil {
		return out, usagef("--confidence: %v", err)
	}
	rate := 0.0
	if fl.Changed("rate") {
		r, _ := fl.GetString("rate")
		if rate, err = units.ParseRate(r); err != nil {
			return out, usagef("--rate: %v", err)
		}
	}
	o := estimate.Options{Confidence: conf}
	out = export.QuantilePlan{Quantile: p, RelHalfWidth: rel, Confidence: conf}
	row := func(name string, qf func(float64) float64, bucket func(float64) float64, rate float64) export.QuantilePlanRow {
		r := export.QuantilePlanRow{Target: name, MinCalls: estimate.MinCallsForQuantile(p, conf)}
		pl, err := estimate.PlanQuantile(p, rel, qf, bucket, o)
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
	if !fl.Changed("from") {
		if !(shape > 0) || math.IsInf(shape, 0) {
			return out, usagef("--shape %v: want a positive lognormal shape, such as 1", shape)
		}
		out.Assumption = fmt.Sprintf("durations assumed lognormal with shape %.3g (p99/p50 = %.3g), buckets of average width", shape, math.Exp(2.326*shape))
		out.Rows = append(out.Rows, row("", estimate.LogNormalQuantiles(shape), histogram.MeanWidth, rate))
		return out, nil
	}
	path, _ := fl.GetString("from")
	f, err := os.Open(path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	run, err := export.ReadTimeJSON(f)
	if err != nil {
		return out, usagef("--from %s: %v", path, err)
	}
	out.Assumption = "durations as in " + path + " (each target's histogram, interpolated within buckets)"
	for i := range run.Targets {
		t := &run.Targets[i]
		if t.Hist == nil || t.Hist.Total() == 0 {
			out.Rows = append(out.Rows, export.QuantilePlanRow{Target: t.Name, Err: "no duration histogram in the run: time it with --clock ns"})
			continue
		}
		if tail := float64(t.Hist.Total()) * math.Min(p, 1-p); tail < 20 {
			out.Rows = append(out.Rows, export.QuantilePlanRow{Target: t.Name,
				Err: fmt.Sprintf("the run has %.0f calls beyond %s, too few to know the durations' shape there: time longer, or plan under an assumed law (without --from)", tail, export.QuantileName(p))})
			continue
		}
		rt := rate
		if rt == 0 && run.Duration > 0 {
			rt = float64(t.Calls) / run.Duration.Seconds()
		}
		out.Rows = append(out.Rows, row(t.Name, t.Hist.Quantiles(), histogram.Width, rt))
	}
	return out, nil
}
