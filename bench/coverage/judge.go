// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"math"
)

// check is one figure of one run: the truth, tickprof's estimate and
// interval (NaN estimate: none was reported; an absent bound is
// unbounded), and whether the interval held the truth.
type check struct {
	name                  string // "mean", "p50", ...
	truth, est, low, high float64
	held, noInterval      bool
}

// errNoTruth is a syscall run whose report has no exact mean.
var errNoTruth = errors.New("no exact mean in the report (run with --validate)")

// judge returns the checks of a run: the mean and every quantile that
// both the target and tickprof report. A syscall's truth is the exact
// mean of the same calls (rep.NsMean); a function's is the target's own.
func judge(c tcase, truth map[string]float64, rep report) ([]check, error) {
	mt := truth["mean_ns"]
	if c.syscall {
		if rep.NsMean == nil {
			return nil, errNoTruth
		}
		mt = *rep.NsMean
	}
	checks := []check{newCheck("mean", mt, rep.Mean, rep.Low, rep.High, rep.Error != "")}
	if c.syscall {
		return checks, nil
	}
	for _, q := range rep.Quantiles {
		t, ok := truth[q.Name+"_ns"]
		if !ok {
			continue
		}
		v := q.Value
		checks = append(checks, newCheck(q.Name, t, &v, q.Low, q.High, false))
	}
	return checks, nil
}

// newCheck judges one figure.
func newCheck(name string, truth float64, est, low, high *float64, failed bool) check {
	c := check{name: name, truth: truth, est: math.NaN(), low: math.Inf(-1), high: math.Inf(1)}
	if est == nil || failed {
		c.noInterval = true
		return c
	}
	c.est = *est
	if low != nil {
		c.low = *low
	}
	if high != nil {
		c.high = *high
	}
	c.held = c.low <= truth && truth <= c.high
	return c
}

// relHalfWidth is the interval's half-width over its estimate (+Inf when
// a bound is absent or there is no estimate).
func (c check) relHalfWidth() float64 {
	if c.noInterval || math.IsInf(c.low, 0) || math.IsInf(c.high, 0) || c.est == 0 {
		return math.Inf(1)
	}
	return (c.high - c.low) / 2 / math.Abs(c.est)
}

// relError is (estimate − truth)/truth (NaN without an estimate).
func (c check) relError() float64 { return (c.est - c.truth) / c.truth }
