// SPDX-License-Identifier: Apache-2.0

package export

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/units"
)

// errOverflow refuses a profile whose sample counts add up past 2^64.
var errOverflow = errors.New("the profile's sample counts add up to more than 2^64: not a profile tickprof can read (written by hand or damaged?)")

// ErrNoSamples is returned for a profile that holds no samples.
var ErrNoSamples = errors.New("profile holds no samples")

// CPUTable is the function table of a sampled CPU profile: every function's
// flat share (samples where it is the leaf) and cumulative share (samples
// where it is on the stack), each with its confidence interval and the time
// it stands for (Lilja 6.3.1: time = share x sampled time).
type CPUTable struct {
	// Samples is the number of samples N.
	Samples uint64 `json:"samples"`
	// Period is the CPU time per sample in ns (0 when the profile does not
	// say: then no times are given).
	Period float64 `json:"period_ns"`
	// Total is the sampled CPU time N x Period in ns, with its interval
	// (TotalLow, TotalHigh: N taken as a Poisson count).
	Total     float64 `json:"total_ns"`
	TotalLow  float64 `json:"total_low_ns"`
	TotalHigh float64 `json:"total_high_ns"`
	// Duration is the wall-clock length of the profile in ns (0 if unknown).
	Duration float64 `json:"duration_ns"`
	// Confidence is the level of every interval.
	Confidence float64 `json:"confidence"`
	// Truncated counts samples whose stack ended early.
	Truncated uint64 `json:"truncated_samples"`
	// Rows are the functions, by flat share then cumulative share.
	Rows []FuncRow `json:"functions"`
	// PerCall holds time per call for functions whose calls were counted.
	PerCall []PerCallRow `json:"per_call,omitempty"`
}

// FuncRow is one function of a CPUTable.
type FuncRow struct {
	Function string        `json:"function"`
	Flat     ShareEstimate `json:"flat"`
	Cum      ShareEstimate `json:"cum"`
	// Uncertain is set when the flat interval overlaps a neighbour's in the
	// table, so the rank between them is not established.
	Uncertain bool `json:"rank_uncertain"`
}

