// SPDX-License-Identifier: Apache-2.0

// Package calibrate measures, on this machine, what tickprof's numbers
// rest on: each clock's resolution (the slides' method, seed 002), the
// probe overhead T_ovhd that tickprof's own entry and exit add to every
// measured interval (Lilja 6.2.1), and the BPF cost of each clock read and
// of the whole probe (run-time statistics). A Calibration is saved per
// machine (kernel release and CPU model) under the user's cache directory.
//
// Correcting a measured mean (Lilja 6.2.1):
//
//	cal, err := calibrate.Load()          // errors.Is(err, ErrNoCalibration): show the raw mean only
//	o, ok := cal.Overhead("user")         // or UserProbeKind(binary, offset), "syscall", "go", "kernel"
//	corrected, err := calibrate.Correct(raw, o)
//
// Layering (checked by internal/layers): calibrate may import the layers
// below it (export, timing: it times its empty targets through a timing
// session; push, the engine, the leaves); not plan, agent or cmd.
package calibrate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
)

// ErrNoCalibration is returned by Load when this machine has no saved
// calibration.
var ErrNoCalibration = errors.New("no calibration for this machine: run `tickprof calibrate` as root")

// Machine identifies the machine a calibration belongs to.
type Machine struct {
	// KernelRelease is uname -r.
	KernelRelease string `json:"kernel_release"`
	// CPUModel is the first "model name" of /proc/cpuinfo.
	CPUModel string `json:"cpu_model"`
	// CPUs is the number of online CPUs.
	CPUs int `json:"cpus"`
}

// ThisMachine describes the running machine.
func ThisMachine() (Machine, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return Machine{}, fmt.Errorf("uname: %w", err)
	}
	m := Machine{KernelRelease: unix.ByteSliceToString(u.Release[:]), CPUModel: "unknown"}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return m, fmt.Errorf("read the CPU model: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			m.CPUs++
		case "model name":
			if m.CPUModel == "unknown" {
				m.CPUModel = strings.TrimSpace(v)
			}
		}
	}
	return m, sc.Err()
}

// ClockResolution is one clock's resolution by the slides' method: read
// the clock until its value changes, many times; each change gives an
// increment (in ns) and the period between two changes seen in a row.
type ClockResolution struct {
	// Clock is the clock as --clock spells it ("jiffies", "tick:1ms", "ns"),
	// or a user-space clock ("user:CLOCK_MONOTONIC").
	Clock string `json:"clock"`
	// Where says who read it: "bpf" or "user".
	Where string `json:"where"`
	// Changes is the number of increments measured.
	Changes int `json:"changes"`
	// IncMinNs, IncMeanNs, IncMaxNs: the clock's increment at a change in
	// ns (min, mean, max: the slides' "clock increment min, ave, max").
	IncMinNs  float64 `json:"increment_min_ns"`
	IncMeanNs float64 `json:"increment_mean_ns"`
	IncMaxNs  float64 `json:"increment_max_ns"`
	// PeriodMinNs, PeriodMeanNs, PeriodMaxNs: the time between two
	// changes in a row, read with the ns clock (the slides' r).
	PeriodMinNs  float64 `json:"period_min_ns"`
	PeriodMeanNs float64 `json:"period_mean_ns"`
	PeriodMaxNs  float64 `json:"period_max_ns"`
	// PeriodLowNs..PeriodHighNs is the interval of the mean period at
	// Confidence (Student t over the periods seen).
	PeriodLowNs  float64 `json:"period_low_ns"`
	PeriodHighNs float64 `json:"period_high_ns"`
	Confidence   float64 `json:"confidence"`
}

// Overhead is T_ovhd for one kind of probe: the mean time tickprof's entry
// and exit add to a measured interval, measured on an empty target with
// the ns clock.
type Overhead struct {
	// Kind is the target kind it applies to, as loader.Kind spells it
	// ("user", "syscall", ...), or a variant ("user-stepped").
	Kind ProbeKind `json:"kind"`
	// Target is what was timed ("cal_empty", "syscall:getppid").
	Target string `json:"target"`
	// Note says what the figure includes.
	Note string `json:"note,omitempty"`
	// Calls is the number of timed calls.
	Calls uint64 `json:"calls"`
	// MeanNs, LowNs, HighNs: T_ovhd and the interval Correct subtracts,
	// at Confidence. Over several runs MeanNs is the mean of the run means
	// and LowNs..HighNs the interval of one new run's overhead, which holds
	// the between-run variation (CombineRuns).
	MeanNs   float64 `json:"mean_ns"`
	LowNs    float64 `json:"low_ns"`
	HighNs   float64 `json:"high_ns"`
	StdErrNs float64 `json:"stderr_ns"`
	// DF is the degrees of freedom of a Student t interval (runs - 1);
	// 0 for a normal interval, mean ± z StdErrNs.
	DF         int     `json:"df,omitempty"`
	Confidence float64 `json:"confidence"`
	// Method is the interval's model: "between-runs-prediction" or
	// "pooled-within-run" over several runs (CombineRuns); for one run
	// the widest of "observed" and "batch-means" (estimate.Time).
	Method string `json:"method,omitempty"`
	// Runs is the number of independent runs (target processes) behind
	// the figure, RunMeansNs their means and RunSDNs their standard
	// deviation; MeanLowNs..MeanHighNs is the interval of the mean
	// overhead itself (Student t over the run means). All are absent from
	// files of version 1, which measured one run.
	Runs       int       `json:"runs,omitempty"`
	RunMeansNs []float64 `json:"run_means_ns,omitempty"`
	RunSDNs    float64   `json:"run_sd_ns,omitempty"`
	MeanLowNs  float64   `json:"mean_low_ns,omitempty"`
	MeanHighNs float64   `json:"mean_high_ns,omitempty"`
	// MinNs is the shortest call seen.
	MinNs uint64 `json:"min_ns"`
	// Links is the kind of uprobe links the user kinds were measured
	// through, as loader.Session.LinkKind spells it: "multi" where the
	// kernel has multi-uprobe links, as `time` attaches by default, else
	// "single"; empty for the other kinds and in older files.
	Links string `json:"links,omitempty"`
	// BPFNsPerCall is the run time of tickprof's entry and exit programs
	// per timed call (run-time statistics); 0 when not measured.
	BPFNsPerCall float64 `json:"bpf_ns_per_call"`
	// InCall is the in-call overhead model of the kind (incall.go); absent
	// for kinds without one and from older files.
	InCall *InCallModel `json:"in_call,omitempty"`
}

