package export

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// CPUData is a sampled CPU profile before it is encoded as pprof: symbolized
// locations and stacks of location indices, as the sampler collected them.
type CPUData struct {
	// Period is the CPU time one sample stands for, in nanoseconds
	// (1e9 / sampling frequency).
	Period int64
	// Start and Duration are the wall-clock span of the sampling.
	Start    time.Time
	Duration time.Duration
	// Mappings are the mapped files; Mappings[0] should be the main
	// executable, as in Go's own profiles.
	Mappings []CPUMapping
	// Locations are the distinct program counters.
	Locations []CPULocation
	// Samples are the distinct stacks with their counts.
	Samples []CPUSample
	// Calls are exact call counts of functions (from entry uprobes).
	Calls []CallCount
	// Comments are free text lines stored in the profile.
	Comments []string
}

// CPUMapping is one mapped file (or the kernel).
type CPUMapping struct {
	Start, Limit, Offset uint64
	File                 string
	BuildID              string
	// Symbolized is true when the file's symbols were read, so that pprof
	// need not try again; Lines when it also had line information; Inlines
	// when inlined calls were expanded (from DWARF).
	Symbolized, Lines, Inlines bool
}

// CPULocation is one program counter; Function is "" when unknown (the
// address and mapping are kept). Function is the function the address
// belongs to; when calls were inlined there, Inlined lists the inlined
// bodies innermost first, and File and Line are then the position of the
// outermost inlined call in Function.
type CPULocation struct {
	Address  uint64
	Mapping  int // index into Mappings, or -1
	Function string
	File     string
	Line     int64
	Inlined  []CPULine
}

// CPULine is a source position in a function.
type CPULine struct {
	Function string
	File     string
	Line     int64
}

// CPUSample is one distinct stack, leaf first, with its sample count.
type CPUSample struct {
	Locations []int // indices into Locations, leaf first
	Count     int64
	Pid       int64 // 0 when unknown
	// Truncated marks a stack that ended early (the walk hit the depth limit,
	// failed, or stopped before a thread's root function).
	Truncated bool
}

// CallCount is the exact number of calls of a function during the profile.
type CallCount struct {
	Function string
	Calls    int64
}

// TruncatedFrame is the function name of the frame put at the root of a
// stack that ended early.
const TruncatedFrame = "[truncated stack]"

// callsComment prefixes the comment lines that carry call counts.
const callsComment = "tickprof-calls "

// EncodeCPU builds a pprof CPU profile laid out like Go's runtime/pprof
// profiles: sample types samples/count and cpu/nanoseconds, period type
// cpu/nanoseconds, one Mapping per file with its build ID, one Location per
// address with its function and line. Call counts are stored as comments
// ("tickprof-calls N FUNCTION") so that report can compute time per call.
func EncodeCPU(d *CPUData) (*profile.Profile, error) {
	if d.Period <= 0 {
		return nil, fmt.Errorf("encode CPU profile: period %d ns is not positive", d.Period)
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "samples", Unit: "count"},
			{Type: "cpu", Unit: "nanoseconds"},
		},
		DefaultSampleType: "cpu",
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            d.Period,
		TimeNanos:         d.Start.UnixNano(),
		DurationNanos:     int64(d.Duration),
	}
	for i, m := range d.Mappings {
		p.Mapping = append(p.Mapping, &profile.Mapping{
			ID:              uint64(i + 1),
			Start:           m.Start,
			Limit:           m.Limit,
			Offset:          m.Offset,
			File:            m.File,
			BuildID:         m.BuildID,
			HasFunctions:    m.Symbolized,
			HasFilenames:    m.Symbolized,
			HasLineNumbers:  m.Lines,
			HasInlineFrames: m.Inlines,
		})
	}
	funcs := map[[2]string]*profile.Function{}
	function := func(name, file string) *profile.Function {
		k := [2]string{name, file}
		if f, ok := funcs[k]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
		funcs[k] = f
		p.Function = append(p.Function, f)
		return f
	}
	for i, l := range d.Locations {
		loc := &profile.Location{ID: uint64(i + 1), Address: l.Address}
		if l.Mapping >= 0 {
			if l.Mapping >= len(p.Mapping) {
				return nil, fmt.Errorf("encode CPU profile: location %d names mapping %d of %d", i, l.Mapping, len(p.Mapping))
			}
			loc.Mapping = p.Mapping[l.Mapping]
		}
		if l.Function != "" {
			for _, in := range l.Inlined {
				loc.Line = append(loc.Line, profile.Line{Function: function(in.Function, in.File), Line: in.Line})
			}
			loc.Line = append(loc.Line, profile.Line{Function: function(l.Function, l.File), Line: l.Line})
		}
		p.Location = append(p.Location, loc)
	}
	var trunc *profile.Location
	for _, s := range d.Samples {
		ps := &profile.Sample{Value: []int64{s.Count, s.Count * d.Period}}
		for _, li := range s.Locations {
			if li < 0 || li >= len(p.Location) {
				return nil, fmt.Errorf("encode CPU profile: sample names location %d of %d", li, len(p.Location))
			}
			ps.Location = append(ps.Location, p.Location[li])
		}
		if s.Truncated {
			if trunc == nil {
				trunc = &profile.Location{ID: uint64(len(p.Location) + 1),
					Line: []profile.Line{{Function: function(TruncatedFrame, "")}}}
				p.Location = append(p.Location, trunc)
			}
			ps.Location = append(ps.Location, trunc)
			ps.Label = map[string][]string{"truncated": {"true"}}
		}
		if s.Pid != 0 {
			ps.NumLabel = map[string][]int64{"pid": {s.Pid}}
			ps.NumUnit = map[string][]string{"pid": {"pid"}}
		}
		p.Sample = append(p.Sample, ps)
	}
	calls := append([]CallCount(nil), d.Calls...)
	sort.Slice(calls, func(i, j int) bool { return calls[i].Function < calls[j].Function })
	for _, c := range calls {
		p.Comments = append(p.Comments, callsComment+strconv.FormatInt(c.Calls, 10)+" "+c.Function)
	}
	p.Comments = append(p.Comments, d.Comments...)
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("encode CPU profile: %w", err)
	}
	return p, nil
}

// CallCounts reads the call counts EncodeCPU stored in a profile's comments.
func CallCounts(p *profile.Profile) []CallCount {
	out := sampleCallCounts(p)
	for _, c := range p.Comments {
		rest, ok := strings.CutPrefix(c, callsComment)
		if !ok {
			continue
		}
		n, fn, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 0 || fn == "" {
			continue
		}
		out = append(out, CallCount{Function: fn, Calls: v})
	}
	return out
}
