// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// checkJSON is a target's clock check in the JSON document.
type checkJSON struct {
	Calls       uint64   `json:"calls"`
	TickMeanNs  *float64 `json:"tick_mean_ns"`
	TickLowNs   *float64 `json:"tick_low_ns"`
	TickHighNs  *float64 `json:"tick_high_ns"`
	Confidence  float64  `json:"confidence"`
	ExactMeanNs *float64 `json:"exact_mean_ns"`
	Agree       bool     `json:"agree"`
	// Resolves says the check is about as sharp as the target's (raw)
	// estimate (estimate.ClockCheck.Resolves).
	Resolves bool `json:"resolves"`
	// SampleLowNs and SampleHighNs are the interval of the checked calls'
	// exact mean as an estimate of every call's (estimate.ClockCheck.
	// ExactMean); absent when too few calls were checked.
	SampleLowNs  *float64 `json:"sample_low_ns,omitempty"`
	SampleHighNs *float64 `json:"sample_high_ns,omitempty"`
}

func checkToJSON(t *timing.TargetResult) *checkJSON {
	c := t.ClockCheck
	if c == nil {
		return nil
	}
	j := &checkJSON{Calls: c.Calls, TickMeanNs: fp(c.Tick.Mean), TickLowNs: fp(c.Tick.Low),
		TickHighNs: fp(c.Tick.High), Confidence: c.Tick.Confidence, ExactMeanNs: fp(c.Exact), Agree: c.Agree,
		Resolves: t.Err == "" && c.Resolves(t.Raw)}
	if x := c.ExactMean; x != nil {
		j.SampleLowNs, j.SampleHighNs = fp(x.Low), fp(x.High)
	}
	return j
}

func checkFromJSON(j *checkJSON) *estimate.ClockCheck {
	if j == nil || j.TickMeanNs == nil || j.TickLowNs == nil || j.TickHighNs == nil || j.ExactMeanNs == nil {
		return nil
	}
	c := &estimate.ClockCheck{Calls: j.Calls, Exact: *j.ExactMeanNs, Agree: j.Agree,
		Tick: estimate.Result{Mean: *j.TickMeanNs, Low: *j.TickLowNs, High: *j.TickHighNs,
			Confidence: j.Confidence, Calls: j.Calls}}
	if j.SampleLowNs != nil && j.SampleHighNs != nil && *j.SampleLowNs <= *j.ExactMeanNs && *j.ExactMeanNs <= *j.SampleHighNs {
		c.ExactMean = &estimate.Result{Mean: *j.ExactMeanNs, Low: *j.SampleLowNs, High: *j.SampleHighNs,
			Confidence: j.Confidence, Calls: j.Calls, Method: "z"}
	}
	return c
}

// ClockWarning returns the warning for a target whose clock check failed
// (the tick clock disagrees with the exact clock on the same calls), or ""
// when it passed or was not made. It is one line, for the table and the
// profile's comments.
func ClockWarning(t *timing.TargetResult, clock string) string {
	c := t.ClockCheck
	if c == nil || c.Agree {
		return ""
	}
	return fmt.Sprintf("warning: %s: the %s clock is not asynchronous with this program (it keeps time with the tick): on %d calls drawn at random and timed with both clocks, %s gives %s [%s, %s] (%.4g%%) where their exact mean is %s, so its estimate is biased and the mean reported rests on the exact sample; --clock tick:DUR (a random grid phase per call) or --clock ns time every call without the bias",
		t.Name, clock, c.Calls, clock, shortNs(c.Tick.Mean), shortNs(c.Tick.Low), shortNs(c.Tick.High),
		100*c.Tick.Confidence, shortNs(c.Exact))
}

// ClockNote returns, for a target whose clock check passed but is much
// less sharp than the target's interval (estimate.ClockCheck.Resolves), a
// one-line note saying what the check rules out; "" otherwise.
func ClockNote(t *timing.TargetResult, clock string) string {
	c := t.ClockCheck
	if c == nil || !c.Agree || t.Err != "" || c.Resolves(t.Raw) || c.Exact <= 0 || c.ExactMean != nil {
		// With the checked calls' exact mean, the interval reported
		// already holds it (estimate.ClockCheck.Decide).
		return ""
	}
	return fmt.Sprintf("note: %s: the %s clock check (%d calls drawn at random, timed with both clocks) agrees, but rules out only a bias beyond ±%.3g%% of the mean, more than this interval's ±%.3g%%: a program that keeps time with the tick (threads woken by it under CPU contention, loops sleeping to timer boundaries) could bias the mean unseen; --clock tick:DUR cannot be biased so",
		t.Name, clock, c.Calls, 100*c.Tick.HalfWidth()/c.Exact, 100*t.Raw.RelHalfWidth)
}

// ValidateNote says what --validate's verdict (timing.TargetResult.Covered) means,
// for the table and the profile's comments.
const ValidateNote = "COVERED (--validate): whether the tick-clock interval holds the exact mean of the same calls, read with the ns clock on every call: a check of the clock's quantization and of the estimator on these calls. It is not a check against the function's long-run mean (other calls, other runs): that is what EXACT MEAN's interval estimates, which also carries the calls' own spread"

// shortNs formats ns with 3 significant digits and a unit.
func shortNs(ns float64) string {
	switch a := ns; {
	case a >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	}
	return fmt.Sprintf("%.3gns", ns)
}
