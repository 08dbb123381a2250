// SPDX-License-Identifier: Apache-2.0

package table

import (
	"strings"
	"testing"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// TestWriteBudget checks the line an overhead budget adds to the time
// table, whether or not the budget bound.
func TestWriteBudget(t *testing.T) {
	for _, c := range []struct {
		binding bool
		want    string
	}{
		{false, "the budget did not bind: probed all the time"},
		{true, "probed in random windows"},
	} {
		b := &timing.BudgetResult{Budget: 0.01, Binding: c.binding, Duty: 0.5, Windows: 7,
			Slowdown: estimate.Slowdown{Mean: 0.008, Low: 0.006, High: 0.01}, Cost: estimate.Result{Mean: 1500}}
		var out strings.Builder
		writeBudget(&out, b, "95%")
		if s := out.String(); !strings.Contains(s, c.want) || !strings.Contains(s, "over 7 windows") {
			t.Errorf("binding %v: %q lacks %q", c.binding, s, c.want)
		}
	}
}

// TestWriteRangeLimits checks the note for a target whose overhead is
// only bounded by the calibrated range: said when the range's half-width
// is above a quarter of the mean, with what would measure it instead, and
// not said when the range is narrow against the mean or was not used.
func TestWriteRangeLimits(t *testing.T) {
	rng := estimate.Result{Method: "pattern-range", Mean: 960, Low: 960, High: 6540}
	for _, c := range []struct {
		name   string
		budget bool
		echo   bool
		o      estimate.Result
		mean   float64
		want   string
	}{
		{"budget", true, false, rng, 110, "no run length narrows its MEAN below ±2.79 µs: without --overhead, echo windows measure it"},
		{"few echoes", false, true, rng, 110, "a longer run lets echo windows measure it"},
		{"no echo site", false, false, rng, 110, "its entry has no site for an echo"},
		{"narrow against the mean", true, false, rng, 20000, ""},
		{"echo", false, true, estimate.Result{Method: "echo", Mean: 960, Low: 0, High: 9000}, 110, ""},
	} {
		r := &timing.Result{Targets: []timing.TargetResult{{Name: "f", Corrected: true, Overhead: c.o, Estimate: estimate.Result{Mean: c.mean}}}}
		if c.budget {
			r.Budget = &timing.BudgetResult{}
		}
		if c.echo {
			r.Targets[0].Echo = &timing.EchoResult{}
		}
		var out strings.Builder
		writeRangeLimits(&out, r)
		s := out.String()
		if c.want == "" && s != "" || c.want != "" && !strings.Contains(s, c.want) {
			t.Errorf("%s: %q, want %q", c.name, s, c.want)
		}
	}
}
