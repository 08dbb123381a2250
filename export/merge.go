// SPDX-License-Identifier: Apache-2.0

package export

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/sampler"
)

// Merge-friendly profiles.
//
// A continuous-profiling backend (Pyroscope, an OTLP store, pprof's own
// profile.Merge) merges profiles by adding their sample values stack by
// stack; labels on a sample keep it apart from samples with other labels,
// and comments are kept once each. The window profiles below carry every
// count an interval needs as a sample value, so the sum of windows is the
// profile of their union, and report and diff recompute the intervals from
// it:
//
//   - CPU windows (EncodeCPUWindow): samples/count and cpu/nanoseconds as
//     EncodeCPU writes them, plus, when functions' calls were counted,
//     calls/count: the exact call counts of the counted functions, each on
//     a sample whose stack is the function alone (no samples of its own).
//     Shares, times and times per call of a merged profile are exactly
//     those of the union of its windows.
//   - Time windows (EncodeTimeWindow): calls/count (n), ticks/count (sum c),
//     wall/nanoseconds (d sum c) and ticks_sq/count (sum c^2), one sample per
//     target; the window batch sums (batches, batch_ticks_sq,
//     batch_ticks_calls, batch_calls_sq: mergebatch.go); with the exact
//     clock, hist_calls/count, one sample per histogram bucket.
//
// What merges exactly, and what report does with a merged time profile:
//
//   - exactly: calls, ticks, the mean d sum c / n, the "two-point" interval
//     (n, sum c), the "observed" interval (sum c^2), and the histogram's
//     bucket counts, hence the quantiles' estimates and rank intervals;
//   - exactly up to 2^-20 of each window's sums (their units): the window
//     batch-means interval, windows as batches (mergebatch.go);
//   - not at all: the batch-means interval over polling batches (inside a
//     window), its skewness shift, and the exact minimum and maximum (the
//     end buckets' bounds stand in for them, widening the extreme
//     quantiles' intervals at most to whole buckets).
//
// report gives the widest of the two-point, observed and (two windows or
// more) window batch-means intervals, and says which (Method). Means are raw:
// the windows carry no probe-overhead correction.
//
// Windows merge only with windows of the same period (sampling rate, clock
// resolution): profile.Merge keeps the largest period.

// Sample types of the merge-friendly profiles.
const (
	// CallsType counts calls (CPU windows: of counted functions; time
	// windows: of the targets).
	CallsType = "calls"
	// TicksSqType is sum c_i^2 of a timed target.
	TicksSqType = "ticks_sq"
	// HistType counts a target's calls by exact duration: one sample per
	// histogram bucket, with the bucket's lower bound as numeric label
	// HistLabel (package histogram's layout).
	HistType  = "hist_calls"
	HistLabel = "duration_ge_ns"
)

// DefaultWindowQuantiles are the quantile levels report gives for a merged
// time profile whose comments name none.
var DefaultWindowQuantiles = []float64{0.5, 0.9, 0.99, 0.999}

// EncodeCPUWindow encodes d as EncodeCPU does, with the call counts as
// sample values (type calls/count) instead of comments, so that windows
// merge by addition. A profile that counted no function's calls (d.Calls
// empty: an agent without counted functions) gets no calls/count type: a
// column of zeros would read as "never called" in a backend's UI.
func EncodeCPUWindow(d *sampler.Profile) (*profile.Profile, error) {
	calls := d.Calls
	dd := *d
	dd.Calls = nil
	p, err := EncodeCPU(&dd)
	if err != nil {
		return nil, err
	}
	if len(calls) > 0 {
		addCallSamples(p, calls)
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("encode CPU window: %w", err)
	}
	return p, nil
}

// addCallSamples adds the calls/count sample type to p and one sample per
// counted function, whose stack is the function alone.
func addCallSamples(p *profile.Profile, calls []sampler.CallCount) {
	p.SampleType = append(p.SampleType, &profile.ValueType{Type: CallsType, Unit: "count"})
	for _, s := range p.Sample {
		s.Value = append(s.Value, 0)
	}
	for _, c := range calls {
		if c.Calls < 0 || c.Function == "" {
			continue
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: []*profile.Location{functionLocation(p, c.Function)},
			Value:    []int64{0, 0, c.Calls},
		})
	}
}

// functionLocation returns a location whose innermost function is name,
// adding one (without address or mapping) when the profile has none.
func functionLocation(p *profile.Profile, name string) *profile.Location {
	for _, l := range p.Location {
		if len(l.Line) > 0 && l.Line[0].Function != nil && l.Line[0].Function.Name == name {
			return l
		}
	}
	var fn *profile.Function
	for _, f := range p.Function {
		if f.Name == name {
			fn = f
			break
		}
	}
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name}
		p.Function = append(p.Function, fn)
	}
	l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
	p.Location = append(p.Location, l)
	return l
}

