// SPDX-License-Identifier: Apache-2.0

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
	p.Comments = append(p.Comments, timeComments(r)...)
	b := newTimeBuilder(p, r)
	for i := range r.Targets {
		b.addTarget(&r.Targets[i])
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("build time profile: %w", err)
	}
	return p, nil
}

// timeComments are a time profile's comments after the header: why the
// run stopped, whether the means are corrected, the validation note, the
// clock warnings, and each target's notes and stack comments.
func timeComments(r *timing.Result) []string {
	var c []string
	if r.StopReason != "" {
		c = append(c, "stopped: "+string(r.StopReason))
	}
	switch r.Correction {
	case "on":
		c = append(c, "mean_ns, low_ns, high_ns are corrected for the probe overhead (raw_mean_ns and overhead_ns beside them), and so are the quantile labels that carry pN_overhead_low_ns and pN_overhead_high_ns; wall and ticks are as measured")
	case "none", "off":
		c = append(c, "the means include the probe overhead (not corrected)")
	}
	if r.Validate {
		c = append(c, ValidateNote)
	}
	c = append(c, ClockLines(r)...)
	for i := range r.Targets {
		for _, n := range r.Targets[i].Notes {
			c = append(c, "note: "+r.Targets[i].Name+": "+n)
		}
		c = append(c, r.Targets[i].StackComments()...)
	}
	return c
}

