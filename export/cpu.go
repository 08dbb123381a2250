// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/sampler"
)

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
func EncodeCPU(d *sampler.Profile) (*profile.Profile, error) {
	if d.Period <= 0 {
		return nil, fmt.Errorf("encode CPU profile: period %d ns is not positive", d.Period)
	}
	p := newCPUProfile(d)
	funcs := newFunctionTable(p)
	if err := addCPULocations(p, d, funcs); err != nil {
		return nil, err
	}
	if err := addCPUSamples(p, d, funcs); err != nil {
		return nil, err
	}
	p.Comments = append(callComments(d.Calls), d.Comments...)
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("encode CPU profile: %w", err)
	}
	return p, nil
}

// newCPUProfile returns a CPU profile with d's sample types, period,
// window and mappings, and neither locations nor samples.
func newCPUProfile(d *sampler.Profile) *profile.Profile {
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
	return p
}

// addCPULocations adds d's locations to p, each with its mapping and its
// lines, inlined functions first.
func addCPULocations(p *profile.Profile, d *sampler.Profile, funcs *functionTable) error {
	for i, l := range d.Locations {
		loc := &profile.Location{ID: uint64(i + 1), Address: l.Address}
		if l.Mapping >= 0 {
			if l.Mapping >= len(p.Mapping) {
				return fmt.Errorf("encode CPU profile: location %d names mapping %d of %d", i, l.Mapping, len(p.Mapping))
			}
			loc.Mapping = p.Mapping[l.Mapping]
		}
		if l.Function != "" {
			for _, in := range l.Inlined {
				loc.Line = append(loc.Line, profile.Line{Function: funcs.get(in.Function, in.File), Line: in.Line})
			}
			loc.Line = append(loc.Line, profile.Line{Function: funcs.get(l.Function, l.File), Line: l.Line})
		}
		p.Location = append(p.Location, loc)
	}
	return nil
}

// addCPUSamples adds d's samples to p; a truncated stack ends in one
// shared truncation location added after d's.
func addCPUSamples(p *profile.Profile, d *sampler.Profile, funcs *functionTable) error {
	var trunc *profile.Location
	for _, s := range d.Samples {
		ps := &profile.Sample{Value: []int64{s.Count, s.Count * d.Period}}
		for _, li := range s.Locations {
			if li < 0 || li >= len(p.Location) {
				return fmt.Errorf("encode CPU profile: sample names location %d of %d", li, len(p.Location))
			}
			ps.Location = append(ps.Location, p.Location[li])
		}
		if s.Truncated {
			if trunc == nil {
				trunc = &profile.Location{ID: uint64(len(p.Location) + 1),
					Line: []profile.Line{{Function: funcs.get(TruncatedFrame, "")}}}
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
	return nil
}

// callComments are the comments that carry the call counts, sorted by
// function.
func callComments(counts []sampler.CallCount) []string {
	calls := append([]sampler.CallCount(nil), counts...)
	sort.Slice(calls, func(i, j int) bool { return calls[i].Function < calls[j].Function })
	var out []string
	for _, c := range calls {
		out = append(out, callsComment+strconv.FormatInt(c.Calls, 10)+" "+c.Function)
	}
	return out
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
