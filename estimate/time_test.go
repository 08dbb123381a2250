// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"errors"
	"math"
	"math/big"
	"math/bits"
	"strings"
	"testing"
)

func TestTimeErrors(t *testing.T) {
	cases := []struct {
		name string
		c    Counts
		want string
	}{
		{"zero resolution", Counts{Resolution: 0, Calls: 10, Ticks: 1}, "resolution"},
		{"negative resolution", Counts{Resolution: -1, Calls: 10, Ticks: 1}, "resolution"},
		{"NaN resolution", Counts{Resolution: math.NaN(), Calls: 10, Ticks: 1}, "resolution"},
		{"infinite resolution", Counts{Resolution: math.Inf(1), Calls: 10, Ticks: 1}, "resolution"},
		{"no calls", Counts{Resolution: 1, Calls: 0}, "no calls"},
		{"ticks without calls", Counts{Resolution: 1, Calls: 0, Ticks: 5}, "no calls"},
		{"squares below ticks", Counts{Resolution: 1, Calls: 10, Ticks: 5, TicksSq: 4, HasTicksSq: true}, "c_i^2 >= c_i"},
		{"squares below mean square", Counts{Resolution: 1, Calls: 2, Ticks: 10, TicksSq: 40, HasTicksSq: true}, "(sum c)^2/n"},
		{"batches disagree", Counts{Resolution: 1, Calls: 10, Ticks: 5, Batches: []Batch{{5, 2}, {5, 2}}}, "batches sum"},
		{"batch ticks without calls", Counts{Resolution: 1, Batches: []Batch{{0, 2}, {5, 2}}}, "no calls"},
		{"bad confidence", Counts{Resolution: 1, Calls: 10, Ticks: 5}, "confidence"},
	}
	for _, tc := range cases {
		o := Options{}
		if tc.name == "bad confidence" {
			o.Confidence = 2
		}
		_, err := Time(tc.c, o)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want an ErrInvalid mentioning %q", tc.name, err, tc.want)
		}
	}
}

// checkResult asserts the invariants every Result must keep.
func checkInvariants(t *testing.T, what string, r Result) {
	t.Helper()
	if !finite(r.Mean, r.Low, r.High, r.StdErr) || !(r.Low <= r.Mean && r.Mean <= r.High) {
		t.Errorf("%s: interval %v <= %v <= %v broken", what, r.Low, r.Mean, r.High)
	}
	if r.Low < 0 {
		t.Errorf("%s: negative lower bound %v", what, r.Low)
	}
	if !(r.High > r.Low) {
		t.Errorf("%s: zero-width interval [%v, %v]", what, r.Low, r.High)
	}
	widest := 0.0
	for _, c := range r.Candidates {
		widest = math.Max(widest, c.High-c.Low)
	}
	if r.High-r.Low != widest {
		t.Errorf("%s: reported width %v is not the widest candidate's %v", what, r.High-r.Low, widest)
	}
}

func TestTimeTwoPoint(t *testing.T) {
	// 2000 calls, 400 of which crossed one tick of 16.666 ms: the
	// two-point interval with Wald is d (p ± z sqrt(p(1-p)/n)).
	const d = 16.666e6
	r, err := Time(Counts{Resolution: d, Calls: 2000, Ticks: 400}, Options{Interval: Wald})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "two-point", r)
	z := zQuantile(0.95)
	h := d * z * math.Sqrt(0.2*0.8/2000)
	if r.Method != "two-point" || r.Dist != "wald" || math.Abs(r.Mean-0.2*d) > 1e-6 ||
		math.Abs(r.Low-(0.2*d-h)) > 1e-6 || math.Abs(r.High-(0.2*d+h)) > 1e-6 {
		t.Errorf("got %+v, want mean %v ± %v by two-point/wald", r, 0.2*d, h)
	}
	if want := d * math.Sqrt(0.2*0.8/2000); math.Abs(r.StdErr-want) > 1e-6 { // Beilner 10a
		t.Errorf("stderr %v, want %v", r.StdErr, want)
	}
	if want := h / (0.2 * d); math.Abs(r.RelHalfWidth-want) > 1e-12 {
		t.Errorf("rel half-width %v, want %v", r.RelHalfWidth, want)
	}
	// k >= 1: 1000 calls crossing 2 or 3 ticks, 250 of them 3.
	r, err = Time(Counts{Resolution: 1, Calls: 1000, Ticks: 2250}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mean != 2.25 || !(r.Low > 2 && r.High < 3) || r.Dist != "wilson" {
		t.Errorf("k=2: got %+v, want mean 2.25 inside (2, 3) by wilson", r)
	}
}

