// SPDX-License-Identifier: Apache-2.0

package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/sampler"
)

// Off-CPU and wall-clock profiles (sample --off-cpu, --wall).
//
// A CPU profile with off-CPU time carries, beside samples/count and
// cpu/nanoseconds, one value per stack of each of:
//
//   - off_cpu/nanoseconds: the Horvitz-Thompson estimate of the stack's
//     time off CPU, sum d/p over its sampled intervals;
//   - wall/nanoseconds: cpu + off_cpu, the stack's wall-clock time;
//   - off_cpu_intervals/count: the sampled intervals behind the estimate;
//   - off_cpu_var/square_microseconds: the estimate's estimated variance,
//     sum d^2 (1-p)/p^2 (in us^2, so that a long interval sampled rarely
//     still fits in 64 bits).
//
// All four are sums over intervals, so profiles of windows merge by
// addition and the merged profile's intervals are those of the union
// (estimate.HTSums). Off-CPU stacks carry the label off_cpu ("blocked":
// the thread slept, "runnable": it waited for a CPU); their samples and
// cpu values are 0. Every stack carries its thread ID (numeric label
// thread).

// Sample types of off-CPU profiles.
const (
	OffCPUType          = "off_cpu"
	WallType            = "wall"
	OffCPUIntervalsType = "off_cpu_intervals"
	OffCPUVarType       = "off_cpu_var"
	// OffCPULabel is the label of off-CPU stacks: why the thread was off.
	OffCPULabel = "off_cpu"
	// ThreadLabel is the numeric label of a stack's thread ID.
	ThreadLabel = "thread"
)

// AddOffCPU adds the off-CPU sample types to p, a profile EncodeCPU or
// EncodeCPUWindow made of d, and makes def (OffCPUType or WallType) its
// default sample type.
func AddOffCPU(p *profile.Profile, d *sampler.Profile, def string) error {
	if len(p.Sample) < len(d.Samples) {
		return fmt.Errorf("add off-CPU time: profile has %d samples, not the %d encoded", len(p.Sample), len(d.Samples))
	}
	p.SampleType = append(p.SampleType,
		&profile.ValueType{Type: OffCPUType, Unit: "nanoseconds"},
		&profile.ValueType{Type: WallType, Unit: "nanoseconds"},
		&profile.ValueType{Type: OffCPUIntervalsType, Unit: "count"},
		&profile.ValueType{Type: OffCPUVarType, Unit: "square_microseconds"})
	p.DefaultSampleType = def
	for i, ps := range p.Sample {
		var off, vr, n int64
		cpu := int64(0)
		if i < len(d.Samples) {
			s := d.Samples[i]
			cpu = s.Count * d.Period
			if s.Tid != 0 {
				if ps.NumLabel == nil {
					ps.NumLabel = map[string][]int64{}
				}
				ps.NumLabel[ThreadLabel] = []int64{s.Tid}
			}
			if s.Off != nil {
				off, vr, n = int64(math.Round(s.Off.Est)), int64(math.Round(s.Off.Var/1e6)), int64(s.Off.N)
				if ps.Label == nil {
					ps.Label = map[string][]string{}
				}
				ps.Label[OffCPULabel] = []string{s.Off.State}
			}
		}
		ps.Value = append(ps.Value, off, cpu+off, n, vr)
	}
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("add off-CPU time: %w", err)
	}
	return nil
}

// IsOffCPUProfile says whether p carries off-CPU time (AddOffCPU): its
// estimate and the variance or the count of sampled intervals behind it.
// A profile read back from Pyroscope may lack off_cpu_var: the server keeps
// no series of a sample type whose values are all zero, as the variance is
// when every interval was taken (p = 1); its absence then means no
// variance (an exact sum).
func IsOffCPUProfile(p *profile.Profile) bool {
	return sampleTypeIndex(p, OffCPUType) >= 0 && (sampleTypeIndex(p, OffCPUVarType) >= 0 || sampleTypeIndex(p, OffCPUIntervalsType) >= 0)
}

// OffCPUTableType is the table a profile with off-CPU time asks for: wall
// when its default sample type is wall, else off-CPU.
func OffCPUTableType(p *profile.Profile) string {
	if p.DefaultSampleType == WallType {
		return WallType
	}
	return OffCPUType
}

// OffCPURow is one function's off-CPU (or wall) time: where it is the leaf
// (Flat) and anywhere on the stack (Cum), each with its interval.
type OffCPURow struct {
	Function  string      `json:"function"`
	Flat      OffEstimate `json:"flat"`
	Cum       OffEstimate `json:"cum"`
	CumShare  float64     `json:"cum_share"`
	FlatShare float64     `json:"flat_share"`
}

// OffEstimate is an estimated time (ns) with its interval, its standard
// error, the confidence level and the sampled intervals (with CPU samples,
// for wall time) behind it.
type OffEstimate struct {
	Mean       float64 `json:"ns"`
	Low        float64 `json:"low_ns"`
	High       float64 `json:"high_ns"`
	StdErr     float64 `json:"stderr_ns"`
	Confidence float64 `json:"confidence"`
	Calls      uint64  `json:"intervals"`
}