// ShareEstimate is a share of samples with its interval, and the CPU time
// it represents, hits x period, with its own interval (times in ns; zero when
// the period is unknown). The time interval takes the hit count as Poisson
// (Lilja 6.3.1 with the sampled total itself an estimate), which is wider
// than share interval x N x period for large shares and bounds the variance
// of periodic sampling from above.
type ShareEstimate struct {
	Hits     uint64  `json:"hits"`
	Share    float64 `json:"share"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	Time     float64 `json:"time_ns"`
	TimeLow  float64 `json:"time_low_ns"`
	TimeHigh float64 `json:"time_high_ns"`
}

// PerCallRow is the time per call of a counted function: samples on the
// stack x period / calls (Lilja 6.3.1 with a call counter).
type PerCallRow struct {
	Function string  `json:"function"`
	Calls    uint64  `json:"calls"`
	Hits     uint64  `json:"hits"`
	Mean     float64 `json:"mean_ns"`
	Low      float64 `json:"low_ns"`
	High     float64 `json:"high_ns"`
	Method   string  `json:"method"`
}

// sampleCounts finds how many samples each pprof sample stands for and the
// CPU time per sample. It accepts Go runtime/pprof profiles (samples/count,
// cpu/nanoseconds), tickprof's own, perf-converted profiles and any profile
// with a count or a nanoseconds sample type.
//
// It refuses what is not a CPU profile (a goroutine, heap, mutex or block
// profile: their counts are not samples of time) and negative sample values
// (a difference written by pprof -diff_base: not counts).
func sampleCounts(p *profile.Profile) (count func(*profile.Sample) uint64, period float64, err error) {
	if len(p.SampleType) == 0 {
		return nil, 0, errors.New("profile has no sample types: not a CPU profile")
	}
	if err := notCPU(p); err != nil {
		return nil, 0, err
	}
	if err := negativeValues(p); err != nil {
		return nil, 0, err
	}
	ci, ni := -1, -1
	for i, st := range p.SampleType {
		switch {
		case ci < 0 && (st.Type == "samples" || st.Type == "sample") && st.Unit == "count":
			ci = i
		case ni < 0 && st.Unit == "nanoseconds" && (st.Type == "cpu" || st.Type == "cpu-clock" || st.Type == "task-clock" || st.Type == "time"):
			ni = i
		}
	}
	if ci < 0 {
		for i, st := range p.SampleType {
			if st.Unit == "count" && st.Type != "contentions" && st.Type != "alloc_objects" && st.Type != "inuse_objects" {
				ci = i
				break
			}
		}
	}
	if p.PeriodType != nil && p.PeriodType.Unit == "nanoseconds" && p.Period > 0 {
		period = float64(p.Period)
	}
	switch {
	case ci >= 0:
		count = func(s *profile.Sample) uint64 { return nonNeg(s.Value[ci]) }
		if period == 0 && ni >= 0 {
			var n, ns float64
			for _, s := range p.Sample {
				n += float64(nonNeg(s.Value[ci]))
				ns += float64(nonNeg(s.Value[ni]))
			}
			if n > 0 {
				period = ns / n
			}
		}
	case ni >= 0 && period > 0:
		count = func(s *profile.Sample) uint64 {
			return uint64(math.Round(float64(nonNeg(s.Value[ni])) / period))
		}
	default:
		var names []string
		for _, st := range p.SampleType {
			names = append(names, st.Type+"/"+st.Unit)
		}
		return nil, 0, fmt.Errorf("profile has no samples/count or cpu/nanoseconds sample type (it has %s): not a CPU profile", strings.Join(names, ", "))
	}
	return count, period, nil
}

// nonCPUTypes are sample or period types of pprof profiles that do not
// sample time: Go's goroutine, heap, allocs, mutex and block profiles.
var nonCPUTypes = map[string]string{
	"goroutine": "a goroutine profile", "goroutines": "a goroutine profile",
	"alloc_objects": "a heap profile", "alloc_space": "a heap profile", "inuse_objects": "a heap profile", "inuse_space": "a heap profile", "space": "a heap profile", "objects": "a heap profile",
	"contentions": "a mutex or block profile", "delay": "a mutex or block profile",
	"threadcreate": "a threadcreate profile",
}

// notCPU says what p is when its types name a profile that does not sample
// CPU time.
func notCPU(p *profile.Profile) error {
	types := append([]*profile.ValueType{}, p.SampleType...)
	if p.PeriodType != nil {
		types = append(types, p.PeriodType)
	}
	for _, st := range types {
		if kind, ok := nonCPUTypes[st.Type]; ok {
			return fmt.Errorf("profile counts %s/%s: %s, not a CPU profile; give a CPU profile (samples/count or cpu/nanoseconds) or a tickprof time profile", st.Type, st.Unit, kind)
		}
	}
	return nil
}

// negativeValues refuses a profile with a negative sample value, naming
// the first.
func negativeValues(p *profile.Profile) error {
	for _, s := range p.Sample {
		for i, v := range s.Value {
			if v < 0 {
				what := "value"
				if i < len(p.SampleType) {
					what = p.SampleType[i].Type
				}
				return fmt.Errorf("profile holds a negative %s (%d): a difference of two profiles (pprof -diff_base) is not a sample count; give each profile to tickprof diff BASE NEW instead", what, v)
			}
		}
	}
	return nil
}

func nonNeg(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// locationFuncs returns the function names of a location, innermost first;
// a location without symbols is named by its mapping and address.
func locationFuncs(l *profile.Location) []string {
	var out []string
	for _, ln := range l.Line {
		if ln.Function != nil && ln.Function.Name != "" {
			out = append(out, ln.Function.Name)
		}
	}
	if len(out) == 0 {
		if l.Mapping != nil && l.Mapping.File != "" {
			return []string{fmt.Sprintf("%s+%#x", path.Base(l.Mapping.File), l.Address-l.Mapping.Start+l.Mapping.Offset)}
		}
		return []string{fmt.Sprintf("%#x", l.Address)}
	}
	return out
}

// funcCounts holds flat and cumulative sample counts per function.
type funcCounts struct {
	// overflow is set when the counts do not fit in 64 bits (a profile
	// written by hand or damaged): the caller refuses it.
	overflow  bool
	n         uint64
	truncated uint64
	flat, cum map[string]uint64
}

func countFuncs(p *profile.Profile, count func(*profile.Sample) uint64) funcCounts {
	fc := funcCounts{flat: map[string]uint64{}, cum: map[string]uint64{}}
	seen := map[string]bool{}
	for _, s := range p.Sample {
		c := count(s)
		if c == 0 {
			continue
		}
		if fc.n+c < fc.n {
			fc.overflow = true
		}
		fc.n += c
		if len(s.Label["truncated"]) > 0 && s.Label["truncated"][0] == "true" {
			fc.truncated += c
		}
		clear(seen)
		for i, l := range s.Location {
			names := locationFuncs(l)
			if i == 0 {
				fc.flat[names[0]] += c
			}
			for _, n := range names {
				if !seen[n] {
					seen[n] = true
					fc.cum[n] += c
				}
			}
		}
	}
	return fc
}

// CPUReport builds the function table of a CPU profile.
func CPUReport(p *profile.Profile, o estimate.Options) (*CPUTable, error) {
	count, period, err := sampleCounts(p)
	if err != nil {
		return nil, err
	}
	fc := countFuncs(p, count)
	if fc.overflow {
		return nil, errOverflow
	}
	if fc.n == 0 {
		return nil, ErrNoSamples
	}
	t := &CPUTable{Samples: fc.n, Period: period, Total: float64(fc.n) * period,
		Duration: float64(p.DurationNanos), Truncated: fc.truncated}
	if period > 0 {
		tr, err := estimate.TimePerCall(fc.n, period, 1, o)
		if err != nil {
			return nil, err
		}
		t.TotalLow, t.TotalHigh = tr.Low, tr.High
	}
	if err := t.addRows(fc, o); err != nil {
		return nil, err
	}
	sortRows(t.Rows, false)
	markUncertain(t.Rows, false)
	if err := t.addPerCall(CallCounts(p), fc, o); err != nil {
		return nil, err
	}
	return t, nil
}

// addRows adds a row per function with its flat and cumulative shares.
func (t *CPUTable) addRows(fc funcCounts, o estimate.Options) error {
	for fn, c := range fc.cum {
		r := FuncRow{Function: fn}
		var err error
		if r.Flat, err = t.share(fc.flat[fn], o); err != nil {
			return err
		}
		if r.Cum, err = t.share(c, o); err != nil {
			return err
		}
		t.Rows = append(t.Rows, r)
	}
	return nil
}

// share estimates the share of the samples that h hits are, and their
// time when the period is known; it sets the table's confidence.
func (t *CPUTable) share(h uint64, o estimate.Options) (ShareEstimate, error) {
	pr, err := estimate.Share(h, t.Samples, o)
	if err != nil {
		return ShareEstimate{}, err
	}
	t.Confidence = pr.Confidence
	se := ShareEstimate{Hits: h, Share: pr.Share, Low: pr.Low, High: pr.High}
	if t.Period > 0 {
		tr, err := estimate.TimePerCall(h, t.Period, 1, o)
		if err != nil {
			return ShareEstimate{}, err
		}
		se.Time, se.TimeLow, se.TimeHigh = tr.Mean, tr.Low, tr.High
	}
	return se, nil
}

// addPerCall adds the time per call of each function with a call count,
// when the period is known.
func (t *CPUTable) addPerCall(counts []CallCount, fc funcCounts, o estimate.Options) error {
	for _, cc := range counts {
		if t.Period <= 0 || cc.Calls <= 0 {
			continue
		}
		hits := fc.cum[cc.Function]
		r, err := estimate.TimePerCall(hits, t.Period, uint64(cc.Calls), o)
		if err != nil {
			return fmt.Errorf("time per call of %s: %w", cc.Function, err)
		}
		t.PerCall = append(t.PerCall, PerCallRow{Function: cc.Function, Calls: uint64(cc.Calls), Hits: hits,
			Mean: r.Mean, Low: r.Low, High: r.High, Method: r.Method})
	}
	return nil
}

// SortByCum orders the rows by cumulative share and recomputes the rank
// markers for that order.
func (t *CPUTable) SortByCum() {
	sortRows(t.Rows, true)
	markUncertain(t.Rows, true)
}

func sortRows(rows []FuncRow, byCum bool) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		ka, kb := a.Flat.Hits, b.Flat.Hits
		sa, sb := a.Cum.Hits, b.Cum.Hits
		if byCum {
			ka, kb, sa, sb = sa, sb, ka, kb
		}
		if ka != kb {
			return ka > kb
		}
		if sa != sb {
			return sa > sb
		}
		return a.Function < b.Function
	})
}

// markUncertain flags rows whose interval overlaps the row above or below.
func markUncertain(rows []FuncRow, byCum bool) {
	get := func(i int) ShareEstimate {
		if byCum {
			return rows[i].Cum
		}
		return rows[i].Flat
	}
	overlap := func(a, b ShareEstimate) bool { return a.Low <= b.High && b.Low <= a.High }
	for i := range rows {
		rows[i].Uncertain = (i > 0 && overlap(get(i), get(i-1))) || (i+1 < len(rows) && overlap(get(i), get(i+1)))
	}
}

// WriteText writes the table: the top rows (all when top <= 0) and the
// time-per-call section.
func (t *CPUTable) WriteText(w io.Writer, top int) error {
	conf := fmt.Sprintf("%g%%", 100*t.Confidence)
	fmt.Fprintf(w, "%d samples", t.Samples)
	if t.Period > 0 {
		fmt.Fprintf(w, " of %s CPU each: %s [%s, %s] of CPU time", units.Ns(t.Period), units.Ns(t.Total), units.Ns(t.TotalLow), units.Ns(t.TotalHigh))
	}
	if t.Duration > 0 {
		fmt.Fprintf(w, " in %s of wall-clock time", units.Ns(t.Duration))
	}
	fmt.Fprintf(w, "; intervals at %s confidence", conf)
	if t.Truncated > 0 {
		fmt.Fprintf(w, "; %d samples with truncated stacks", t.Truncated)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-2s %-22s %-30s %-22s %-30s %s\n", "", "flat% ["+conf+"]", "flat time", "cum% ["+conf+"]", "cum time", "function")
	rows := t.Rows
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	for _, r := range rows {
		mark := ""
		if r.Uncertain {
			mark = "~"
		}
		fmt.Fprintf(w, "%-2s %-22s %-30s %-22s %-30s %s\n", mark, fmtShare(r.Flat), t.fmtTime(r.Flat), fmtShare(r.Cum), t.fmtTime(r.Cum), r.Function)
	}
	if len(rows) < len(t.Rows) {
		fmt.Fprintf(w, "   ... %d more functions (--top 0 shows all)\n", len(t.Rows)-len(rows))
	}
	fmt.Fprintln(w, "~ = interval overlaps a neighbour's: the rank against it is not established")
	if len(t.PerCall) > 0 {
		fmt.Fprintf(w, "\ntime per call (samples on stack x period / calls, %s confidence):\n", conf)
		for _, pc := range t.PerCall {
			fmt.Fprintf(w, "  %-40s %s [%s, %s]  (%d calls, %d samples)\n", pc.Function,
				units.Ns(pc.Mean), units.Ns(pc.Low), units.Ns(pc.High), pc.Calls, pc.Hits)
		}
	}
	return nil
}

func fmtShare(s ShareEstimate) string {
	return fmt.Sprintf("%5.2f%% [%.2f, %.2f]", 100*s.Share, 100*s.Low, 100*s.High)
}

func (t *CPUTable) fmtTime(s ShareEstimate) string {
	if t.Period <= 0 {
		return "-"
	}
	return fmt.Sprintf("%s [%s, %s]", units.Ns(s.Time), units.Ns(s.TimeLow), units.Ns(s.TimeHigh))
}

// ReadProfile parses a pprof profile (gzipped or not) from data; name is
// used in errors. It fails with one line for data that is not a profile and
// for a profile without samples.
func ReadProfile(data []byte, name string) (*profile.Profile, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s is empty: not a pprof profile", name)
	}
	if isGzip(data) {
		var err error
		if data, err = gunzip(data, name); err != nil {
			return nil, err
		}
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not a pprof profile: %v", name, firstLine(err.Error()))
	}
	if p.DurationNanos < 0 || p.Period < 0 {
		return nil, fmt.Errorf("%s: duration %d ns, period %d: neither can be negative (the profile was changed or damaged)", name, p.DurationNanos, p.Period)
	}
	if len(p.Sample) == 0 {
		return nil, fmt.Errorf("%s: %w", name, ErrNoSamples)
	}
	return p, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// WriteCPUTable prints a function table as text (the top rows, 0: all)
// or JSON.
func WriteCPUTable(w io.Writer, t *CPUTable, top int, asJSON bool) error {
	if asJSON {
		return WriteJSON(w, t)
	}
	return t.WriteText(w, top)
}
