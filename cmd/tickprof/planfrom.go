// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/plan"
)

// addPlanFrom adds `--from FILE` to the plan command: planning from a pilot
// run (a `tickprof time --json` file, a `tickprof time` profile, or any
// pprof CPU profile) instead of from an expected duration. Without --from
// the command runs as before.
func addPlanFrom(cmd *cobra.Command) {
	var from string
	cmd.Flags().StringVar(&from, "from", "", "plan from a pilot run: a tickprof time --json `FILE`, a tickprof time profile or a pprof CPU profile")
	cmd.Long += help("planfrom")
	cmd.Example += help("planfrom.example")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("from") {
			return run(c, args)
		}
		return runPlanFrom(c, from)
	}
}

func runPlanFrom(cmd *cobra.Command, path string) error {
	fl := cmd.Flags()
	prec, _ := fl.GetString("precision")
	absErr, _ := fl.GetString("abs-error")
	confS, _ := fl.GetString("confidence")
	rateS, _ := fl.GetString("rate")
	asJSON, _ := fl.GetBool("json")
	out := plan.Pilot{From: path}
	var confErr, goalErr, rateErr error
	out.Confidence, confErr = parseConfidence(confS)
	if fl.Changed("abs-error") {
		out.AbsHalfWidth, goalErr = positiveDuration("--abs-error", absErr)
	} else {
		if prec == "" {
			prec = "5%"
		}
		out.RelHalfWidth, goalErr = fractionFlag("--precision", prec, "a relative half-width such as 5%")
	}
	rate := 0.0
	if fl.Changed("rate") {
		rate, rateErr = units.ParseRate(rateS)
	}
	if err := cli.FirstErr(
		cli.UsageIf(len(cli.ChangedFlags(cmd, planNotFrom)) > 0, "%s does not go with --from: the pilot gives the durations; give --precision or --abs-error", cli.FirstArg(cli.ChangedFlags(cmd, planNotFrom))),
		confErr,
		cli.UsageIf(fl.Changed("precision") && fl.Changed("abs-error"), "give --precision or --abs-error, not both"),
		goalErr,
		cli.UsageIf(rateErr != nil, "--rate: %v", rateErr),
	); err != nil {
		return err
	}
	p, err := plan.FromFile(path, out, rate)
	if errors.Is(err, plan.ErrSharesNeedRelative) {
		return cli.Usagef("--abs-error: a CPU profile gives shares; give --precision")
	}
	if err != nil {
		return err
	}
	return export.Write(cmd.OutOrStdout(), asJSON, *p, table.WritePilotPlan)
}

// planNotFrom are the plan flags a pilot run replaces.
var planNotFrom = []string{"resolution", "expect", "digits", "loop"}
