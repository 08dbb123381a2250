// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"fmt"
	"math"
)

// Difference is an estimated difference between two alternatives with its
// confidence interval (Lilja ch. 5).
type Difference struct {
	// Diff is the point estimate; Low and High bound its interval.
	Diff, Low, High float64
	// StdErr is the standard error of Diff.
	StdErr float64
	// Confidence is the interval's level.
	Confidence float64
	// Method is the construction: "z", "t" (means), "wald", "newcombe-wilson",
	// "newcombe-exact" (proportions) or "mover" (two intervals combined).
	Method string
	// Significant says the interval excludes zero: the alternatives differ
	// at this confidence (Lilja 5.1: a zero inside means no significant
	// difference).
	Significant bool
}

func newDifference(diff, lo, hi, se, conf float64, method string) Difference {
	return Difference{Diff: diff, Low: lo, High: hi, StdErr: se, Confidence: conf,
		Method: method, Significant: lo > 0 || hi < 0}
}

// Welch compares the means of two unpaired sets of measurements: the
// difference mean(a) - mean(b), with standard deviation
// sqrt(s_a^2/n_a + s_b^2/n_b) (Lilja eq. 5.3), the normal quantile when both
// sets have at least 30 measurements (eqs. 5.4/5.5) and otherwise Student t
// with the Welch-Satterthwaite degrees of freedom rounded to the nearest
// whole number, as Lilja eq. 5.6 prescribes.
func Welch(a, b []float64, o Options) (Difference, error) {
	conf, _, err := o.check()
	if err != nil {
		return Difference{}, err
	}
	ma, va, err := meanVar(a)
	if err != nil {
		return Difference{}, wrapf(err, "first set")
	}
	mb, vb, err := meanVar(b)
	if err != nil {
		return Difference{}, wrapf(err, "second set")
	}
	na, nb := float64(len(a)), float64(len(b))
	ua, ub := va/na, vb/nb
	se := math.Sqrt(ua + ub)
	q, method := zQuantile(conf), "z"
	if len(a) < 30 || len(b) < 30 {
		df := 1.0
		if ua+ub > 0 {
			df = math.Max(1, math.Round((ua+ub)*(ua+ub)/(ua*ua/(na-1)+ub*ub/(nb-1))))
		}
		q, method = tQuantile(conf, df), "t"
	}
	diff := ma - mb
	return newDifference(diff, diff-q*se, diff+q*se, se, conf, method), nil
}

// Paired compares two sets of corresponding measurements (before and after,
// Lilja 5.1.1): the mean of a_i - b_i with the interval of MeanOfSamples
// (t below 30 pairs, z from 30).
func Paired(a, b []float64, o Options) (Difference, error) {
	if len(a) != len(b) {
		return Difference{}, inputf("paired comparison needs as many measurements in both sets, got %d and %d", len(a), len(b))
	}
	ds := make([]float64, len(a))
	for i := range a {
		ds[i] = a[i] - b[i]
	}
	r, err := MeanOfSamples(ds, o)
	if err != nil {
		return Difference{}, wrapf(err, "paired differences")
	}
	return newDifference(r.Mean, r.Low, r.High, r.StdErr, r.Confidence, r.Method), nil
}

// DiffProportions compares two proportions h1/n1 - h2/n2 (Lilja 5.1.3). With
// the Wald interval it is Lilja's eqs. 5.18-5.20; otherwise Newcombe's
// hybrid interval built from each proportion's Wilson (or exact) interval,
// which keeps its coverage when the hit counts are small.
func DiffProportions(h1, n1, h2, n2 uint64, o Options) (Difference, error) {
	conf, iv, err := o.check()
	if err != nil {
		return Difference{}, err
	}
	if n1 == 0 || n2 == 0 {
		return Difference{}, inputf("no samples on one side (%d and %d): both proportions need samples", n1, n2)
	}
	if h1 > n1 || h2 > n2 {
		return Difference{}, inputf("hits exceed samples (%d/%d, %d/%d)", h1, n1, h2, n2)
	}
	p1, p2 := float64(h1)/float64(n1), float64(h2)/float64(n2)
	se := math.Sqrt(p1*(1-p1)/float64(n1) + p2*(1-p2)/float64(n2)) // Lilja eq. 5.20
	diff := p1 - p2
	if iv == Wald {
		z := zQuantile(conf)
		return newDifference(diff, diff-z*se, diff+z*se, se, conf, "wald"), nil
	}
	l1, u1, used := propInterval(h1, n1, conf, iv)
	l2, u2, _ := propInterval(h2, n2, conf, iv)
	lo := diff - math.Hypot(p1-l1, u2-p2)
	hi := diff + math.Hypot(u1-p1, p2-l2)
	name := "newcombe-" + string(used)
	if iv == IntervalAuto {
		name = "newcombe"
	}
	return newDifference(diff, lo, hi, se, conf, name), nil
}