// sampleCallCounts reads call counts stored as calls/count sample values in
// a CPU profile (by leaf function, summed); nil when the profile has no
// such sample type.
func sampleCallCounts(p *profile.Profile) []CallCount {
	ci := -1
	for i, st := range p.SampleType {
		if st.Type == CallsType && st.Unit == "count" {
			ci = i
		}
	}
	if ci < 0 || IsTimeProfile(p) {
		return nil
	}
	sums := map[string]int64{}
	var order []string
	for _, s := range p.Sample {
		if ci >= len(s.Value) || s.Value[ci] <= 0 || len(s.Location) == 0 {
			continue
		}
		fn := locationFuncs(s.Location[0])[0]
		if _, ok := sums[fn]; !ok {
			order = append(order, fn)
		}
		sums[fn] += s.Value[ci]
	}
	sort.Strings(order)
	var out []CallCount
	for _, fn := range order {
		out = append(out, CallCount{Function: fn, Calls: sums[fn]})
	}
	return out
}

// TimeWindowTarget is one timed target's counters over a window.
type TimeWindowTarget struct {
	// Name is the target's display name; Binary the file holding it ("" for
	// a syscall).
	Name, Binary string
	// Calls is n, Ticks sum c_i, TicksSq sum c_i^2 and TicksSqHi its bits
	// above 64 (see ticksq.go).
	Calls, Ticks, TicksSq, TicksSqHi uint64
	// Hist, with the exact clock, counts the window's calls by duration
	// (its Min and Max are not used: they do not add across windows).
	Hist *histogram.Hist
}

// TimeWindow is the timing data of one window.
type TimeWindow struct {
	// Clock is the clock's name ("jiffies", "tick:1ms", "ns"); Resolution
	// its tick length d in ns.
	Clock      string
	Resolution float64
	// Confidence is the level report uses for the intervals.
	Confidence float64
	// Start and Duration are the window's span.
	Start    time.Time
	Duration time.Duration
	// Targets are the timed targets.
	Targets []TimeWindowTarget
	// Quantiles are the levels report gives from the histograms (nil:
	// DefaultWindowQuantiles).
	Quantiles []float64
}

// EncodeTimeWindow builds a merge-friendly time profile: sample types
// calls/count, ticks/count, wall/nanoseconds (so that it reads as a time
// profile) and ticks_sq/count, one sample per target with the target as the
// leaf frame; when a target has a histogram, also hist_calls/count, with
// one more sample per non-empty bucket. It carries no interval: report
// computes it from the sums.
func EncodeTimeWindow(w *TimeWindow) (*profile.Profile, error) {
	if !(w.Resolution > 0) {
		return nil, fmt.Errorf("encode time window: resolution %v ns is not positive", w.Resolution)
	}
	conf := w.Confidence
	if conf == 0 {
		conf = estimate.DefaultConfidence
	}
	p := newTimeProfile(w.Clock, w.Resolution, w.Start, w.Duration,
		fmt.Sprintf("confidence %.4g%% for every interval (computed by report from calls, ticks and ticks_sq)", 100*conf))
	p.SampleType = append(p.SampleType, &profile.ValueType{Type: TicksSqType, Unit: "count"})
	for _, t := range batchTypes {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: t, Unit: "count"})
	}
	hist := false
	for _, t := range w.Targets {
		hist = hist || t.Hist != nil
	}
	if hist {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: HistType, Unit: "count"})
		p.Comments = append(p.Comments, quantilesComment(w.Quantiles))
	}
	for _, t := range w.Targets {
		if t.Ticks > math.MaxInt64 || t.Calls > math.MaxInt64 {
			return nil, fmt.Errorf("encode time window: counts of %s overflow a sample value", t.Name)
		}
		l := targetLocation(p, t)
		bv, units := batchValues(t.Calls, t.Ticks)
		sq, shift := ticksSqValue(t.TicksSqHi, t.TicksSq)
		if shift > 0 {
			if units == nil {
				units = map[string][]int64{}
			}
			units[ticksSqShift] = []int64{shift}
		}
		v := append([]int64{int64(t.Calls), int64(t.Ticks), int64(math.Round(w.Resolution * float64(t.Ticks))), sq}, bv...)
		if hist {
			v = append(v, 0)
		}
		labels := map[string][]string{"target": {t.Name}, "clock": {w.Clock}}
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: v, Label: labels, NumLabel: units})
		if t.Hist != nil {
			p.Sample = append(p.Sample, histSamples(t.Hist, len(v), l, labels)...)
		}
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("encode time window: %w", err)
	}
	return p, nil
}

