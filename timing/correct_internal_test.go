// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"math"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// TestRangeBounds: without echoes the calibrated patterns' range is
// widened at each end by the model's error at the gap that end stands for
// (O = A + B G inverted), at the confidence's z, and stops at 0.
func TestRangeBounds(t *testing.T) {
	m := estimate.OverheadModel{A: -1000, B: 1.6, S0: 90, S1: 0.25}
	cal := OverheadCalibration{Model: m, Typical: 1055, Low: 1055, High: 7850}
	low, high := rangeBounds(cal, 0.95)
	z := estimate.Z(0.95)
	gLow, gHigh := (1055.0+1000)/1.6, (7850.0+1000)/1.6
	wantLow := 1055 - z*math.Hypot(90, 0.25*gLow)
	wantHigh := 7850 + z*math.Hypot(90, 0.25*gHigh)
	if math.Abs(low-wantLow) > 1e-9 || math.Abs(high-wantHigh) > 1e-9 {
		t.Errorf("range [%v, %v], want [%v, %v]", low, high, wantLow, wantHigh)
	}
	// The ~100 ns function's 780 ns back to back lies inside.
	if !(low < 780) {
		t.Errorf("low %v: the 780 ns seen on another program is outside", low)
	}
	small := OverheadCalibration{Model: m, Typical: 100, Low: 100, High: 200}
	if low, _ := rangeBounds(small, 0.95); low != 0 {
		t.Errorf("low %v, want 0", low)
	}
}
