package export

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
)

// TimeRun is the outcome of a `tickprof time` run in the form the
// exporters write: run metadata and one TimeTarget per timed target.
type TimeRun struct {
	// Clock is the clock as --clock spells it ("jiffies", "tick:1ms", "ns").
	Clock string
	// Resolution is the clock's resolution d in ns (measured for jiffies).
	Resolution float64
	// Confidence is the confidence level of every interval (0.95).
	Confidence float64
	// Start is when timing began; Duration how long it ran.
	Start    time.Time
	Duration time.Duration
	// PID is the target process (0: every process); Command the command
	// started with `-- CMD` (nil for -p).
	PID     int
	Command []string
	// StopReason says why the run stopped ("duration", "precision",
	// "target exited", "interrupted", ...).
	StopReason string
	// Validate is true when every target was also timed with the ns clock.
	Validate bool
	// RingDrops, StackFails: records lost to a full ring buffer, stacks
	// that could not be captured (whole run).
	RingDrops, StackFails uint64
	// Correction says whether the probe overhead was subtracted: "on"
	// (a calibration of this machine was applied), "off" (--no-correct) or
	// "none" (no calibration: the means include the probe overhead).
	Correction string
	// Go holds the Go probes' statistics; nil when no Go function was
	// timed.
	Go *GoStats
	// Targets are the timed targets.
	Targets []TimeTarget
}

// TimeTarget is one timed target's estimate and counters.
type TimeTarget struct {
	// Name is the target's display name; Kind its kind ("user", ...).
	Name, Kind string
	// Binary is the file holding a user function ("" otherwise).
	Binary string
	// Calls is n; Ticks is sum c_i.
	Calls, Ticks uint64
	// Estimate is the mean time per call with its interval. Err is set
	// instead when there is nothing to estimate yet (no calls).
	Estimate estimate.Result
	Err      string
	// Corrected says Estimate is Raw minus the probe overhead T_ovhd
	// (Lilja 6.2.1), the overhead's uncertainty carried into the interval.
	Corrected bool
	// Raw is the measured estimate, probe overhead included (equal to
	// Estimate when not Corrected).
	Raw estimate.Result
	// Overhead is the T_ovhd subtracted, at the run's confidence, and
	// OverheadKind the calibrated probe kind it was measured for ("user",
	// "user-stepped", "go", "syscall", "kernel"). Set when Corrected.
	Overhead     estimate.Result
	OverheadKind string
	// InlinedInto names the functions a Go target was also inlined into:
	// calls there run no probe and are not counted.
	InlinedInto []string
	// Orphans are entries or exits without their partner; Crossings the
	// calls that crossed at least one tick; Dropped the crossing records
	// lost (their time is in the estimate, only the caller is unknown).
	Orphans, Crossings, Dropped uint64
	// Exact holds the exact-ns figures (ns clock and --validate).
	Exact *ExactNs
	// Covered is the --validate verdict: whether the tick-clock interval
	// holds the exact mean (nil without --validate).
	Covered *bool
	// Callers attribute the ticks to caller stacks.
	Callers []TimeCaller
}

// GoStats are the Go probes' counters for a run (see loader.GoStats).
type GoStats struct {
	// Morestack counts entry firings skipped because the goroutine's stack
	// had to grow first (the call is counted when its prologue runs again).
	Morestack uint64
	// Expired counts entries whose RET never came (a panic or
	// runtime.Goexit); they are among the targets' orphans too.
	Expired uint64
	// NoGoroutine counts firings where the goroutine could not be read.
	NoGoroutine uint64
}

// ExactNs are the exact-nanosecond figures of a target.
type ExactNs struct {
	// Sum is the total ns; Mean its interval from exact measurements.
	Sum  uint64
	Mean estimate.Result
	// Min and Max are the shortest and longest call.
	Min, Max uint64
	// Hist is the log2 histogram: Hist[b] calls took [2^b, 2^(b+1)) ns.
	Hist []uint64
}

// TimeCaller is the share of a target's ticks from one caller stack.
type TimeCaller struct {
	// Frames is the caller's stack, innermost first.
	Frames []Frame
	// Calls counts the calls that crossed at least one tick from this
	// stack (all calls in ns mode); Ticks their crossings.
	Calls, Ticks uint64
}

// Frame is one symbolized frame.
type Frame struct {
	Func string
	File string
	Addr uint64
}

// Wall returns the estimated total time of the target in ns: d sum c_i,
// an unbiased estimate of the time spent in all its calls.
func (r *TimeRun) Wall(t *TimeTarget) float64 { return r.Resolution * float64(t.Ticks) }

