// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"
	"math"

	"github.com/tickprof/tickprof/estimate"
)

// Corrector subtracts the probe overhead measured on this machine (Lilja
// 6.2.1): T_e = T_m - T_ovhd, the overhead's uncertainty carried into the
// interval. calibrate.Corrector implements it.
type Corrector interface {
	// OverheadKind is the calibrated probe kind whose overhead applies to
	// a target ("" when none does). It is asked in Open, while the
	// target's executable can still be read.
	OverheadKind(t Target) (string, error)
	// Overhead is the overhead of a probe kind at a confidence level;
	// false when the calibration has none for it.
	Overhead(kind string, confidence float64) (estimate.Result, bool)
	// Correct subtracts the overhead of kind from r.
	Correct(kind string, r estimate.Result) (estimate.Result, error)
	// Calibration is what the calibration says of kind's overhead inside
	// a call (the echo model and its patterns' range); false when it has
	// no such model (a calibration from before the model: recalibrate).
	Calibration(kind string) (OverheadCalibration, bool)
}

// CorrectionMode says whether a run's means were corrected for the probe
// overhead.
type CorrectionMode string

// Correction modes (Result.Correction).
const (
	CorrectionOn   CorrectionMode = "on"   // a calibration was applied
	CorrectionOff  CorrectionMode = "off"  // correction not wanted
	CorrectionNone CorrectionMode = "none" // no calibration of this machine
)

// overheadKinds asks the corrector for every spec's probe kind.
func (s *Session) overheadKinds() {
	if s.cfg.Corrector == nil {
		return
	}
	s.kinds = make([]string, len(s.specs))
	for i, sp := range s.specs {
		kind, err := s.cfg.Corrector.OverheadKind(targetOf(sp, sp.Name))
		if err != nil {
			s.cfg.warn("%s: %v; its mean includes the probe overhead", sp.Name, err)
			continue
		}
		s.kinds[i] = kind
	}
}

// correct corrects every target's estimate in run and sets
// run.Correction. The overhead subtracted is the mean in-call overhead the
// target's echoes measured (EchoResult); without echoes, the range of its
// kind's mean over the call patterns calibrated; with a calibration from
// before the model, its one constant. A target whose probe kind was not
// calibrated keeps its raw mean, with a warning.
func (s *Session) correct(run *Result, echoes []*EchoResult) {
	c := s.cfg.Corrector
	run.Correction = s.cfg.Correction // CorrectionOn with a Corrector (withDefaults)
	for i := range run.Targets {
		t := &run.Targets[i]
		t.Raw = t.Estimate
		if i < len(echoes) {
			t.Echo = echoes[i]
		}
		if c == nil || t.Err != "" || i >= len(s.kinds) || s.kinds[i] == "" {
			continue
		}
		kind := s.kinds[i]
		o, err := s.overheadOf(i, t)
		if err != nil {
			s.cfg.warn("%s: %v; its mean includes the probe overhead", t.Name, err)
			continue
		}
		r, err := s.subtract(kind, t, o)
		if err != nil {
			s.cfg.warn("%s: %v; its mean includes the probe overhead", t.Name, err)
			continue
		}
		t.Estimate, t.Corrected, t.OverheadKind, t.Overhead = r, true, kind, o
		correctExtremes(t, o)
		correctQuantiles(t, o)
	}
}

// overheadOf is the in-call overhead to subtract from target i: measured by
// its echoes, else bounded by the calibrated patterns' range, else the
// calibration's constant.
func (s *Session) overheadOf(i int, t *TargetResult) (estimate.Result, error) {
	conf := t.Raw.Confidence
	if e := t.Echo; e != nil && e.Overhead.Calls >= estimate.MinEchoes {
		return e.Overhead, nil
	}
	if cal, ok := s.calibration(i); ok {
		low, high := rangeBounds(cal, conf)
		return estimate.OverheadRange(cal.Typical, low, high, conf)
	}
	o, ok := s.cfg.Corrector.Overhead(s.kinds[i], conf)
	if !ok {
		return estimate.Result{}, fmt.Errorf("the calibration has no %q probe overhead: run `tickprof calibrate` again", s.kinds[i])
	}
	s.cfg.warn("%s: this machine's calibration predates the in-call overhead model, so one constant is subtracted: run `tickprof calibrate` again", t.Name)
	return o, nil
}

// rangeBounds widens the calibrated patterns' range of mean overheads by
// the model's error at each end (at conf): the range is of one program's
// patterns, and another program's calls can lie outside it (a ~100 ns
// function back to back paid 780 ns, below the calibrated 1,055 ns).
func rangeBounds(cal OverheadCalibration, conf float64) (low, high float64) {
	z := estimate.Z(conf)
	m := cal.Model
	gap := func(o float64) float64 {
		if !(m.B > 0) {
			return 0
		}
		return math.Max(0, (o-m.A)/m.B)
	}
	low = math.Max(0, cal.Low-z*m.Spread(gap(cal.Low)))
	high = cal.High + z*m.Spread(gap(cal.High))
	return low, high
}

// subtract corrects t's raw mean by the overhead o (the legacy constant of
// a stepped probe one-sided, through the Corrector), keeping the interval
// inside what the calls timed allow (estimate.PhysicalBounds).
func (s *Session) subtract(kind string, t *TargetResult, o estimate.Result) (estimate.Result, error) {
	var r estimate.Result
	var err error
	if o.Method == "echo" || o.Method == "pattern-range" {
		r, err = estimate.SubtractOverhead(t.Raw, o)
	} else {
		r, err = s.cfg.Corrector.Correct(kind, t.Raw)
	}
	if err != nil {
		return r, err
	}
	if x := t.Exact; x != nil && x.Max > 0 {
		r = estimate.PhysicalBounds(r, float64(x.Min), float64(x.Max), maxOverhead(t, o))
	}
	return r, nil
}

// maxOverhead is the largest overhead a call of t may carry: the largest
// its echoes measured, or the top of o's interval.
func maxOverhead(t *TargetResult, o estimate.Result) float64 {
	m := o.High
	if e := t.Echo; e != nil && o.Method == "echo" {
		m = math.Max(m, e.MaxNs+e.Model.Spread(e.Sums.G/math.Max(1, e.Sums.N))*estimate.Z(o.Confidence))
	}
	return m
}

// correctExtremes puts the shortest and longest call on the footing of the
// quantiles beside them: the overhead's mean subtracted, as from their
// point estimates.
func correctExtremes(t *TargetResult, o estimate.Result) {
	if x := t.Exact; x != nil && x.Max > 0 {
		x.CorrectedMin = math.Max(0, float64(x.Min)-o.Mean)
		x.CorrectedMax = math.Max(0, float64(x.Max)-o.Mean)
	}
}
