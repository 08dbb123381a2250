// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFitInCallExact: points on the model's surface give back its
// parameters and no model error.
func TestFitInCallExact(t *testing.T) {
	a, b, c := -250.0, 1.05, 0.3
	var pts []PatternPoint
	for _, body := range []float64{0, 2000, 10000} {
		for _, g := range []float64{1000, 1500, 2500, 4000} {
			o := a + (b+c*BodyShare(body))*g + 100
			pts = append(pts, PatternPoint{GNs: g, PNs: 100, ONs: o, ONsSE: 10, BodyNs: body})
		}
	}
	m, err := FitInCall(pts)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.A-a) > 1e-6 || math.Abs(m.B-b) > 1e-9 || math.Abs(m.C-c) > 1e-9 || m.S1 != 0 {
		t.Errorf("got A %v B %v C %v S1 %v, want %v %v %v 0", m.A, m.B, m.C, m.S1, a, b, c)
	}
	if m.LowNs > m.HighNs || m.TypicalNs != pts[0].ONs {
		t.Errorf("range [%v, %v], typical %v", m.LowNs, m.HighNs, m.TypicalNs)
	}
}

// TestFitInCallSpread: points that miss the model by a relative error of
// known spread (10%) beyond their own standard errors give an S1 near it.
// Averaged over 200 fits of 12 points, the estimate is within 0.07-0.13.
func TestFitInCallSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sum float64
	const fits = 200
	for f := 0; f < fits; f++ {
		var pts []PatternPoint
		for _, body := range []float64{0, 2000, 10000} {
			for _, g := range []float64{1000, 1500, 2500, 4000} {
				o := -200 + (1.1+0.2*BodyShare(body))*g
				o *= 1 + 0.10*rng.NormFloat64()
				o += 20 * rng.NormFloat64()
				pts = append(pts, PatternPoint{GNs: g, ONs: o, ONsSE: 20, BodyNs: body})
			}
		}
		m, err := FitInCall(pts)
		if err != nil {
			t.Fatal(err)
		}
		sum += m.S1
	}
	if mean := sum / fits; mean < 0.07 || mean > 0.13 {
		t.Errorf("mean S1 %.3f over %d fits, want about 0.10", mean, fits)
	}
}

// TestFitInCallRefuses too few points and gaps that do not differ.
func TestFitInCallRefuses(t *testing.T) {
	if _, err := FitInCall([]PatternPoint{{GNs: 1, ONs: 1}, {GNs: 2, ONs: 2}}); err == nil {
		t.Error("2 points: want an error")
	}
	same := []PatternPoint{{GNs: 1000, ONs: 900}, {GNs: 1000, ONs: 950}, {GNs: 1000, ONs: 920}, {GNs: 1000, ONs: 910}}
	if _, err := FitInCall(same); err == nil {
		t.Error("one gap: want an error")
	}
}

// TestDisturbed checks the rule that reruns a pattern run the machine
// disturbed, on the figures of the run that made it.
func TestDisturbed(t *testing.T) {
	b2b := PatternPoint{GNs: 1540}
	for _, c := range []struct {
		name string
		pt   PatternPoint
		p    callPattern
		want bool
	}{
		{"2us handler measured at 13.5us", PatternPoint{GNs: 25200, BodyNs: 13500}, callPattern{body: 2 * time.Microsecond, gap: time.Millisecond}, true},
		{"2us handler as it should be", PatternPoint{GNs: 4570, BodyNs: 2170}, callPattern{body: 2 * time.Microsecond, gap: 4 * time.Millisecond}, false},
		{"empty after 4ms, gaps of 24.5us", PatternPoint{GNs: 24500}, callPattern{gap: 4 * time.Millisecond}, true},
		{"empty after 10ms, gaps of 4.3us", PatternPoint{GNs: 4330}, callPattern{gap: 10 * time.Millisecond}, false},
		{"back to back, waits of 1.5us beside 1.1us on CPU", PatternPoint{GNs: 1089, PNs: 1523}, callPattern{}, true},
	} {
		if got := disturbed(c.pt, c.p, b2b); got != c.want {
			t.Errorf("%s: disturbed %v, want %v", c.name, got, c.want)
		}
	}
}

// TestModelProgramSpread: the model the estimator gets carries at least
// MinProgramSpread of relative error, and keeps a larger fitted one.
func TestModelProgramSpread(t *testing.T) {
	if s := (InCallModel{B: 1, S1: 0.05}).Model().S1; s != MinProgramSpread {
		t.Errorf("fitted 0.05: S1 %v, want %v", s, MinProgramSpread)
	}
	if s := (InCallModel{B: 1, S1: 0.4}).Model().S1; s != 0.4 {
		t.Errorf("fitted 0.4: S1 %v, want 0.4", s)
	}
}