// OffCPUTable is the function table of an off-CPU or wall profile.
type OffCPUTable struct {
	// Type is OffCPUType or WallType.
	Type     string      `json:"type"`
	Total    OffEstimate `json:"total"`
	Blocked  OffEstimate `json:"blocked"`
	Runnable OffEstimate `json:"runnable"`
	Duration float64     `json:"duration_ns"`
	Rows     []OffCPURow `json:"rows"`
	// Threads are the time of each thread (label thread), most first:
	// for a wall table, each thread's wall time in the profile, the
	// denominator of its stacks' shares.
	Threads []OffThread `json:"threads,omitempty"`
}

// OffThread is one thread's total time in an off-CPU or wall table.
type OffThread struct {
	Tid   int64       `json:"tid"`
	Total OffEstimate `json:"total"`
}

// offSums are one function's sums: off-CPU intervals and CPU samples.
type offSums struct {
	off estimate.HTSums
	cpu uint64
}

func (a offSums) plus(b offSums) offSums { return offSums{off: a.off.Plus(b.off), cpu: a.cpu + b.cpu} }

// OffCPUReport builds the table of p's off-CPU time (typ OffCPUType) or
// wall-clock time (WallType: CPU samples and off-CPU time together).
func OffCPUReport(p *profile.Profile, typ string, o estimate.Options) (*OffCPUTable, error) {
	if !IsOffCPUProfile(p) {
		return nil, errors.New("profile has no off-CPU time (sample types off_cpu, and off_cpu_var or off_cpu_intervals)")
	}
	if err := negativeValues(p); err != nil {
		return nil, err
	}
	period := 0.0
	if p.PeriodType != nil && p.Period > 0 {
		period = float64(p.Period)
	}
	sums := sumOffCPU(p, typ)
	flat, cum, total, blocked, runnable := sums.flat, sums.cum, sums.total, sums.blocked, sums.runnable
	t := &OffCPUTable{Type: typ, Duration: float64(p.DurationNanos)}
	var err error
	if t.Total, err = offResult(total, period, o); err != nil {
		return nil, err
	}
	t.Blocked, _ = offResult(blocked, period, o)
	t.Runnable, _ = offResult(runnable, period, o)
	for fn, c := range cum {
		r := OffCPURow{Function: fn}
		if r.Cum, err = offResult(c, period, o); err != nil {
			return nil, err
		}
		if r.Flat, err = offResult(flat[fn], period, o); err != nil {
			return nil, err
		}
		if t.Total.Mean > 0 {
			r.CumShare, r.FlatShare = r.Cum.Mean/t.Total.Mean, r.Flat.Mean/t.Total.Mean
		}
		t.Rows = append(t.Rows, r)
	}
	if err := t.addThreads(sums.threads, period, o); err != nil {
		return nil, err
	}
	sort.Slice(t.Rows, func(i, j int) bool {
		if t.Rows[i].Cum.Mean != t.Rows[j].Cum.Mean {
			return t.Rows[i].Cum.Mean > t.Rows[j].Cum.Mean
		}
		return t.Rows[i].Function < t.Rows[j].Function
	})
	return t, nil
}

// offCPUSums are a profile's off-CPU sums: by function (flat and
// cumulative), in all, and by state.
type offCPUSums struct {
	flat, cum                map[string]offSums
	total, blocked, runnable offSums
	threads                  map[int64]offSums
}

// sumOffCPU adds up p's off-CPU intervals (and, for WallType, its CPU
// samples) by function and by state.
func sumOffCPU(p *profile.Profile, typ string) offCPUSums {
	oi, ni, vi := sampleTypeIndex(p, OffCPUType), sampleTypeIndex(p, OffCPUIntervalsType), sampleTypeIndex(p, OffCPUVarType)
	ci := sampleTypeIndex(p, "samples")
	r := offCPUSums{flat: map[string]offSums{}, cum: map[string]offSums{}, threads: map[int64]offSums{}}
	for _, s := range p.Sample {
		v := offSums{off: estimate.HTSums{Est: float64(s.Value[oi])}}
		if vi >= 0 {
			v.off.Var = float64(s.Value[vi]) * 1e6
		}
		if ni >= 0 {
			v.off.N = uint64(s.Value[ni])
		}
		if typ == WallType && ci >= 0 {
			v.cpu = uint64(s.Value[ci])
		}
		if v.off.Est == 0 && v.cpu == 0 {
			continue
		}
		r.total = r.total.plus(v)
		if tid := s.NumLabel[ThreadLabel]; len(tid) > 0 {
			r.threads[tid[0]] = r.threads[tid[0]].plus(v)
		}
		if st := s.Label[OffCPULabel]; len(st) > 0 {
			if st[0] == sampler.OffRunnable {
				r.runnable = r.runnable.plus(v)
			} else {
				r.blocked = r.blocked.plus(v)
			}
		}
		addFuncs(s, v, r.flat, r.cum)
	}
	return r
}