// Result returns the overhead as an estimate at its own confidence.
func (o Overhead) Result() estimate.Result {
	r := estimate.Result{Mean: o.MeanNs, Low: o.LowNs, High: o.HighNs, StdErr: o.StdErrNs,
		Confidence: o.Confidence, Method: "z", Dist: "z", Calls: o.Calls, Events: o.Calls}
	if o.DF > 0 {
		r.Method, r.Dist = "t", "t"
	}
	if o.MeanNs != 0 {
		r.RelHalfWidth = (o.HighNs - o.LowNs) / 2 / math.Abs(o.MeanNs)
	} else {
		r.RelHalfWidth = math.Inf(1)
	}
	return r
}

// At returns the overhead as an estimate at confidence level conf:
// mean ± q StdErr, q the Student t quantile on DF degrees of freedom when
// DF > 0 (a prediction over run means, see CombineRuns), else the normal
// one.
func (o Overhead) At(conf float64) estimate.Result {
	r := o.Result()
	if conf == o.Confidence || !(conf > 0 && conf < 1) {
		return r
	}
	q := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	if o.DF > 0 {
		q = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(o.DF)}.Quantile(1 - (1-conf)/2)
	}
	r.Low, r.High, r.Confidence = o.MeanNs-q*o.StdErrNs, o.MeanNs+q*o.StdErrNs, conf
	if o.MeanNs != 0 {
		r.RelHalfWidth = q * o.StdErrNs / math.Abs(o.MeanNs)
	}
	return r
}

// ClockCost is the BPF cost of one read of a clock helper.
type ClockCost struct {
	// Helper is the BPF helper ("bpf_jiffies64", "bpf_ktime_get_ns").
	Helper string `json:"helper"`
	// NsPerRead is the added run time per read (run-time statistics),
	// LowNs..HighNs its interval at Confidence over the batches.
	NsPerRead  float64 `json:"ns_per_read"`
	LowNs      float64 `json:"low_ns"`
	HighNs     float64 `json:"high_ns"`
	Confidence float64 `json:"confidence"`
	// Reads is the number of reads behind the figure.
	Reads uint64 `json:"reads"`
}

// Version is the calibration file format written by this tickprof.
// Version 1 (files without "version") measured each T_ovhd in one run, its
// interval the within-run error only; version 2 measures it in several
// runs and its interval holds the between-run variation (CombineRuns). Both load; a
// version 1 file corrects with its narrower interval until `tickprof
// calibrate` is run again.
const Version = 2

// Calibration is everything `tickprof calibrate` measures on a machine.
type Calibration struct {
	// Version is the file format (see the constant Version); 0 in files
	// of version 1.
	Version int `json:"version,omitempty"`
	// Machine is where it was measured.
	Machine Machine `json:"machine"`
	// Date is when.
	Date time.Time `json:"date"`
	// Clocks are the clock resolutions.
	Clocks []ClockResolution `json:"clocks"`
	// Overheads are T_ovhd per probe kind.
	Overheads []Overhead `json:"overheads"`
	// ClockCosts are the clock-read costs.
	ClockCosts []ClockCost `json:"clock_costs"`
	// Skipped lists what could not be measured, and why.
	Skipped []string `json:"skipped,omitempty"`
}

// Overhead returns the T_ovhd measured for kind ("user", "syscall", ...).
func (c *Calibration) Overhead(kind ProbeKind) (Overhead, bool) {
	if c == nil {
		return Overhead{}, false
	}
	for _, o := range c.Overheads {
		if o.Kind == kind {
			return o, true
		}
	}
	return Overhead{}, false
}

