package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/pilot"
	"github.com/tickprof/tickprof/units"
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
	for _, name := range []string{"resolution", "expect", "digits", "loop"} {
		if fl.Changed(name) {
			return usagef("--%s does not go with --from: the pilot gives the durations; give --precision or --abs-error", name)
		}
	}
	prec, _ := fl.GetString("precision")
	absErr, _ := fl.GetString("abs-error")
	confS, _ := fl.GetString("confidence")
	asJSON, _ := fl.GetBool("json")
	conf, err := units.ParseConfidence(confS)
	if err != nil {
		return usagef("--confidence: %v", err)
	}
	out := export.PilotPlan{From: path, Confidence: conf}
	switch {
	case fl.Changed("precision") && fl.Changed("abs-error"):
		return usagef("give --precision or --abs-error, not both")
	case fl.Changed("abs-error"):
		if out.AbsHalfWidth, err = positiveDuration("--abs-error", absErr); err != nil {
			return err
		}
	default:
		if prec == "" {
			prec = "5%"
		}
		p, err := units.ParsePercent(prec)
		if err != nil || !(p > 0 && p < 1) {
			return usagef("--precision %q: want a relative half-width such as 5%%", prec)
		}
		out.RelHalfWidth = p
	}
	rate := 0.0
	if fl.Changed("rate") {
		r, _ := fl.GetString("rate")
		if rate, err = units.ParseRate(r); err != nil {
			return usagef("--rate: %v", err)
		}
	}
	plan, err := pilot.FromFile(path, out, rate)
	if errors.Is(err, pilot.ErrSharesNeedRelative) {
		return usagef("--abs-error: a CPU profile gives shares; give --precision")
	}
	if err != nil {
		return err
	}
	out = *plan
	if asJSON {
		return export.WriteJSON(cmd.OutOrStdout(), out)
	}
	return export.WritePilotPlan(cmd.OutOrStdout(), out)
}
