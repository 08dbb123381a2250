// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"errors"
	"fmt"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// Corrector applies a machine's calibration to timing results: it
// implements timing.Corrector.
type Corrector struct {
	// Cal is the calibration whose overheads are subtracted.
	Cal *Calibration
}

// OverheadKind is the calibrated probe kind whose overhead is subtracted
// from a target, or "" when none is. Syscalls and kernel functions are not
// corrected: there is no empty syscall or kernel function, so what
// calibrate measures for them (getppid's whole path) includes the
// kernel's own work, and subtracting it would remove real time.
func (Corrector) OverheadKind(t timing.Target) (string, error) {
	switch t.Kind {
	case timing.KindUser, timing.KindUSDT:
		// A USDT pair's entry is a uprobe on a nop (emulated, as the
		// user kind's first instruction), its exit a uprobe trap where
		// the user kind's is a uretprobe's.
		k, err := UserProbeKind(t.Binary, t.Offset)
		return string(k), err
	case timing.KindGo:
		return string(KindGo), nil
	case timing.KindSyscall, timing.KindKernel:
		return "", nil
	}
	return "", fmt.Errorf("no overhead calibration applies to %s targets", t.Kind)
}

// Overhead is the calibrated overhead of kind at confidence level conf.
func (c Corrector) Overhead(kind string, conf float64) (estimate.Result, bool) {
	o, ok := c.Cal.Overhead(ProbeKind(kind))
	if !ok {
		return estimate.Result{}, false
	}
	return o.At(conf), true
}

// Correct subtracts the calibrated overhead of kind from r. A
// single-stepped probe ("user-stepped") is corrected one-sided
// (CorrectStepped): the single step's cost depends on load.
func (c Corrector) Correct(kind string, r estimate.Result) (estimate.Result, error) {
	o, ok := c.Cal.Overhead(ProbeKind(kind))
	if !ok {
		return estimate.Result{}, fmt.Errorf("the calibration has no %q probe overhead", kind)
	}
	if kind == "user-stepped" {
		floor, _ := c.Cal.Overhead("user") // none: a floor of 0
		return CorrectStepped(r, o, floor)
	}
	return Correct(r, o)
}

// Calibration is kind's in-call overhead model and its patterns' range;
// false when the calibration has none for it.
func (c Corrector) Calibration(kind string) (timing.OverheadCalibration, bool) {
	o, ok := c.Cal.Overhead(ProbeKind(kind))
	if !ok || o.InCall == nil {
		return timing.OverheadCalibration{}, false
	}
	m := o.InCall
	return timing.OverheadCalibration{Model: m.Model(), Typical: m.TypicalNs, Low: m.LowNs, High: m.HighNs}, true
}

// LoadCorrector loads this machine's calibration from dir ("": Dir()) as
// a Corrector.
func LoadCorrector(dir string) (Corrector, error) {
	var cal *Calibration
	var err error
	if dir != "" {
		m, merr := ThisMachine()
		if merr != nil {
			return Corrector{}, merr
		}
		cal, err = LoadFrom(dir, m)
	} else {
		cal, err = Load()
	}
	if err != nil {
		return Corrector{}, err
	}
	return Corrector{Cal: cal}, nil
}

// Correction is the overhead correction of a timing run: off when the
// caller turned it off, on with this machine's calibration from dir ("":
// Dir()), none when there is no calibration. A calibration that exists but
// cannot be read is none too, returned with its error for the caller to
// report.
func Correction(dir string, off bool) (timing.Corrector, timing.CorrectionMode, error) {
	if off {
		return nil, timing.CorrectionOff, nil
	}
	c, err := LoadCorrector(dir)
	if errors.Is(err, ErrNoCalibration) {
		return nil, timing.CorrectionNone, nil
	}
	if err != nil {
		return nil, timing.CorrectionNone, err
	}
	return c, timing.CorrectionOn, nil
}
