// SPDX-License-Identifier: Apache-2.0

package main

import (
	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/plan"
	"github.com/tickprof/tickprof/timing"
)

// planFlags are the raw values of the plan command's flags.
type planFlags struct {
	resolution, expect  string
	precision, absError string
	digits              int
	rate, loop          string
	overhead, cost      string
	outputFlags
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := command("plan", "plan --resolution DUR --expect DUR (--precision 5% | --abs-error DUR | --digits N) [--rate N/s | --loop DUR]", "How many executions (and how long) to measure for a target precision", func(cmd *cobra.Command, _ []string) error {
		out, err := runPlan(cmd, f)
		if err != nil {
			return err
		}
		return export.Write(cmd.OutOrStdout(), f.json, out, table.WritePlan)
	})
	cmd.Args = cli.NoArgs
	fl := cmd.Flags()
	fl.StringVar(&f.resolution, "resolution", "", "clock resolution `DUR` (tick length), e.g. 16.666ms, 4ms, 1us (required)")
	fl.StringVar(&f.expect, "expect", "", "expected duration `DUR` of one execution, e.g. 3.3332ms, 50us (required)")
	f.add(cmd, "confidence `LEVEL` of the interval, e.g. 95% or 0.95", "print one JSON object (keys executions, resolution_ns, expect_ns, confidence, half_width_ns, rel_half_width, run_time_ns)")
	fl.StringVar(&f.precision, "precision", "", "target relative half-width `PCT`, e.g. 5% (±5% of the mean) or 0.05")
	fl.StringVar(&f.absError, "abs-error", "", "target absolute half-width `DUR`, e.g. 1us")
	fl.IntVar(&f.digits, "digits", 0, "target significant `N` digits: half-width of one unit of the last digit, e.g. 3")
	fl.StringVar(&f.rate, "rate", "", "call `RATE` for the run time, e.g. 1000/s, 2.5/ms, 400Hz")
	fl.StringVar(&f.loop, "loop", "", "loop period `DUR` (one execution per cycle) for the run time, e.g. 10ms")
	fl.StringVar(&f.overhead, "overhead", "", "with --rate: the run time under a budget `PCT` on the target's slowdown (time --overhead)")
	fl.StringVar(&f.cost, "cost", "", "probe pair cost per call `DUR` for --overhead (default: twice the calibrated T_ovhd, as time --overhead charges)")
	cmd.SetFlagErrorFunc(cli.FlagError)
	addPlanFrom(cmd)
	addPlanQuantile(cmd)
	return cmd
}

// runPlan validates the flags and computes the plan.
func runPlan(cmd *cobra.Command, f planFlags) (plan.Result, error) {
	fl := cmd.Flags()
	var e plan.Expected
	var resErr, expErr, goalErr error
	e.Resolution, resErr = positiveDuration("--resolution", f.resolution)
	e.Expect, expErr = positiveDuration("--expect", f.expect)
	conf, confErr := parseConfidence(f.confidence)
	e.Goal, goalErr = planGoal(cmd, f)
	if err := cli.FirstErr(
		cli.UsageIf(f.resolution == "", "plan needs --resolution: the clock's tick length, e.g. --resolution 4ms"),
		cli.UsageIf(f.expect == "", "plan needs --expect: the expected duration of one execution, e.g. --expect 50us"),
		resErr, expErr, confErr, goalErr,
		cli.UsageIf(fl.Changed("rate") && fl.Changed("loop"), "give --rate or --loop, not both: the run time follows from one of them"),
	); err != nil {
		return plan.Result{}, err
	}
	e.Options = estimate.Options{Confidence: conf}
	if err := planRun(cmd, f, &e); err != nil {
		return plan.Result{}, err
	}
	out, err := e.Plan()
	return out, estimateErr(err)
}

// planRun reads what turns executions into a run time: --rate (with
// --overhead and --cost) or --loop.
func planRun(cmd *cobra.Command, f planFlags, e *plan.Expected) error {
	fl := cmd.Flags()
	var err error
	switch {
	case fl.Changed("rate"):
		if e.Rate, err = units.ParseRate(f.rate); err != nil {
			return cli.Usagef("--rate: %v", err)
		}
		if fl.Changed("overhead") {
			return planBudget(f, e)
		}
	case fl.Changed("loop"):
		if e.Loop, err = positiveDuration("--loop", f.loop); err != nil {
			return err
		}
		if e.Loop < e.Expect {
			return cli.Usagef("--loop %s is shorter than --expect %s: one execution per loop cycle needs a cycle at least as long as the execution", f.loop, f.expect)
		}
	}
	return cli.UsageIf(fl.Changed("overhead") && !fl.Changed("rate"), "--overhead needs --rate: the duty cycle follows from the call rate")
}

// planGoal reads the one precision goal given: --precision, --abs-error
// or --digits.
func planGoal(cmd *cobra.Command, f planFlags) (estimate.Goal, error) {
	fl := cmd.Flags()
	var goal estimate.Goal
	var err error
	if fl.Changed("precision") {
		p, perr := units.ParsePercent(f.precision)
		goal.RelHalfWidth = p
		err = cli.FirstErr(cli.UsageIf(perr != nil, "--precision: %v", perr), cli.UsageIf(!(p > 0), "--precision %q must be above zero, e.g. 5%%", f.precision))
	}
	if fl.Changed("abs-error") && err == nil {
		goal.AbsHalfWidth, err = positiveDuration("--abs-error", f.absError)
	}
	if fl.Changed("digits") && err == nil {
		goal.Digits = f.digits
		err = cli.UsageIf(f.digits < 1 || f.digits > 15, "--digits %d: give a number of significant digits from 1 to 15, e.g. --digits 3", f.digits)
	}
	return goal, cli.FirstErr(err, cli.UsageIf(len(cli.ChangedFlags(cmd, []string{"precision", "abs-error", "digits"})) != 1,
		"give exactly one of --precision (e.g. 5%%), --abs-error (e.g. 1us) or --digits (e.g. 3)"))
}

// planBudget reads the overhead budget of a plan and the probe cost it
// is held against: --cost, or the whole pair's cost from this machine's
// calibrated user probe cost (the high end of its 95% interval; see
// timing.PairCost).
func planBudget(f planFlags, e *plan.Expected) error {
	var err error
	if e.Budget, err = fractionFlag("--overhead", f.overhead, "a slowdown budget such as 1%"); err != nil {
		return err
	}
	if f.cost != "" {
		e.Cost, err = positiveDuration("--cost", f.cost)
		return err
	}
	c, err := calibrate.LoadCorrector("")
	if err != nil {
		return cli.Usagef("--overhead needs the probe cost: give --cost DUR or run `tickprof calibrate` (%v)", err)
	}
	o, ok := c.Overhead("user", 0.95)
	e.Cost = timing.PairCost("user", o).High
	return cli.UsageIf(!ok, "--overhead needs the probe cost: give --cost DUR (the calibration has no user probe cost)")
}
