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
	cmd.Long += `

With --from FILE, plan from a pilot run instead: for every target of a
tickprof time result (its JSON or its profile), the calls and the run time
still needed for --precision (or --abs-error) at --confidence, from the
pilot's observed spread and call rate (Lilja eq. 4.21); for a CPU profile,
the samples and sampling time still needed to know each top function's share
that well (Lilja eq. 4.28). --rate overrides the pilot's call rate.`
	cmd.Example += `

  # How much longer to time for ±2%, from a 10 s pilot
  tickprof time -u work --duration 10s --json pilot.json -- ./app
  tickprof plan --from pilot.json --precision 2%`
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
