package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/budget"
	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/timing"
	"github.com/tickprof/tickprof/units"
)

// planFlags are the raw values of the plan command's flags.
type planFlags struct {
	resolution, expect, confidence string
	precision, absError            string
	digits                         int
	rate, loop                     string
	overhead, cost                 string
	asJSON                         bool
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan --resolution DUR --expect DUR (--precision 5% | --abs-error DUR | --digits N) [--rate N/s | --loop DUR]",
		Short: "How many executions (and how long) to measure for a target precision",
		Long: `plan computes how many executions of an interval must be timed with a clock
of the given resolution to estimate its mean to the precision asked for, at
the given confidence, and how long that takes at a call rate or loop period.

It uses the two-point model: an execution of expected length ET crosses k or
k+1 ticks of a clock with resolution d (k = floor(ET/d), f = ET/d - k), so

    n = z^2 d^2 f(1-f) / h^2        (h = the half-width asked for)

which is Chan's eq. 5, Beilner's 14a/14b, Danzig and Melvin's eq. 4 and
Lilja's 4.21/4.28 in one formula. Durations are Go syntax with decimals
(16.666ms, 40us, 1.5s); percentages are 5% or 0.05.`,
		Example: `  # Chan's example: a 3.33 ms module, a 16.666 ms clock, ±10% at 95%
  tickprof plan --resolution 16.666ms --expect 3.3332ms --precision 10%

  # Danzig's Figure 2: three significant digits of 1 ms with a 20 ms clock,
  # one iteration every 10 ms
  tickprof plan --resolution 20ms --expect 1ms --digits 3 --loop 10ms

  # ±1 µs on a 50 µs function called 2000 times a second, jiffies clock
  tickprof plan --resolution 4ms --expect 50us --abs-error 1us --rate 2000/s --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := runPlan(cmd, f)
			if err != nil {
				return err
			}
			if f.asJSON {
				return export.WriteJSON(cmd.OutOrStdout(), out)
			}
			return export.WritePlan(cmd.OutOrStdout(), out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.resolution, "resolution", "", "clock resolution `DUR` (tick length), e.g. 16.666ms, 4ms, 1us (required)")
	fl.StringVar(&f.expect, "expect", "", "expected duration `DUR` of one execution, e.g. 3.3332ms, 50us (required)")
	fl.StringVar(&f.confidence, "confidence", "95%", "confidence `LEVEL` of the interval, e.g. 95% or 0.95")
	fl.StringVar(&f.precision, "precision", "", "target relative half-width `PCT`, e.g. 5% (±5% of the mean) or 0.05")
	fl.StringVar(&f.absError, "abs-error", "", "target absolute half-width `DUR`, e.g. 1us")
	fl.IntVar(&f.digits, "digits", 0, "target significant `N` digits: half-width of one unit of the last digit, e.g. 3")
	fl.StringVar(&f.rate, "rate", "", "call `RATE` for the run time, e.g. 1000/s, 2.5/ms, 400Hz")
	fl.StringVar(&f.loop, "loop", "", "loop period `DUR` (one execution per cycle) for the run time, e.g. 10ms")
	fl.StringVar(&f.overhead, "overhead", "", "with --rate: the run time under a budget `PCT` on the target's slowdown (time --overhead)")
	fl.StringVar(&f.cost, "cost", "", "probe pair cost per call `DUR` for --overhead (default: twice the calibrated T_ovhd, as time --overhead charges)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object (keys executions, resolution_ns, expect_ns, confidence, half_width_ns, rel_half_width, run_time_ns)")
	cmd.SetFlagErrorFunc(flagError)
	addPlanFrom(cmd)
	addPlanQuantile(cmd)
	return cmd
}

// runPlan validates the flags and computes the plan.
func runPlan(cmd *cobra.Command, f planFlags) (export.Plan, error) {
	var out export.Plan
	fl := cmd.Flags()
	if f.resolution == "" {
		return out, usagef("plan needs --resolution: the clock's tick length, e.g. --resolution 4ms")
	}
	if f.expect == "" {
		return out, usagef("plan needs --expect: the expected duration of one execution, e.g. --expect 50us")
	}
	res, err := positiveDuration("--resolution", f.resolution)
	if err != nil {
		return out, err
	}
	exp, err := positiveDuration("--expect", f.expect)
	if err != nil {
		return out, err
	}
	conf, err := units.ParseConfidence(f.confidence)
	if err != nil {
		return out, usagef("--confidence: %v", err)
	}
	goal, err := planGoal(cmd, f)
	if err != nil {
		return out, err
	}
	if fl.Changed("rate") && fl.Changed("loop") {
		return out, usagef("give --rate or --loop, not both: the run time follows from one of them")
	}
	p, err := estimate.PlanExecutions(exp, res, goal, estimate.Options{Confidence: conf})
	if err != nil {
		return out, estimateErr(err)
	}
	out = export.Plan{Executions: p.Executions, ResolutionNs: res, ExpectNs: exp, Confidence: p.Confidence,
		HalfWidthNs: p.HalfWidth, RelHalfWidth: p.RelHalfWidth}
	switch {
	case fl.Changed("rate"):
		r, err := units.ParseRate(f.rate)
		if err != nil {
			return out, usagef("--rate: %v", err)
		}
		rt := estimate.RunTime(p.Executions, r)
		out.RunTimeNs, out.RatePerSec = &rt, &r
		if fl.Changed("overhead") {
			if err := planBudget(&out, f, p.Executions, r); err != nil {
				return out, err
			}
		}
	case fl.Changed("loop"):
		l, err := positiveDuration("--loop", f.loop)
		if err != nil {
			return out, err
		}
		if l < exp {
			return out, usagef("--loop %s is shorter than --expect %s: one execution per loop cycle needs a cycle at least as long as the execution", f.loop, f.expect)
		}
		rt := estimate.LoopRunTime(p.Executions, l)
		out.RunTimeNs, out.LoopNs = &rt, &l
	}
	if fl.Changed("overhead") && !fl.Changed("rate") {
		return out, usagef("--overhead needs --rate: the duty cycle follows from the call rate")
	}
	if x := exp / res; x == float64(int64(x)) {
		out.Note = "the expected duration is a whole number of ticks, where the two-point model predicts no spread at all; time a pilot run and plan from its measured spread"
	}
	return out, nil
}

// planGoal reads the one precision goal given: --precision, --abs-error
// or --digits.
func planGoal(cmd *cobra.Command, f planFlags) (estimate.Goal, error) {
	fl := cmd.Flags()
	var goal estimate.Goal
	set := 0
	if fl.Changed("precision") {
		set++
		p, err := units.ParsePercent(f.precision)
		if err != nil {
			return goal, usagef("--precision: %v", err)
		}
		if !(p > 0) {
			return goal, usagef("--precision %q must be above zero, e.g. 5%%", f.precision)
		}
		goal.RelHalfWidth = p
	}
	if fl.Changed("abs-error") {
		set++
		h, err := positiveDuration("--abs-error", f.absError)
		if err != nil {
			return goal, err
		}
		goal.AbsHalfWidth = h
	}
	if fl.Changed("digits") {
		set++
		if f.digits < 1 || f.digits > 15 {
			return goal, usagef("--digits %d: give a number of significant digits from 1 to 15, e.g. --digits 3", f.digits)
		}
		goal.Digits = f.digits
	}
	if set != 1 {
		return goal, usagef("give exactly one of --precision (e.g. 5%%), --abs-error (e.g. 1us) or --digits (e.g. 3)")
	}
	return goal, nil
}

// positiveDuration parses a duration flag and requires it to be above zero.
func positiveDuration(flag, v string) (float64, error) {
	d, err := units.ParseDuration(v)
	if err != nil {
		return 0, usagef("%s: %v", flag, err)
	}
	if !(d > 0) {
		return 0, usagef("%s %q must be above zero, e.g. %s 1ms", flag, v, flag)
	}
	return d, nil
}

// estimateErr turns an estimate input error into a usage error (exit 2).
func estimateErr(err error) error {
	if errors.Is(err, estimate.ErrInvalid) {
		return usageError{err}
	}
	return err
}

// noArgs rejects positional arguments with a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q: values go with flags, see %s --help", cmd.Name(), args[0], cmd.CommandPath())
	}
	return nil
}

// flagError marks cobra's flag-parsing errors (unknown flag, missing value)
// as usage errors.
func flagError(_ *cobra.Command, err error) error {
	return usageError{fmt.Errorf("%v (see --help)", err)}
}

// planBudget adds the run time under an overhead budget to a plan: the
// duty cycle that holds the budget at the call rate and probe cost
// (estimate.DutyForBudget, one thread: the safe case), and the time the
// executions take at that duty in windows of budget.DefaultWindow, at
// least estimate.MinStopBatches of them (estimate.PlanUnderBudget).
func planBudget(out *export.Plan, f planFlags, executions uint64, rate float64) error {
	b, err := units.ParsePercent(f.overhead)
	if err != nil || !(b > 0 && b < 1) {
		return usagef("--overhead %q: want a slowdown budget such as 1%%", f.overhead)
	}
	var cost float64
	if f.cost != "" {
		if cost, err = positiveDuration("--cost", f.cost); err != nil {
			return err
		}
	} else {
		c, err := calibrate.LoadCorrector("")
		if err != nil {
			return usagef("--overhead needs the probe cost: give --cost DUR or run `tickprof calibrate` (%v)", err)
		}
		o, ok := c.Overhead("user", 0.95)
		if !ok {
			return usagef("--overhead needs the probe cost: give --cost DUR (the calibration has no user probe cost)")
		}
		cost = timing.PairCost("user", o).High
	}
	q, err := estimate.DutyForBudget(b, rate*cost*1e-9)
	if err != nil {
		return estimateErr(err)
	}
	rt := estimate.PlanUnderBudget(executions, rate, q, float64(budget.DefaultWindow))
	out.Budget, out.Duty, out.BudgetRunTimeNs, out.CostNs = &b, &q, &rt, &cost
	return nil
}