func TestTimeRareAndZero(t *testing.T) {
	r, err := Time(Counts{Resolution: 1e6, Calls: 500, Ticks: 0, TicksSq: 0, HasTicksSq: true,
		Batches: []Batch{{250, 0}, {250, 0}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "zero ticks", r)
	// Exact upper bound on the crossing rate for 0/500.
	if want := 1e6 * (1 - math.Pow(0.025, 1.0/500)); r.Low != 0 || r.Mean != 0 || math.Abs(r.High-want) > 1e-6 {
		t.Errorf("zero ticks: got [%v, %v, %v], want [0, 0, %v]", r.Low, r.Mean, r.High, want)
	}
	if !math.IsInf(r.RelHalfWidth, 1) || r.Method != "two-point" || r.Dist != "exact" {
		t.Errorf("zero ticks: rel %v method %s/%s", r.RelHalfWidth, r.Method, r.Dist)
	}
	// Few crossings: never negative, exact interval.
	r, err = Time(Counts{Resolution: 1, Calls: 100, Ticks: 2, TicksSq: 2, HasTicksSq: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "two ticks", r)
	// Every call crossed exactly k ticks: the interval starts at k d.
	r, err = Time(Counts{Resolution: 10, Calls: 100, Ticks: 300, TicksSq: 900, HasTicksSq: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "constant k", r)
	if r.Low != 30 || r.Mean != 30 {
		t.Errorf("constant k: got %+v", r)
	}
}

func TestTimeWidestAndBatches(t *testing.T) {
	// Batches whose rates differ far more than binomial noise allows
	// (correlated calls): batch means must win.
	c := Counts{Resolution: 1, HasTicksSq: true, TicksSq: 4000,
		Batches: []Batch{{1000, 100}, {1000, 900}, {1000, 150}, {1000, 850}}}
	c.Calls, c.Ticks = 4000, 2000
	r, err := Time(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "correlated", r)
	if r.Method != "batch-means" || r.Dist != "t" || r.Batches != 4 || len(r.Candidates) != 3 {
		t.Errorf("correlated batches: method %s/%s, %d batches, %d candidates", r.Method, r.Dist, r.Batches, len(r.Candidates))
	}
	// The totals may be left zero and taken from the batches.
	c.Calls, c.Ticks = 0, 0
	r2, err := Time(c, Options{})
	if err != nil || r2.Mean != r.Mean || r2.High != r.High {
		t.Errorf("batch totals: %+v, %v", r2, err)
	}
	// Empty batches are skipped.
	c.Batches = append(c.Batches, Batch{})
	r3, err := Time(c, Options{})
	if err != nil || r3.Batches != 4 {
		t.Errorf("empty batch: %+v, %v", r3, err)
	}
	// Over-dispersed per-call counts: the observed variance wins.
	r, err = Time(Counts{Resolution: 1, Calls: 1000, Ticks: 5000, TicksSq: 125000, HasTicksSq: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "overdispersed", r)
	if r.Method != "observed" || r.Dist != "z" {
		t.Errorf("overdispersed: method %s/%s", r.Method, r.Dist)
	}
	// Fewer than 30 calls use Student t.
	r, err = Time(Counts{Resolution: 1, Calls: 10, Ticks: 50, TicksSq: 1250, HasTicksSq: true}, Options{})
	if err != nil || r.Method != "observed" || r.Dist != "t" {
		t.Errorf("small n: %+v, %v", r, err)
	}
}

func TestTimeContiguous(t *testing.T) {
	// A tight loop of 10000 cycles crossing 5000 ticks: without spread
	// information the two-point model (10a) is reported.
	c := Counts{Resolution: 1, Calls: 10000, Ticks: 5000, Contiguous: true}
	r, err := Time(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "contiguous", r)
	if r.Method != "two-point" || len(r.Candidates) != 2 {
		t.Errorf("contiguous without spread: %s, %d candidates", r.Method, len(r.Candidates))
	}
	// With steady batches, the ±d/n bound is what remains.
	c.Batches = nil
	for i := 0; i < 10; i++ {
		c.Batches = append(c.Batches, Batch{1000, 500})
	}
	r, err = Time(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "contiguous batches", r)
	if r.Method != "contiguous-bound" || math.Abs(r.High-r.Mean-1.0/10000) > 1e-15 {
		t.Errorf("steady contiguous batches: %s [%v, %v]", r.Method, r.Low, r.High)
	}
	// With sum c^2 and no batches, the per-call spread.
	c.Batches = nil
	c.HasTicksSq, c.TicksSq = true, 5000
	r, err = Time(c, Options{})
	if err != nil || r.Method != "contiguous" {
		t.Errorf("contiguous with squares: %+v, %v", r, err)
	}
}

func TestSampleVarExact(t *testing.T) {
	// Huge counters where float64 arithmetic would cancel: n = 1e12 calls
	// of 0 or 1 ticks, half crossing; sum c^2 = sum c.
	n, s := uint64(1e12), uint64(5e11)
	v, ok := sampleVar(n, s, new(big.Int).SetUint64(s))
	if !ok || math.Abs(v-0.25*float64(n)/float64(n-1)) > 1e-15 {
		t.Errorf("sampleVar = %v, %v", v, ok)
	}
	if _, ok := sampleVar(3, 3, big.NewInt(2)); ok {
		t.Error("sampleVar accepted n q < s^2")
	}
}

func TestTimeConfidenceLevels(t *testing.T) {
	c := Counts{Resolution: 1, Calls: 10000, Ticks: 3000, TicksSq: 3000, HasTicksSq: true}
	prev := 0.0
	for _, conf := range []float64{0.5, 0.8, 0.9, 0.95, 0.99, 0.999} {
		r, err := Time(c, Options{Confidence: conf})
		if err != nil {
			t.Fatal(err)
		}
		if r.Confidence != conf || !(r.High-r.Low > prev) {
			t.Errorf("confidence %v: width %v not above %v", conf, r.High-r.Low, prev)
		}
		prev = r.High - r.Low
	}
}

// TestTimeWideTicksSq: a sum of squared ticks past 64 bits (two calls of
// 2^33 and 2^33+2 ticks) gives the sample variance 2 ticks^2 exactly.
func TestTimeWideTicksSq(t *testing.T) {
	a := uint64(1) << 33
	hi1, lo1 := bits.Mul64(a, a)
	hi2, lo2 := bits.Mul64(a+2, a+2)
	lo, carry := bits.Add64(lo1, lo2, 0)
	c := Counts{Resolution: 1, Calls: 2, Ticks: 2*a + 2, TicksSq: lo, TicksSqHi: hi1 + hi2 + carry, HasTicksSq: true}
	r, err := Time(c, Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	var obs *Candidate
	for i := range r.Candidates {
		if r.Candidates[i].Method == "observed" {
			obs = &r.Candidates[i]
		}
	}
	if r.Mean != float64(a+1) || obs == nil || math.Abs(obs.StdErr-1) > 1e-12 {
		t.Errorf("mean %v, candidates %+v: want mean 2^33+1 and the observed se sqrt(2/2) = 1", r.Mean, r.Candidates)
	}
	c.TicksSqHi += 1 << 10 // 2^74 more: above (sum c)^2 = 2^68 + ..., inconsistent
	if _, err := Time(c, Options{}); err == nil {
		t.Error("no error for a sum of squares above the tick sum squared")
	}
}
