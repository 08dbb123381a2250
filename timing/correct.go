package timing

import (
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
// run.Correction; a target whose probe kind was not calibrated keeps its
// raw mean, with a warning.
func (s *Session) correct(run *Result) {
	c := s.cfg.Corrector
	run.Correction = s.cfg.Correction // CorrectionOn with a Corrector (withDefaults)
	for i := range run.Targets {
		t := &run.Targets[i]
		t.Raw = t.Estimate
		if c == nil || t.Err != "" || i >= len(s.kinds) || s.kinds[i] == "" {
			continue
		}
		kind := s.kinds[i]
		o, ok := c.Overhead(kind, t.Raw.Confidence)
		if !ok {
			s.cfg.warn("the calibration has no %q probe overhead, so %s's mean includes it: run `tickprof calibrate` again", kind, t.Name)
			continue
		}
		r, err := c.Correct(kind, t.Estimate)
		if err != nil {
			s.cfg.warn("%s: %v; its mean includes the probe overhead", t.Name, err)
			continue
		}
		t.Estimate, t.Corrected, t.OverheadKind = r, true, kind
		t.Overhead = o
		correctQuantiles(t, o)
	}
}
