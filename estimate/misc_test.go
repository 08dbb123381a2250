// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"errors"
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestMeans(t *testing.T) {
	xs := []float64{8.0, 7.0, 5.0, 9.0, 9.5, 11.3, 5.2, 8.5}
	r, err := MeanOfSamples(xs, Options{Confidence: 0.90})
	if err != nil {
		t.Fatal(err)
	}
	// n = 8 < 30: Student t with 7 degrees of freedom, t = 1.895.
	s := 0.0
	for _, x := range xs {
		s += (x - 7.9375) * (x - 7.9375)
	}
	se := math.Sqrt(s/7) / math.Sqrt(8)
	if r.Method != "t" || !near(r.Mean, 7.9375, 1e-12) || !near(r.High-r.Mean, 1.894579*se, 1e-5) {
		t.Errorf("MeanOfSamples = %+v", r)
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	r2, err := MeanFromSums(uint64(len(xs)), sum, sq, Options{Confidence: 0.90})
	if err != nil || !near(r2.Low, r.Low, 1e-9) || !near(r2.High, r.High, 1e-9) {
		t.Errorf("MeanFromSums = %+v, %v; want %+v", r2, err, r)
	}
	// From 30 measurements on, the normal quantile.
	big := make([]float64, 30)
	for i := range big {
		big[i] = float64(i % 7)
	}
	r, err = MeanOfSamples(big, Options{})
	if err != nil || r.Method != "z" {
		t.Errorf("30 samples: %+v, %v", r, err)
	}
	for _, bad := range [][]float64{nil, {1}, {1, math.NaN()}, {math.Inf(1), 2}} {
		if _, err := MeanOfSamples(bad, Options{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("MeanOfSamples(%v) error %v", bad, err)
		}
	}
	if _, err := MeanFromSums(10, 10, 1, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("inconsistent sums accepted: %v", err)
	}
	if _, err := MeanFromSums(1, 1, 1, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("one measurement accepted: %v", err)
	}
}

func TestShareAndTimePerCall(t *testing.T) {
	p, err := Share(658, 6000, Options{Interval: Wald})
	if err != nil {
		t.Fatal(err)
	}
	if p.Method != "wald" || !near(p.Low, 0.1018, 5e-5) || !near(p.High, 0.1176, 5e-5) {
		t.Errorf("Share = %+v", p)
	}
	m, lo, hi := p.Scale(60e9)
	if !near(m, p.Share*60e9, 1) || !near(lo, p.Low*60e9, 1) || !near(hi, p.High*60e9, 1) {
		t.Errorf("Scale = %v %v %v", m, lo, hi)
	}
	if _, err := Share(11, 10, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("hits > samples: %v", err)
	}
	if _, err := Share(0, 0, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no samples: %v", err)
	}
	p, err = Share(0, 800, Options{})
	if err != nil || p.Low != 0 || !(p.High > 0) || p.Method != "exact" {
		t.Errorf("Share(0, 800) = %+v, %v", p, err)
	}

	// 12 hits every 10 ms over 40 calls: 3 ms per call.
	r, err := TimePerCall(12, 10e6, 40, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, "TimePerCall", r)
	if !near(r.Mean, 3e6, 1e-6) || r.Method != "poisson-exact" {
		t.Errorf("TimePerCall = %+v", r)
	}
	if _, err := TimePerCall(1, 0, 1, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero period: %v", err)
	}
	if _, err := TimePerCall(1, 1, 0, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero calls: %v", err)
	}
}

// The seeds' sample-size formulas, written as printed, for comparison with
// PlanExecutions (which uses the single two-point formula).
func chanEq5(z, e, k, p float64) float64 { return z * z * p * (1 - p) / ((k + p) * (k + p) * e * e) }
func beilner14a(wr, p, k, dOverET float64) float64 {
	return (wr / p) * (wr / p) * (1 - k*dOverET) * ((1+k)*dOverET - 1)
}
func danzigEq4(z, delta, p, eps float64) float64 {
	return z * z * delta * delta * p * (1 - p) / (eps * eps)
}
func liljaEq428(z, p, e float64) float64 { return z * z * p * (1 - p) / (p * e * p * e) }

func TestPlanIsOneFormula(t *testing.T) {
	z := zQuantile(0.95)
	for _, c := range []struct{ et, d float64 }{{3.3332, 16.666}, {50, 1000}, {100, 1000}, {1.5, 1}, {7.25, 2}, {0.3, 1}} {
		x := c.et / c.d
		k := math.Floor(x)
		f := x - k
		for _, e := range []float64{0.1, 0.05, 0.01} {
			p, err := PlanExecutions(c.et, c.d, Goal{RelHalfWidth: e}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := []float64{
				chanEq5(z, e, k, f),
				beilner14a(2*z, 2*e, k, c.d/c.et),
				danzigEq4(z, c.d, f, e*c.et),
			}
			if k == 0 {
				want = append(want, liljaEq428(z, f, e))
			}
			for i, w := range want {
				if math.Abs(float64(p.Executions)-math.Ceil(w)) > 1 {
					t.Errorf("ET=%v d=%v e=%v: %d executions, seed formula %d gives %v", c.et, c.d, e, p.Executions, i, w)
				}
			}
			if p.RelHalfWidth > e*(1+1e-9) || !near(p.HalfWidth/c.et, p.RelHalfWidth, 1e-12) {
				t.Errorf("ET=%v d=%v e=%v: plan reaches %v", c.et, c.d, e, p.RelHalfWidth)
			}
		}
	}
}

func TestPlanGoals(t *testing.T) {
	// Danzig and Melvin's Figure 2: d = 20 ms, 1 ms intervals to three
	// significant digits need about 7e5 iterations, to two about 7e3.
	p3, err := PlanExecutions(1e6, 20e6, Goal{Digits: 3}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := PlanExecutions(1e6, 20e6, Goal{Digits: 2}, Options{})
	if math.Abs(float64(p3.Executions)-7.3e5) > 0.05e5 || math.Abs(float64(p2.Executions)-7.3e3) > 0.05e3 {
		t.Errorf("digits: %d and %d executions", p3.Executions, p2.Executions)
	}
	if !near(p3.HalfWidth, 1e4, 1) {
		t.Errorf("3 digits of 1 ms: half-width %v, want 10 us", p3.HalfWidth)
	}
	pa, _ := PlanExecutions(1e6, 20e6, Goal{AbsHalfWidth: 1e4}, Options{})
	if pa.Executions != p3.Executions {
		t.Errorf("absolute goal %d != digits goal %d", pa.Executions, p3.Executions)
	}
	// Exactly a whole number of ticks: the model has no variance.
	p, err := PlanExecutions(2e6, 1e6, Goal{RelHalfWidth: 0.05}, Options{})
	if err != nil || p.Executions != 1 {
		t.Errorf("whole ticks: %+v, %v", p, err)
	}
	for _, g := range []Goal{{}, {RelHalfWidth: 0.1, Digits: 2}, {RelHalfWidth: -1}, {AbsHalfWidth: math.NaN()}, {Digits: 40}} {
		if _, err := PlanExecutions(1, 10, g, Options{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("goal %+v: error %v", g, err)
		}
	}
	if _, err := PlanExecutions(0, 10, Goal{RelHalfWidth: 0.1}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero expectation: %v", err)
	}
	if _, err := PlanExecutions(1, -10, Goal{RelHalfWidth: 0.1}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative resolution: %v", err)
	}
	if got := RunTime(1000, 500); got != 2e9 {
		t.Errorf("RunTime = %v", got)
	}
	if got := LoopRunTime(1000, 2.5e6); got != 2.5e9 {
		t.Errorf("LoopRunTime = %v", got)
	}
	if !math.IsInf(RunTime(1, 0), 1) {
		t.Error("RunTime at rate 0 is finite")
	}
}

func TestPlanFromPilot(t *testing.T) {
	xs := []float64{8.0, 7.0, 5.0, 9.0, 9.5, 11.3, 5.2, 8.5}
	r, _ := MeanOfSamples(xs, Options{Confidence: 0.90})
	p, err := PlanFromPilot(r, 8, 0.035, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Lilja eq. 4.21 with z = 1.645 (the book uses t = 1.895 and gets 213).
	s := r.StdErr * math.Sqrt(8)
	want := math.Ceil(math.Pow(zQuantile(0.90)*s/(0.035*r.Mean), 2))
	if float64(p.Executions) != want || p.Confidence != 0.90 {
		t.Errorf("PlanFromPilot = %+v, want %v executions", p, want)
	}
	if _, err := PlanFromPilot(Result{Mean: 0, StdErr: 1, Confidence: 0.95}, 10, 0.05, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("zero pilot mean: %v", err)
	}
}

func TestReachedAndMoreCalls(t *testing.T) {
	// 100000 calls crossing 20000 ticks: rel. half-width about 1.8%.
	c := Counts{Resolution: 1, Calls: 100000, Ticks: 20000, TicksSq: 20000, HasTicksSq: true}
	r, _ := Time(c, Options{})
	if !Reached(r, 0.05) || Reached(r, 0.01) {
		t.Errorf("Reached at rel %v", r.RelHalfWidth)
	}
	if m, err := MoreCalls(c, 0.05, Options{}); err != nil || m != 0 {
		t.Errorf("MoreCalls when reached = %d, %v", m, err)
	}
	more, err := MoreCalls(c, 0.01, Options{})
	if err != nil || more == 0 {
		t.Fatalf("MoreCalls = %d, %v", more, err)
	}
	// Running those calls at the same rate reaches the goal.
	n := c.Calls + more
	c2 := Counts{Resolution: 1, Calls: n, Ticks: n / 5, TicksSq: n / 5, HasTicksSq: true}
	r2, _ := Time(c2, Options{})
	if r2.RelHalfWidth > 0.0101 {
		t.Errorf("after %d more calls rel. half-width is %v", more, r2.RelHalfWidth)
	}
	// Too few crossings never count as reached, however tight.
	if Reached(Result{RelHalfWidth: 0.01, Events: MinStopEvents - 1}, 0.05) {
		t.Error("Reached with too few events")
	}
	if Reached(Result{RelHalfWidth: 0.01, Events: 1000, Batches: MinStopBatches - 1}, 0.05) {
		t.Error("Reached with too few batches")
	}
	// No crossing yet: a finite, positive answer.
	more, err = MoreCalls(Counts{Resolution: 1, Calls: 100}, 0.05, Options{})
	if err != nil || more == 0 || more > 1e9 {
		t.Errorf("MoreCalls with no ticks = %d, %v", more, err)
	}
	if _, err := MoreCalls(c, 0, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("rel 0: %v", err)
	}
}

func TestComparisons(t *testing.T) {
	// Lilja 5.1.2 Table 5.2: df 6.01 rounds to 6, t_{0.95;6} = 1.943.
	a := []float64{1011, 998, 1113, 1008, 1100, 1039, 1003, 1098}
	b := []float64{894, 963, 1098, 982, 1046}
	d, err := Welch(a, b, Options{Confidence: 0.90})
	if err != nil {
		t.Fatal(err)
	}
	ma, va, _ := meanVar(a)
	mb, vb, _ := meanVar(b)
	se := math.Sqrt(va/8 + vb/5)
	if d.Method != "t" || !near(d.Diff, ma-mb, 1e-9) || !near(d.High-d.Diff, tQuantile(0.90, 6)*se, 1e-9) || d.Significant {
		t.Errorf("Welch = %+v", d)
	}
	// Paired differences.
	p, err := Paired([]float64{10, 12, 11, 13}, []float64{9, 10, 10, 11}, Options{})
	if err != nil || !near(p.Diff, 1.5, 1e-12) || !p.Significant {
		t.Errorf("Paired = %+v, %v", p, err)
	}
	if _, err := Paired([]float64{1, 2}, []float64{1}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unequal pairs: %v", err)
	}
	// Lilja 5.1.3: s_p = 3.911e-4.
	dp, err := DiffProportions(142892, 1300203, 84876, 999382, Options{Interval: Wald})
	if err != nil || !near(dp.StdErr, 3.911e-4, 1e-7) || !dp.Significant || dp.Method != "wald" {
		t.Errorf("DiffProportions = %+v, %v", dp, err)
	}
	dn, err := DiffProportions(3, 100, 0, 100, Options{})
	if err != nil || dn.Significant || !(dn.Low < 0 && dn.High > 0.03) {
		t.Errorf("Newcombe 3/100 vs 0/100 = %+v, %v", dn, err)
	}
	if _, err := DiffProportions(3, 2, 0, 100, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("hits > samples: %v", err)
	}

	base := Result{Mean: 100, Low: 90, High: 110, StdErr: 5, Confidence: 0.95}
	nw := Result{Mean: 130, Low: 120, High: 140, StdErr: 5, Confidence: 0.95}
	dr, err := DiffResults(base, nw)
	if err != nil || dr.Diff != 30 || !near(dr.High-30, math.Sqrt(200), 1e-12) || !dr.Significant {
		t.Errorf("DiffResults = %+v, %v", dr, err)
	}
	nw.Confidence = 0.9
	if _, err := DiffResults(base, nw); !errors.Is(err, ErrInvalid) {
		t.Errorf("mixed levels: %v", err)
	}
	ov := Result{Mean: 10, Low: 8, High: 13, StdErr: 1.5, Confidence: 0.95}
	so, err := SubtractOverhead(base, ov)
	if err != nil || so.Mean != 90 || !near(so.Low, 90-math.Hypot(10, 3), 1e-12) || !near(so.High, 90+math.Hypot(10, 2), 1e-12) {
		t.Errorf("SubtractOverhead = %+v, %v", so, err)
	}
	// Overhead comparable to the time: a duration is not negative, so the
	// mean and lower bound stop at 0 while the upper bound stays.
	small := Result{Mean: 12, Low: 0, High: 40, StdErr: 10, Confidence: 0.95}
	so, err = SubtractOverhead(small, ov)
	if err != nil || so.Mean != 2 || so.Low != 0 || !near(so.High, 2+math.Hypot(28, 2), 1e-12) {
		t.Errorf("SubtractOverhead(small) = %+v, %v, want 2 [0, %v]", so, err, 2+math.Hypot(28, 2))
	}
	zero := Result{Mean: 0, Low: 0, High: 40, StdErr: 10, Confidence: 0.95}
	so, err = SubtractOverhead(zero, ov)
	if err != nil || so.Mean != 0 || so.Low != 0 || so.High <= 0 {
		t.Errorf("SubtractOverhead(zero crossings) = %+v, %v, want 0 [0, >0]", so, err)
	}
	// An overhead above the measurement's upper bound is an error.
	if so, err := SubtractOverhead(Result{Mean: 2, Low: 1, High: 3, StdErr: 0.5, Confidence: 0.95}, ov); err == nil {
		t.Errorf("overhead 10 on a 2 [1, 3] measurement gave %+v, want an error", so)
	}
}
