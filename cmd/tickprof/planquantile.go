// SPDX-License-Identifier: Apache-2.0

package main

import (
	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/plan"
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
reports it: widened to the histogram's buckets (at most 4.5% wide), so
precisions below about ±2.5% cannot be promised. The durations' law is an assumption: lognormal with
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
				return cli.Usagef("--shape goes with --quantile")
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
		return table.WriteQuantilePlan(c.OutOrStdout(), p)
	}
}

// runPlanQuantile checks plan's flags for --quantile and plans through
// package pilot.
func runPlanQuantile(cmd *cobra.Command, quantile string, shape float64) (plan.Quantile, error) {
	fl := cmd.Flags()
	for _, name := range []string{"resolution", "expect", "digits", "loop", "abs-error"} {
		if fl.Changed(name) {
			return plan.Quantile{}, cli.Usagef("--%s does not go with --quantile: give --precision (and --rate or --from)", name)
		}
	}
	var g plan.QuantileGoal
	var err error
	if g.P, err = parseQuantile(quantile); err != nil {
		return plan.Quantile{}, cli.Usagef("--quantile: %v", err)
	}
	precS, _ := fl.GetString("precision")
	if precS == "" {
		return plan.Quantile{}, cli.Usagef("--quantile needs --precision, e.g. --precision 5%%")
	}
	if g.Rel, err = units.ParsePercent(precS); err != nil || !(g.Rel > 0 && g.Rel < 1) {
		return plan.Quantile{}, cli.Usagef("--precision %q: want a relative half-width such as 5%%", precS)
	}
	confS, _ := fl.GetString("confidence")
	if g.Confidence, err = units.ParseConfidence(confS); err != nil {
		return plan.Quantile{}, cli.Usagef("--confidence: %v", err)
	}
	if fl.Changed("rate") {
		r, _ := fl.GetString("rate")
		if g.Rate, err = units.ParseRate(r); err != nil {
			return plan.Quantile{}, cli.Usagef("--rate: %v", err)
		}
	}
	if !fl.Changed("from") {
		p, err := plan.QuantileAssumed(g, shape)
		if err != nil {
			return p, cli.Usagef("--shape: %v", err)
		}
		return p, nil
	}
	path, _ := fl.GetString("from")
	return plan.QuantileFromFile(path, g)
}