// targetLocation adds t's function, location and (for a user function)
// mapping to p.
func targetLocation(p *profile.Profile, t TimeWindowTarget) *profile.Location {
	f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: t.Name, SystemName: t.Name, Filename: t.Binary}
	p.Function = append(p.Function, f)
	l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
	if t.Binary != "" {
		m := &profile.Mapping{ID: uint64(len(p.Mapping) + 1), File: t.Binary, HasFunctions: true}
		p.Mapping = append(p.Mapping, m)
		l.Mapping = m
	}
	p.Location = append(p.Location, l)
	return l
}

// histSamples are h's non-empty buckets as samples on l: nvalues values,
// 0 but the last (hist_calls), the bucket's lower bound as label
// HistLabel. Samples of the same target and bucket in other windows merge
// with them.
func histSamples(h *histogram.Hist, nvalues int, l *profile.Location, labels map[string][]string) []*profile.Sample {
	var out []*profile.Sample
	for i, c := range h.Counts {
		if c == 0 || c > math.MaxInt64 {
			continue
		}
		lo, _ := histogram.Bounds(i)
		v := make([]int64, nvalues)
		v[nvalues-1] = int64(c)
		out = append(out, &profile.Sample{Location: []*profile.Location{l}, Value: v,
			Label: labels, NumLabel: map[string][]int64{HistLabel: {int64(lo)}}, NumUnit: map[string][]string{HistLabel: {"nanoseconds"}}})
	}
	return out
}

const quantilesPrefix = "tickprof-quantiles "

func quantilesComment(qs []float64) string {
	if len(qs) == 0 {
		qs = DefaultWindowQuantiles
	}
	var parts []string
	for _, q := range qs {
		parts = append(parts, strconv.FormatFloat(q, 'g', -1, 64))
	}
	return quantilesPrefix + strings.Join(parts, " ")
}

// commentQuantiles reads the levels quantilesComment wrote (the first such
// comment; DefaultWindowQuantiles when none).
func commentQuantiles(p *profile.Profile) []float64 {
	for _, c := range p.Comments {
		rest, ok := strings.CutPrefix(c, quantilesPrefix)
		if !ok {
			continue
		}
		var qs []float64
		for _, f := range strings.Fields(rest) {
			if v, err := strconv.ParseFloat(f, 64); err == nil && v > 0 && v < 1 {
				qs = append(qs, v)
			}
		}
		return qs
	}
	return DefaultWindowQuantiles
}

var resolutionComment = regexp.MustCompile(`^tickprof time: clock \S+, resolution ([0-9.eE+]+) ns`)

// recomputeTimeRows fills the intervals of a merge-friendly time profile
// (one with a ticks_sq sample type) from the summed counts: the widest of
// estimate.Time's (n, sum c and sum c^2, no polling batches) and, with two
// windows or more, the window batch-means interval (mergebatch.go); and,
// when it has hist_calls, the quantiles of the summed histograms. Rows of
// other time profiles are left as read from their labels.
func recomputeTimeRows(p *profile.Profile, t *TimeTable) error {
	if sampleTypeIndex(p, TicksSqType) < 0 {
		return nil
	}
	res, err := mergedResolution(p)
	if err != nil {
		return err
	}
	if t.Confidence == 0 {
		t.Confidence = estimate.DefaultConfidence
	}
	sums := mergedTargetSums(p)
	o := estimate.Options{Confidence: t.Confidence}
	for i := range t.Rows {
		r := &t.Rows[i]
		r.Wall = res * float64(r.Ticks)
		r.HasEstimate = false
		if r.Calls == 0 {
			continue
		}
		if sums.overflow[r.Target] {
			return fmt.Errorf("target %s: its histogram counts %w", r.Target, errOverflow)
		}
		if err := checkTicksSq(sums.ticksSq[r.Target], r.Calls, r.Ticks); err != nil {
			return fmt.Errorf("target %s: %w", r.Target, err)
		}
		lo, hi := ticksSqCounts(sums.ticksSq[r.Target], r.Calls, r.Ticks)
		e, err := estimate.Time(estimate.Counts{Resolution: res, Calls: r.Calls, Ticks: r.Ticks,
			TicksSq: lo, TicksSqHi: hi, HasTicksSq: true}, o)
		if err != nil {
			return fmt.Errorf("target %s: %w", r.Target, err)
		}
		r.HasEstimate = true
		r.Mean, r.Low, r.High, r.Method = e.Mean, e.Low, e.High, e.Method
		if c, ok := sums.batches[r.Target].candidate(r.Calls, r.Ticks, res, t.Confidence); ok && c.High-c.Low > r.High-r.Low {
			r.Low, r.High, r.Method = c.Low, c.High, c.Method
		}
		if h := sums.hists[r.Target]; h != nil {
			if r.qs, err = MergedQuantiles(h, commentQuantiles(p), o); err != nil {
				return fmt.Errorf("target %s: %w", r.Target, err)
			}
			r.Quantiles = r.Quantiles[:0]
			for _, q := range r.qs {
				r.Quantiles = append(r.Quantiles, NewQuantileJSON(q))
			}
		}
	}
	return nil
}

