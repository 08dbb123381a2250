// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Numbers past their range are errors, not saturated or infinite results.
func TestRanges(t *testing.T) {
	// A plan beyond 2^53 executions (it saturated at 2^63 and was printed).
	_, err := PlanExecutions(1, 3.6e12, Goal{RelHalfWidth: 1e-9}, Options{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "2^53") {
		t.Errorf("huge plan: %v", err)
	}
	_, err = PlanFromPilot(Result{Mean: 1, StdErr: 1e6, Confidence: 0.95}, 10, 1e-6, Options{})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("huge pilot plan: %v", err)
	}
	// Confidence levels whose quantile is infinite or zero.
	for _, c := range []float64{1 - 1e-17, 1 - 1e-13, 1e-9, -0.5, 1, 7, math.NaN()} {
		if _, err := Time(Counts{Resolution: 1e6, Calls: 100, Ticks: 40}, Options{Confidence: c}); !errors.Is(err, ErrInvalid) {
			t.Errorf("confidence %v accepted: %v", c, err)
		}
	}
	for _, c := range []float64{MinConfidence, 0.95, MaxConfidence} {
		r, err := Time(Counts{Resolution: 1e6, Calls: 100, Ticks: 40}, Options{Confidence: c})
		if err != nil || !finite(r.Low, r.High) {
			t.Errorf("confidence %v: %+v %v", c, r, err)
		}
	}
	// Z outside (0, 1) is NaN, not a gonum panic.
	for _, c := range []float64{0, 1, 7, -1} {
		if z := Z(c); !math.IsNaN(z) {
			t.Errorf("Z(%v) = %v, want NaN", c, z)
		}
	}
	// A sum of squared ticks above (sum c)^2 is impossible.
	_, err = Time(Counts{Resolution: 1e6, Calls: 10, Ticks: 2, TicksSq: 5, HasTicksSq: true}, Options{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "at most 4") {
		t.Errorf("ticks-sq 5 for 2 ticks: %v", err)
	}
	if _, err := Time(Counts{Resolution: 1e6, Calls: 10, Ticks: 2, TicksSq: 4, HasTicksSq: true}, Options{}); err != nil {
		t.Errorf("ticks-sq 4 for 2 ticks in one call: %v", err)
	}
}