// DiffResults compares two independent estimates: new.Mean - base.Mean. The
// interval combines each side's own interval arms (the MOVER method, exact
// for normal intervals and right for skewed ones such as Wilson's):
// low = D - sqrt((new.Mean-new.Low)^2 + (base.High-base.Mean)^2), and
// symmetrically for high. Both must have the same confidence level.
func DiffResults(base, new Result) (Difference, error) {
	if err := checkResult(base, "base"); err != nil {
		return Difference{}, err
	}
	if err := checkResult(new, "new"); err != nil {
		return Difference{}, err
	}
	if base.Confidence != new.Confidence {
		return Difference{}, inputf("confidence levels differ (%v and %v): compare estimates made at the same level", base.Confidence, new.Confidence)
	}
	diff := new.Mean - base.Mean
	lo := diff - math.Hypot(new.Mean-new.Low, base.High-base.Mean)
	hi := diff + math.Hypot(new.High-new.Mean, base.Mean-base.Low)
	return newDifference(diff, lo, hi, math.Hypot(base.StdErr, new.StdErr), base.Confidence, "mover"), nil
}

// SubtractOverhead removes the probe overhead T_ovhd measured on an empty
// function from a measured time: T_e = T_m - T_ovhd (Lilja 6.2.1). The
// overhead's uncertainty widens the interval (the MOVER combination of
// DiffResults). Lilja's rule of thumb asks for T_e 100 to 1000 times
// T_ovhd; when the overhead is comparable to the measured time the
// difference can reach below zero, but a duration cannot: the mean and the
// lower bound are truncated at 0, which keeps the interval's coverage for
// every true duration >= 0. When even the upper bound is below zero the
// overhead is larger than anything the measurement allows (a calibration
// made under other conditions): that is an error, not an interval.
func SubtractOverhead(r, ovhd Result) (Result, error) {
	d, err := DiffResults(ovhd, r)
	if err != nil {
		return Result{}, wrapf(err, "subtract overhead")
	}
	if d.High < 0 {
		return Result{}, fmt.Errorf("the probe overhead %.4g ns [%.4g, %.4g] exceeds the measured time's upper bound %.4g ns: recalibrate on an idle machine (tickprof calibrate) or show raw means (--no-correct)",
			ovhd.Mean, ovhd.Low, ovhd.High, r.High)
	}
	d.Diff, d.Low = math.Max(d.Diff, 0), math.Max(d.Low, 0)
	out := Result{Mean: d.Diff, Low: d.Low, High: d.High, StdErr: d.StdErr,
		Confidence: d.Confidence, Method: r.Method + "-minus-overhead", Dist: r.Dist,
		Calls: r.Calls, Events: r.Events, Batches: r.Batches}
	out.RelHalfWidth = relHalfWidth(out.Mean, out.Low, out.High)
	out.Candidates = []Candidate{{Method: out.Method, Dist: out.Dist, Low: out.Low, High: out.High, StdErr: out.StdErr}}
	return out, nil
}

// checkResult validates a Result given as input.
func checkResult(r Result, name string) error {
	if !finite(r.Mean, r.Low, r.High, r.StdErr) {
		return inputf("%s estimate is not finite (mean %v, interval %v..%v)", name, r.Mean, r.Low, r.High)
	}
	if !(r.Low <= r.Mean && r.Mean <= r.High) {
		return inputf("%s estimate's interval %v..%v does not hold its mean %v", name, r.Low, r.High, r.Mean)
	}
	if !(r.Confidence > 0 && r.Confidence < 1) {
		return inputf("%s estimate has confidence %v: want a level between 0 and 1", name, r.Confidence)
	}
	return nil
}

// wrapf adds context to an error, keeping it matchable with errors.Is.
func wrapf(err error, context string) error {
	if e, ok := err.(invalid); ok {
		return invalid{context + ": " + e.msg}
	}
	return err
}