// targetSums are the per-target sums of a merged time profile beyond
// calls and ticks.
type targetSums struct {
	// overflow marks the targets whose histogram counts passed 2^64.
	overflow map[string]bool
	ticksSq  map[string]*big.Int
	hists    map[string]*histogram.Hist
	batches  map[string]*windowBatches
}

func mergedTargetSums(p *profile.Profile) targetSums {
	qi, hi := sampleTypeIndex(p, TicksSqType), sampleTypeIndex(p, HistType)
	var bi [4]int
	for i, typ := range batchTypes {
		bi[i] = sampleTypeIndex(p, typ)
	}
	t := targetSums{ticksSq: map[string]*big.Int{}, hists: map[string]*histogram.Hist{}, batches: map[string]*windowBatches{}, overflow: map[string]bool{}}
	for _, s := range p.Sample {
		name := sampleTarget(s)
		if qi < len(s.Value) {
			if t.ticksSq[name] == nil {
				t.ticksSq[name] = new(big.Int)
			}
			addTicksSq(t.ticksSq[name], s, qi)
		}
		if lo := s.NumLabel[HistLabel]; hi >= 0 && hi < len(s.Value) && len(lo) == 1 && lo[0] >= 0 {
			if t.hists[name] == nil {
				t.hists[name] = &histogram.Hist{}
			}
			c := &t.hists[name].Counts[histogram.Index(uint64(lo[0]))]
			if *c+nonNeg(s.Value[hi]) < *c {
				t.overflow[name] = true
			}
			*c += nonNeg(s.Value[hi])
			continue
		}
		if t.batches[name] == nil {
			t.batches[name] = &windowBatches{}
		}
		t.batches[name].add(s, bi)
	}
	return t
}

// isTimeWindowTypes: the sample types EncodeTimeWindow writes after calls,
// ticks and wall: ticks_sq, then those of the window batches and
// hist_calls, when present.
func isTimeWindowTypes(st []*profile.ValueType) bool {
	if len(st) < 4 || st[3].Type != TicksSqType {
		return false
	}
	rest := st[4:]
	if len(rest) >= len(batchTypes) {
		for i, typ := range batchTypes {
			if rest[i].Type != typ {
				return false
			}
		}
		rest = rest[len(batchTypes):]
	}
	return len(rest) == 0 || len(rest) == 1 && rest[0].Type == HistType
}

func sampleTypeIndex(p *profile.Profile, typ string) int {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return -1
}

// mergedResolution is the clock resolution (ns) a merged time profile
// states in its comments, else its period.
func mergedResolution(p *profile.Profile) (float64, error) {
	res := 0.0
	for _, c := range p.Comments {
		if m := resolutionComment.FindStringSubmatch(c); m != nil {
			res, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if !(res > 0) {
		res = float64(p.Period)
	}
	if !(res > 0) {
		return 0, errors.New("merged time profile states no clock resolution")
	}
	return res, nil
}

// MergedQuantiles estimates the quantiles at levels from a histogram summed
// over windows. The exact minimum and maximum do not add across windows:
// the bounds of the first and last non-empty buckets stand for them, so
// the intervals are those of the union's histogram widened to whole
// buckets at the ends (no narrower than the union's). Nil for an empty
// histogram.
func MergedQuantiles(h *histogram.Hist, levels []float64, o estimate.Options) ([]estimate.Quantile, error) {
	first, last := -1, -1
	for i, c := range h.Counts {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil, nil
	}
	min, _ := h.Bounds(first)
	_, max := h.Bounds(last)
	n := h.Total()
	var qs []estimate.Quantile
	for _, p := range levels {
		q, err := estimate.QuantileOfHistogram(h, min, max, p, o)
		if err != nil {
			return nil, err
		}
		q.Calls = n
		qs = append(qs, q)
	}
	return qs, nil
}

// IsMergeable reports whether p has one of the merge-friendly layouts
// above: a time profile with ticks_sq, or a CPU profile whose call counts
// (if any) are sample values, not comments.
func IsMergeable(p *profile.Profile) bool {
	var samples, calls bool
	for _, st := range p.SampleType {
		switch st.Type {
		case TicksSqType:
			return true
		case CallsType:
			calls = true
		case "samples":
			samples = true
		}
	}
	if calls || !samples {
		return samples && calls
	}
	for _, c := range p.Comments {
		if strings.HasPrefix(c, callsComment) {
			return false
		}
	}
	return !IsTimeProfile(p)
}