// ClockLines are the targets' clock warnings and notes, in target order.
func ClockLines(r *timing.Result) []string {
	var out []string
	for i := range r.Targets {
		for _, line := range []string{ClockWarning(&r.Targets[i], r.Clock), ClockNote(&r.Targets[i], r.Clock)} {
			if line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}

// timeBuilder adds a time run's targets to a profile as samples, sharing
// the functions, mappings and locations between them.
type timeBuilder struct {
	p     *profile.Profile
	r     *timing.Result
	funcs *functionTable
	maps  map[string]*profile.Mapping
	locs  map[string]*profile.Location
}

// newTimeBuilder returns a builder adding r's samples to p.
func newTimeBuilder(p *profile.Profile, r *timing.Result) *timeBuilder {
	return &timeBuilder{p: p, r: r, funcs: newFunctionTable(p),
		maps: map[string]*profile.Mapping{}, locs: map[string]*profile.Location{}}
}

// mapping returns the mapping of file (nil for none), adding it if new.
func (b *timeBuilder) mapping(file string) *profile.Mapping {
	if file == "" {
		return nil
	}
	if m := b.maps[file]; m != nil {
		return m
	}
	// Symbolized already: pprof need not look for the file.
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: file, HasFunctions: true}
	b.maps[file] = m
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

// location returns the location known by key, adding it at addr in f (and
// the mapping of f's file) if new.
func (b *timeBuilder) location(key string, addr uint64, f *profile.Function) *profile.Location {
	return b.locationLines(key, addr, f.Filename, []profile.Line{{Function: f}})
}

// locationLines returns the location known by key, adding it at addr in
// the mapping of file with lines (inlined functions first) if new.
func (b *timeBuilder) locationLines(key string, addr uint64, file string, lines []profile.Line) *profile.Location {
	if l := b.locs[key]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: addr, Mapping: b.mapping(file), Line: lines}
	b.locs[key] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// addTarget adds a sample per caller stack of t, and one for the calls and
// ticks no record attributes to a caller.
func (b *timeBuilder) addTarget(t *timing.TargetResult) {
	leaf := b.location("target\x00"+t.Name, 0, b.funcs.get(t.Name, t.Binary))
	labels, numUnits := targetLabels(t)
	str := map[string][]string{"target": {t.Name}, "clock": {b.r.Clock}}
	add := func(stack []*profile.Location, calls, ticks uint64) {
		b.p.Sample = append(b.p.Sample, &profile.Sample{
			Location: stack,
			Value:    []int64{int64(calls), int64(ticks), int64(math.Round(b.r.Resolution * float64(ticks)))},
			Label:    str,
			NumLabel: labels,
			NumUnit:  numUnits,
		})
	}
	var calls, ticks uint64
	for _, c := range t.Callers {
		add(b.callerStack(leaf, c), c.Calls, c.Ticks)
		calls += c.Calls
		ticks += c.Ticks
	}
	if calls < t.Calls || ticks < t.Ticks || len(t.Callers) == 0 {
		add([]*profile.Location{leaf}, sat(t.Calls, calls), sat(t.Ticks, ticks))
	}
}

// callerStack is the stack of a caller record, leaf first, with the
// truncation frame at the root of a stack that was cut.
func (b *timeBuilder) callerStack(leaf *profile.Location, c timing.Caller) []*profile.Location {
	stack := []*profile.Location{leaf}
	for _, f := range c.Frames {
		stack = append(stack, b.frameLocation(f))
	}
	if c.Cut {
		stack = append(stack, b.location("\x00truncated", 0, b.funcs.get(TruncatedFrame, "")))
	}
	return stack
}

// frameLocation is the location of a caller frame: its inlined functions
// and its function with their source positions, as the CPU profile's
// locations have them; an unnamed frame is named by its file and offset.
func (b *timeBuilder) frameLocation(f timing.Frame) *profile.Location {
	key := fmt.Sprintf("%s\x00%#x", f.File, f.Addr)
	if l := b.locs[key]; l != nil {
		return l
	}
	if f.Func == "" {
		name := fmt.Sprintf("%#x", f.Addr)
		if f.File != "" {
			name = fmt.Sprintf("%s+%#x", baseName(f.File), f.Off)
		}
		return b.locationLines(key, f.Addr, f.File, []profile.Line{{Function: b.funcs.get(name, f.File)}})
	}
	var lines []profile.Line
	for _, in := range f.Inlined {
		lines = append(lines, profile.Line{Function: b.funcs.get(in.Func, in.Source), Line: in.Line})
	}
	lines = append(lines, profile.Line{Function: b.funcs.get(f.Func, f.Source), Line: f.Line})
	l := b.locationLines(key, f.Addr, f.File, lines)
	if m := l.Mapping; m != nil {
		m.HasLineNumbers = m.HasLineNumbers || f.Line != 0
		m.HasInlineFrames = m.HasInlineFrames || len(f.Inlined) > 0
	}
	return l
}

// targetLabels are a target's numeric labels and their units: the mean
// and interval (with the raw mean and overhead when corrected), the
// quantiles with their intervals, and the exact extremes.
func targetLabels(t *timing.TargetResult) (labels map[string][]int64, numUnits map[string][]string) {
	labels = map[string][]int64{}
	numUnits = map[string][]string{}
	if t.Err == "" {
		labels["mean_ns"] = []int64{int64(math.Round(t.Estimate.Mean))}
		labels["low_ns"] = []int64{int64(math.Round(t.Estimate.Low))}
		labels["high_ns"] = []int64{int64(math.Round(t.Estimate.High))}
		if t.Corrected {
			labels["raw_mean_ns"] = []int64{int64(math.Round(t.Raw.Mean))}
			labels["overhead_ns"] = []int64{int64(math.Round(t.Overhead.Mean))}
		}
	}
	QuantileLabels(t.Quantiles, labels)
	if x := t.Exact; x != nil && t.Calls > 0 {
		labels["min_ns"] = []int64{int64(x.Min)}
		labels["max_ns"] = []int64{int64(x.Max)}
	}
	for k := range labels {
		if strings.HasSuffix(k, "_ns") {
			numUnits[k] = []string{"nanoseconds"}
		}
	}
	return labels, numUnits
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

// OutputPerm is the mode of the profiles and JSON files written: readable
// by their owner only, as perf writes perf.data and the agent its windows.
// A profile names another user's functions, files and build IDs (root
// profiles any process), and may hold their arguments' timings.
const OutputPerm = 0o600

// WriteProfileFile writes p, gzipped, to the file at path, through
// safefile: a link at path or another user's file in a sticky directory is
// refused. The file is readable by its owner only (OutputPerm).
func WriteProfileFile(path string, p *profile.Profile) error {
	if err := safefile.WriteFile(path, OutputPerm, p.Write); err != nil {
		return fmt.Errorf("write profile: %w", err)
	}
	return nil
}