// addThreads adds each thread's total, most first.
func (t *OffCPUTable) addThreads(threads map[int64]offSums, period float64, o estimate.Options) error {
	for tid, v := range threads {
		r, err := offResult(v, period, o)
		if err != nil {
			return err
		}
		t.Threads = append(t.Threads, OffThread{Tid: tid, Total: r})
	}
	sort.Slice(t.Threads, func(i, j int) bool {
		if t.Threads[i].Total.Mean != t.Threads[j].Total.Mean {
			return t.Threads[i].Total.Mean > t.Threads[j].Total.Mean
		}
		return t.Threads[i].Tid < t.Threads[j].Tid
	})
	return nil
}

// addFuncs adds v to the flat sums of s's leaf function and the cumulative
// sums of every function on its stack (once each).
func addFuncs(s *profile.Sample, v offSums, flat, cum map[string]offSums) {
	seen := map[string]bool{}
	for i, l := range s.Location {
		names := locationFuncs(l)
		if i == 0 {
			flat[names[0]] = flat[names[0]].plus(v)
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				cum[n] = cum[n].plus(v)
			}
		}
	}
}

func offResult(s offSums, period float64, o estimate.Options) (OffEstimate, error) {
	r, err := estimate.WallTotal(s.cpu, period, s.off, o)
	return OffEstimate{Mean: r.Mean, Low: r.Low, High: r.High, StdErr: r.StdErr, Confidence: r.Confidence, Calls: r.Calls}, err
}

// WriteOffCPUTable writes t as text (the top rows; 0 for all) or JSON.
func WriteOffCPUTable(w io.Writer, t *OffCPUTable, top int, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}
	conf := fmt.Sprintf("%.0f%%", 100*t.Total.Confidence)
	what := "off-CPU"
	if t.Type == WallType {
		what = "wall-clock (on + off CPU)"
	}
	fmt.Fprintf(w, "%s time %s [%s, %s] (%s confidence) over %s\n", what, fmtNs(t.Total.Mean), fmtNs(t.Total.Low), fmtNs(t.Total.High), conf, fmtNs(t.Duration))
	fmt.Fprintf(w, "  blocked %s [%s, %s]; runnable, waiting for a CPU %s [%s, %s]\n",
		fmtNs(t.Blocked.Mean), fmtNs(t.Blocked.Low), fmtNs(t.Blocked.High), fmtNs(t.Runnable.Mean), fmtNs(t.Runnable.Low), fmtNs(t.Runnable.High))
	for i, th := range t.Threads {
		if i == 4 {
			fmt.Fprintf(w, "  ... %d threads in all\n", len(t.Threads))
			break
		}
		fmt.Fprintf(w, "  thread %d: %s [%s, %s]\n", th.Tid, fmtNs(th.Total.Mean), fmtNs(th.Total.Low), fmtNs(th.Total.High))
	}
	fmt.Fprintf(w, "%8s %-23s %8s %-23s %s\n", "flat", "[interval]", "cum", "[interval]", "function")
	for i, r := range t.Rows {
		if top > 0 && i >= top {
			break
		}
		fmt.Fprintf(w, "%8s %-23s %8s %-23s %s\n", fmtNs(r.Flat.Mean), "["+fmtNs(r.Flat.Low)+", "+fmtNs(r.Flat.High)+"]",
			fmtNs(r.Cum.Mean), "["+fmtNs(r.Cum.Low)+", "+fmtNs(r.Cum.High)+"]", r.Function)
	}
	return nil
}

// fmtNs formats a time in ns with a unit.
func fmtNs(ns float64) string {
	switch a := math.Abs(ns); {
	case a >= 1e9:
		return fmt.Sprintf("%.3gs", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gus", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}

// SplitOffCPU returns d's CPU samples alone, as a profile of its own (the
// CPU window of an agent that also samples off-CPU time), and whether d has
// off-CPU stacks at all.
func SplitOffCPU(d *sampler.Profile) (cpu *sampler.Profile, hasOff bool) {
	c := *d
	c.Samples = nil
	for _, s := range d.Samples {
		if s.Off != nil {
			hasOff = true
			continue
		}
		c.Samples = append(c.Samples, s)
	}
	return &c, hasOff
}

// EncodeOffCPUWindow encodes d, CPU samples and off-CPU stacks, as a
// merge-friendly window (EncodeCPUWindow with AddOffCPU's types; default
// type wall).
func EncodeOffCPUWindow(d *sampler.Profile) (*profile.Profile, error) {
	p, err := EncodeCPUWindow(d)
	if err != nil {
		return nil, err
	}
	if err := AddOffCPU(p, d, WallType); err != nil {
		return nil, err
	}
	return p, nil
}
