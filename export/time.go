package export

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/timing"
)

// newTimeProfile returns a time profile without samples: sample types calls,
// ticks and wall (the last the default and the period), the window's start
// and length, and the comments naming the clock and resolution (the line
// resolutionComment reads back), then confLine, then what wall means.
func newTimeProfile(clock string, resolution float64, start time.Time, duration time.Duration, confLine string) *profile.Profile {
	return &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "calls", Unit: "count"},
			{Type: "ticks", Unit: "count"},
			{Type: "wall", Unit: "nanoseconds"},
		},
		DefaultSampleType: "wall",
		PeriodType:        &profile.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            int64(math.Round(resolution)),
		TimeNanos:         start.UnixNano(),
		DurationNanos:     duration.Nanoseconds(),
		Comments: []string{
			fmt.Sprintf("tickprof time: clock %s, resolution %.6g ns", clock, resolution),
			confLine,
			"wall = resolution x ticks: the estimated total time in each target",
		},
	}
}

// sampleTarget returns the target a time profile's sample counts: its
// target label, else its leaf function ("" if it has neither).
func sampleTarget(s *profile.Sample) string {
	if v := s.Label["target"]; len(v) > 0 {
		return v[0]
	}
	if len(s.Location) > 0 {
		return locationFuncs(s.Location[0])[0]
	}
	return ""
}

// EncodeTime builds a pprof profile of a time run: sample types
// calls/count, ticks/count and wall/nanoseconds (the default), one sample
// per target and caller stack with the target as the leaf frame. Calls and
// ticks that no record attributes to a caller (calls that crossed no tick,
// dropped records) go on a sample whose stack is the target alone, so the
// sums over a target's samples are its exact totals. Each sample carries
// the target's mean and interval bounds as numeric labels (ns), with the
// exact clock its minimum and maximum (min_ns, max_ns) and its quantiles
// (p99_ns, p99_low_ns, p99_high_ns, ...: QuantileLabels), and the
// profile's comments name the clock, resolution and confidence.
func EncodeTime(r *timing.Result) (*profile.Profile, error) {
	p := newTimeProfile(r.Clock, r.Resolution, r.Start, r.Duration,
		fmt.Sprintf("confidence %.4g%% for every interval (labels mean_ns, low_ns, high_ns)", 100*r.Confidence))
	if r.StopReason != "" {
		p.Comments = append(p.Comments, "stopped: "+string(r.StopReason))
	}
	switch r.Correction {
	case "on":
		p.Comments = append(p.Comments, "mean_ns, low_ns, high_ns are corrected for the probe overhead (raw_mean_ns and overhead_ns beside them), and so are the quantile labels that carry pN_overhead_low_ns and pN_overhead_high_ns; wall and ticks are as measured")
	case "none", "off":
		p.Comments = append(p.Comments, "the means include the probe overhead (not corrected)")
	}
	if r.Validate {
		p.Comments = append(p.Comments, ValidateNote)
	}
	for i := range r.Targets {
		for _, w := range []string{ClockWarning(&r.Targets[i], r.Clock), ClockNote(&r.Targets[i], r.Clock)} {
			if w != "" {
				p.Comments = append(p.Comments, w)
			}
		}
	}
	for i := range r.Targets {
		for _, n := range r.Targets[i].Notes {
			p.Comments = append(p.Comments, "note: "+r.Targets[i].Name+": "+n)
		}
		p.Comments = append(p.Comments, r.Targets[i].StackComments()...)
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
		}
		// Quantiles with their intervals, and the exact extremes.
		QuantileLabels(t.Quantiles, labels)
		if x := t.Exact; x != nil && t.Calls > 0 {
			labels["min_ns"] = []int64{int64(x.Min)}
			labels["max_ns"] = []int64{int64(x.Max)}
		}
		for k := range labels {
			if strings.HasSuffix(k, "_ns") {
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
						name = fmt.Sprintf("%s+%#x", baseName(f.File), f.Off)
					}
				}
				stack = append(stack, loc(fmt.Sprintf("%s\x00%#x", f.File, f.Addr), f.Addr, fn(name, f.File)))
			}
			if c.Cut {
				stack = append(stack, loc("\x00truncated", 0, fn(TruncatedFrame, "")))
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
func WriteTimeProfile(path string, r *timing.Result) error {
	p, err := EncodeTime(r)
	if err != nil {
		return err
	}
	return WriteProfileFile(path, p)
}

// WriteProfileFile writes p, gzipped, to the file at path, through
// safefile: a link at path or another user's file in a sticky directory is
// refused.
func WriteProfileFile(path string, p *profile.Profile) error {
	if err := safefile.WriteFile(path, 0o644, p.Write); err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	return nil
}