// EncodeTime builds a pprof profile of a time run: sample types
// calls/count, ticks/count and wall/nanoseconds (the default), one sample
// per target and caller stack with the target as the leaf frame. Calls and
// ticks that no record attributes to a caller (calls that crossed no tick,
// dropped records) go on a sample whose stack is the target alone, so the
// sums over a target's samples are its exact totals. Each sample carries
// the target's mean and interval bounds as numeric labels (ns), and the
// profile's comments name the clock, resolution and confidence.
func EncodeTime(r *TimeRun) (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "calls", Unit: "count"},
			{Type: "ticks", Unit: "count"},
			{Type: "wall", Unit: "nanoseconds"},
		},
		DefaultSampleType: "wall",
		PeriodType:        &profile.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            int64(math.Round(r.Resolution)),
		TimeNanos:         r.Start.UnixNano(),
		DurationNanos:     r.Duration.Nanoseconds(),
		Comments: []string{
			fmt.Sprintf("tickprof time: clock %s, resolution %.6g ns", r.Clock, r.Resolution),
			fmt.Sprintf("confidence %.4g%% for every interval (labels mean_ns, low_ns, high_ns)", 100*r.Confidence),
			"wall = resolution x ticks: the estimated total time in each target",
		},
	}
	if r.StopReason != "" {
		p.Comments = append(p.Comments, "stopped: "+r.StopReason)
	}
	switch r.Correction {
	case "on":
		p.Comments = append(p.Comments, "mean_ns, low_ns, high_ns are corrected for the probe overhead (raw_mean_ns and overhead_ns beside them); wall and ticks are as measured")
	case "none", "off":
		p.Comments = append(p.Comments, "the means include the probe overhead (not corrected)")
	}
	funcs := map[string]*profile.Function{}
	fn := func(name, file string) *profile.Function {
		k := name + "\x00" + file
		if f := funcs[k]; f != nil {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
		funcs[k] = f
		p.Function = append(p.Function, f)
		return f
	}
	maps := map[string]*profile.Mapping{}
	mapping := func(file string) *profile.Mapping {
		if file == "" {
			return nil
		}
		if m := maps[file]; m != nil {
			return m
		}
		// Symbolized already: pprof need not look for the file.
		m := &profile.Mapping{ID: uint64(len(p.Mapping) + 1), File: file, HasFunctions: true}
		maps[file] = m
		p.Mapping = append(p.Mapping, m)
		return m
	}
	locs := map[string]*profile.Location{}
	loc := func(key string, addr uint64, f *profile.Function) *profile.Location {
		if l := locs[key]; l != nil {
			return l
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: addr, Mapping: mapping(f.Filename), Line: []profile.Line{{Function: f}}}
		locs[key] = l
		p.Location = append(p.Location, l)
		return l
	}
	for i := range r.Targets {
		t := &r.Targets[i]
		leaf := loc("target\x00"+t.Name, 0, fn(t.Name, t.Binary))
		labels := map[string][]int64{}
		units := map[string][]string{}
		if t.Err == "" {
			labels["mean_ns"] = []int64{int64(math.Round(t.Estimate.Mean))}
			labels["low_ns"] = []int64{int64(math.Round(t.Estimate.Low))}
			labels["high_ns"] = []int64{int64(math.Round(t.Estimate.High))}
			if t.Corrected {
				labels["raw_mean_ns"] = []int64{int64(math.Round(t.Raw.Mean))}
				labels["overhead_ns"] = []int64{int64(math.Round(t.Overhead.Mean))}
			}
			for k := range labels {
				units[k] = []string{"nanoseconds"}
			}
		}
		str := map[string][]string{"target": {t.Name}, "clock": {r.Clock}}
		add := func(stack []*profile.Location, calls, ticks uint64) {
			p.Sample = append(p.Sample, &profile.Sample{
				Location: stack,
				Value:    []int64{int64(calls), int64(ticks), int64(math.Round(r.Resolution * float64(ticks)))},
				Label:    str,
				NumLabel: labels,
				NumUnit:  units,
			})
		}
		var calls, ticks uint64
		for _, c := range t.Callers {
			stack := []*profile.Location{leaf}
			for _, f := range c.Frames {
				name := f.Func
				if name == "" {
					name = fmt.Sprintf("%#x", f.Addr)
					if f.File != "" {
						name = fmt.Sprintf("%s+%#x", baseName(f.File), f.Addr)
					}
				}
				stack = append(stack, loc(fmt.Sprintf("%s\x00%#x", f.File, f.Addr), f.Addr, fn(name, f.File)))
			}
			add(stack, c.Calls, c.Ticks)
			calls += c.Calls
			ticks += c.Ticks
		}
		if calls < t.Calls || ticks < t.Ticks || len(t.Callers) == 0 {
			add([]*profile.Location{leaf}, sat(t.Calls, calls), sat(t.Ticks, ticks))
		}
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("build time profile: %w", err)
	}
	return p, nil
}

func sat(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func baseName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// WriteTimeProfile writes r as a gzipped pprof profile to path.
func WriteTimeProfile(path string, r *TimeRun) error {
	p, err := EncodeTime(r)
	if err != nil {
		return err
	}
	return WriteProfileFile(path, p)
}

// WriteProfileFile writes p gzipped to path, through safefile: a link at
// path or another user's file in a sticky directory is refused.
func WriteProfileFile(path string, p *profile.Profile) error {
	if err := safefile.WriteFile(path, 0o644, p.Write); err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	return nil
}