// Correct subtracts the probe overhead o from a measured mean r:
// T_e = T_m - T_ovhd (Lilja 6.2.1), the overhead's uncertainty widening
// the interval (estimate.SubtractOverhead). The overhead is taken at r's
// confidence level.
func Correct(r estimate.Result, o Overhead) (estimate.Result, error) {
	out, err := estimate.SubtractOverhead(r, o.At(r.Confidence))
	if err != nil {
		return estimate.Result{}, fmt.Errorf("correct for the %s probe overhead: %w", o.Kind, err)
	}
	return out, nil
}

// CorrectStepped corrects a mean measured with an entry probe on an
// instruction the kernel single-steps. The cost of the single step depends
// on the machine's load: calibrated at 11.7 us on an idle machine, it was
// 14-34 us in runs under load, and subtracting the calibrated interval
// missed the truth 4 times in 4. So no calibrated figure is subtracted from
// the interval's low end, which stays at 0, and only what every probe pair
// surely costs is subtracted from its high end: the lower bound of the
// emulated pair's overhead (floor, kind "user"), since a stepped probe does
// all an emulated one does and more, at any load. The point estimate is the
// raw mean minus the stepped calibration (stepped), which is right on an
// idle machine and too high under load; the interval holds the truth either
// way. Method is "stepped-bound".
func CorrectStepped(r estimate.Result, stepped, floor Overhead) (estimate.Result, error) {
	if r.High < r.Low || r.Mean < r.Low || r.Mean > r.High {
		return estimate.Result{}, fmt.Errorf("correct for the single-stepped probe overhead: the measured interval [%v, %v] does not hold its mean %v", r.Low, r.High, r.Mean)
	}
	f := floor.At(r.Confidence)
	o := stepped.At(r.Confidence)
	hi := math.Max(0, r.High-math.Max(f.Low, 0))
	mean := math.Min(math.Max(0, r.Mean-o.Mean), hi)
	out := estimate.Result{Mean: mean, Low: 0, High: hi, Confidence: r.Confidence,
		Method: "stepped-bound", Dist: r.Dist, Calls: r.Calls, Events: r.Events, Batches: r.Batches}
	// A one-sided bound has no standard error; half the width stands in
	// for plans and progress, as the z of the level would for a
	// symmetric interval.
	out.StdErr = hi / 2 / estimate.Z(r.Confidence)
	if mean > 0 {
		out.RelHalfWidth = hi / 2 / mean
	} else {
		out.RelHalfWidth = math.Inf(1)
	}
	out.Candidates = []estimate.Candidate{{Method: out.Method, Dist: out.Dist, Low: 0, High: hi, StdErr: out.StdErr}}
	return out, nil
}

// Dir returns the directory calibrations are saved in:
// os.UserCacheDir()/tickprof.
func Dir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the cache directory (set XDG_CACHE_HOME or HOME): %w", err)
	}
	return filepath.Join(d, "tickprof"), nil
}

// FileName returns the file name of machine m's calibration: the kernel
// release and CPU model, with anything but letters, digits, '.', '-' and
// '_' replaced.
func FileName(m Machine) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
				return r
			}
			return '_'
		}, s)
	}
	return "calibration-" + clean(m.KernelRelease) + "-" + clean(m.CPUModel) + ".json"
}

// Save writes c into dir (created if needed) under FileName(c.Machine)
// and returns the path.
func (c *Calibration) Save(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = Dir(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("save the calibration: %w", err)
	}
	path := filepath.Join(dir, FileName(c.Machine))
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", fmt.Errorf("save the calibration: %w", err)
	}
	// 0644: LoadFrom refuses a file writable by group or others.
	if err := safefile.WriteFile(path, 0o644, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	}); err != nil {
		return "", fmt.Errorf("save the calibration: %w", err)
	}
	return path, nil
}

// LoadFrom reads machine m's calibration from dir. It returns an error
// wrapping ErrNoCalibration when there is none, and refuses a file made on
// another machine. It loads only a file that is the effective user's own
// and that no other user could have written or replaced, and whose values
// are all in range (Validate); otherwise the error wraps ErrUntrusted and
// says what was refused.
func LoadFrom(dir string, m Machine) (*Calibration, error) {
	path := filepath.Join(dir, FileName(m))
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCalibration
	}
	b, err := readTrusted(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCalibration
	}
	if errors.Is(err, ErrUntrusted) {
		return nil, fmt.Errorf("calibration %s not loaded: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read the calibration %s: %w", path, err)
	}
	c, err := ParseCalibration(b)
	if errors.Is(err, ErrUntrusted) {
		return nil, fmt.Errorf("calibration %s not loaded: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read the calibration %s (run `tickprof calibrate` again): %w", path, err)
	}
	if c.Machine.KernelRelease != m.KernelRelease || c.Machine.CPUModel != m.CPUModel {
		return nil, fmt.Errorf("calibration %s was made on kernel %s, CPU %q: %w", path, c.Machine.KernelRelease, c.Machine.CPUModel, ErrNoCalibration)
	}
	return c, nil
}

// Load reads this machine's calibration from Dir().
func Load() (*Calibration, error) {
	m, err := ThisMachine()
	if err != nil {
		return nil, err
	}
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	return LoadFrom(d, m)
}
