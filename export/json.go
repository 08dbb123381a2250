// SPDX-License-Identifier: Apache-2.0

package export

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tickprof/tickprof/internal/selfcost"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/timing"
)

// timeJSON is the --json document of `tickprof time`.
type timeJSON struct {
	// OwnCost is what the run cost tickprof itself, when the writer
	// measured it; a reader ignores it.
	OwnCost      *selfcost.Cost   `json:"own_cost,omitempty"`
	Clock        string           `json:"clock"`
	ResolutionNs float64          `json:"resolution_ns"`
	Confidence   float64          `json:"confidence"`
	Start        time.Time        `json:"start"`
	DurationS    float64          `json:"duration_s"`
	PID          int              `json:"pid,omitempty"`
	Command      []string         `json:"command,omitempty"`
	StopReason   string           `json:"stop_reason,omitempty"`
	Validate     bool             `json:"validate,omitempty"`
	RingDrops    uint64           `json:"ring_drops"`
	StackFails   uint64           `json:"stack_failures"`
	Correction   string           `json:"overhead_correction,omitempty"`
	Go           *goStatsJSON     `json:"go,omitempty"`
	Budget       *budgetJSON      `json:"overhead_budget,omitempty"`
	Targets      []timeTargetJSON `json:"targets"`
}

// budgetJSON is a run under an overhead budget: the budget and the duty
// cycle as fractions, the projected slowdown (a fraction) with its interval,
// and each target's call rate while probed (calls per second, in targets
// order).
type budgetJSON struct {
	Budget       float64    `json:"budget"`
	Duty         float64    `json:"duty_cycle"`
	Windows      int        `json:"windows"`
	Binding      bool       `json:"binding"`
	Slowdown     float64    `json:"slowdown"`
	SlowdownLow  float64    `json:"slowdown_low"`
	SlowdownHigh float64    `json:"slowdown_high"`
	CostNs       float64    `json:"probe_cost_ns"`
	Censored     uint64     `json:"censored_calls"`
	Rates        []rateJSON `json:"call_rates"`
}

type rateJSON struct {
	PerSec float64 `json:"per_s"`
	Low    float64 `json:"low_per_s"`
	High   float64 `json:"high_per_s"`
}

type goStatsJSON struct {
	Morestack   uint64 `json:"morestack_skipped"`
	Expired     uint64 `json:"expired_entries"`
	NoGoroutine uint64 `json:"no_goroutine"`
}

type timeTargetJSON struct {
	Target       string   `json:"target"`
	Kind         string   `json:"kind"`
	Binary       string   `json:"binary,omitempty"`
	Calls        uint64   `json:"calls"`
	Ticks        uint64   `json:"ticks"`
	MeanNs       *float64 `json:"mean_ns"`
	LowNs        *float64 `json:"low_ns"`
	HighNs       *float64 `json:"high_ns"`
	RelHalfWidth *float64 `json:"rel_half_width,omitempty"`
	Corrected    bool     `json:"corrected,omitempty"`
	RawMeanNs    *float64 `json:"raw_mean_ns,omitempty"`
	RawLowNs     *float64 `json:"raw_low_ns,omitempty"`
	RawHighNs    *float64 `json:"raw_high_ns,omitempty"`
	OverheadNs   *float64 `json:"overhead_ns,omitempty"`
	OverheadLow  *float64 `json:"overhead_low_ns,omitempty"`
	OverheadHigh *float64 `json:"overhead_high_ns,omitempty"`
	OverheadKind string   `json:"overhead_kind,omitempty"`
	// OverheadMethod says how the overhead was known: "echo" (measured in
	// the run), "pattern-range" (the calibrated patterns' range) or the
	// calibration's constant's method.
	OverheadMethod string    `json:"overhead_method,omitempty"`
	Echo           *echoJSON `json:"echo,omitempty"`
	// CorrectedMinNs and CorrectedMaxNs are the shortest and longest call
	// with the overhead's mean subtracted, like the quantiles beside them.
	CorrectedMinNs *float64       `json:"corrected_min_ns,omitempty"`
	CorrectedMaxNs *float64       `json:"corrected_max_ns,omitempty"`
	InlinedInto    []string       `json:"inlined_into,omitempty"`
	Confidence     float64        `json:"confidence"`
	Method         string         `json:"method,omitempty"`
	Error          string         `json:"error,omitempty"`
	Clock          string         `json:"clock"`
	ResolutionNs   float64        `json:"resolution_ns"`
	WallNs         float64        `json:"wall_ns"`
	Crossings      uint64         `json:"crossings"`
	Orphans        uint64         `json:"orphans"`
	Dropped        uint64         `json:"dropped_records"`
	NsSum          *uint64        `json:"ns_sum,omitempty"`
	NsMean         *float64       `json:"ns_mean,omitempty"`
	NsLow          *float64       `json:"ns_low,omitempty"`
	NsHigh         *float64       `json:"ns_high,omitempty"`
	NsMin          *uint64        `json:"ns_min,omitempty"`
	NsMax          *uint64        `json:"ns_max,omitempty"`
	NsLog2Hist     []uint64       `json:"ns_log2_hist,omitempty"`
	Covered        *bool          `json:"covered,omitempty"`
	ClockCheck     *checkJSON     `json:"clock_check,omitempty"`
	Quantiles      []QuantileJSON `json:"quantiles,omitempty"`
	Histogram      *HistogramJSON `json:"histogram,omitempty"`
	Callers        []callerJSON   `json:"callers,omitempty"`
	Notes          []string       `json:"notes,omitempty"`
}

// echoJSON is what a target's echoes measured of the probes' own cost
// inside its calls (timing.EchoResult).
type echoJSON struct {
	Echoed     uint64  `json:"echoed_calls"`
	GapMeanNs  float64 `json:"gap_on_cpu_mean_ns"`
	WaitMeanNs float64 `json:"wait_mean_ns"`
	ModelA     float64 `json:"model_a_ns"`
	ModelB     float64 `json:"model_b"`
	ModelS0    float64 `json:"model_s0_ns"`
	ModelS1    float64 `json:"model_s1"`
	MaxNs      float64 `json:"max_overhead_ns"`
	Missed     uint64  `json:"missed"`
	Window     uint64  `json:"window_calls"`
	Excluded   uint64  `json:"excluded_calls"`
	Windows    int     `json:"windows"`
}

func echoToJSON(e *timing.EchoResult) *echoJSON {
	if e == nil {
		return nil
	}
	n := math.Max(1, e.Sums.N)
	return &echoJSON{Echoed: uint64(e.Sums.N), GapMeanNs: e.Sums.G / n, WaitMeanNs: e.Sums.P / n,
		ModelA: e.Model.A, ModelB: e.Model.B, ModelS0: e.Model.S0, ModelS1: e.Model.S1, MaxNs: e.MaxNs,
		Missed: e.Missed, Window: e.Window, Excluded: e.Excluded, Windows: e.Windows}
}

// callerJSON is a caller stack: its functions innermost first, those
// inlined at an address before the function they were inlined into.
type callerJSON struct {
	Stack []string `json:"stack"`
	Calls uint64   `json:"calls"`
	Ticks uint64   `json:"ticks"`
}

// maxJSONCallers bounds the callers written per target.
const maxJSONCallers = 20

func fp(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// WriteTimeJSON writes r as one JSON object: run metadata and `targets`,
// one object per target with target, calls, ticks, mean_ns, low_ns,
// high_ns, confidence, method, clock, resolution_ns, and the exact-ns
// fields (ns_*) when the ns clock was read. A target corrected for the
// probe overhead has corrected: true, its measured figures in raw_mean_ns,
// raw_low_ns, raw_high_ns and the overhead subtracted in overhead_ns,
// overhead_low_ns, overhead_high_ns; mean_ns..high_ns are then corrected.
// With --validate, covered says whether the tick-clock interval holds the
// exact mean of the same calls (ns_mean): a check of quantization on these
// calls, not of the long-run mean (ValidateNote).
// With the jiffies clock, clock_check compares the jiffies estimate of a
// random sample of the calls (tick_mean_ns, tick_low_ns, tick_high_ns at
// its confidence) with their exact mean (exact_mean_ns); agree is false
// when the clock keeps time with the program and the mean is biased;
// resolves is false when the check is much less sharp than the target's
// estimate (it checked a small share of short calls).
func WriteTimeJSON(w io.Writer, r *timing.Result) error { return writeTimeJSON(w, r, nil) }

// writeTimeJSON is WriteTimeJSON with the run's own cost (nil: none).
func writeTimeJSON(w io.Writer, r *timing.Result, cost *selfcost.Cost) error {
	doc := timeJSON{OwnCost: cost,
		Clock: r.Clock, ResolutionNs: r.Resolution, Confidence: r.Confidence,
		Start: r.Start.UTC(), DurationS: r.Duration.Seconds(), PID: r.PID, Command: r.Command,
		StopReason: string(r.StopReason), Validate: r.Validate, RingDrops: r.RingDrops, StackFails: r.StackFails,
		Correction: string(r.Correction), Targets: []timeTargetJSON{},
	}
	if g := r.Go; g != nil {
		doc.Go = &goStatsJSON{Morestack: g.Morestack, Expired: g.Expired, NoGoroutine: g.NoGoroutine}
	}
	if b := r.Budget; b != nil {
		doc.Budget = budgetToJSON(b)
	}
	for i := range r.Targets {
		doc.Targets = append(doc.Targets, targetToJSON(r, &r.Targets[i]))
	}
	return WriteJSON(w, doc)
}

// budgetToJSON is the JSON of an overhead budget's outcome.
func budgetToJSON(b *timing.BudgetResult) *budgetJSON {
	bj := &budgetJSON{Budget: b.Budget, Duty: b.Duty, Windows: b.Windows, Binding: b.Binding,
		Slowdown: b.Slowdown.Mean, SlowdownLow: b.Slowdown.Low, SlowdownHigh: b.Slowdown.High,
		CostNs: b.Cost.Mean, Censored: b.Censored, Rates: []rateJSON{}}
	for _, rt := range b.Rates {
		bj.Rates = append(bj.Rates, rateJSON{PerSec: rt.Mean, Low: rt.Low, High: rt.High})
	}
	return bj
}

// targetToJSON is the JSON of one target of run r.
func targetToJSON(r *timing.Result, t *timing.TargetResult) timeTargetJSON {
	j := timeTargetJSON{
		Target: t.Name, Kind: string(t.Kind), Binary: t.Binary, Calls: t.Calls, Ticks: t.Ticks,
		Confidence: r.Confidence, Clock: r.Clock, ResolutionNs: r.Resolution,
		WallNs: r.Wall(t), Crossings: t.Crossings, Orphans: t.Orphans, Dropped: t.Dropped,
		Covered: t.Covered, Error: t.Err, InlinedInto: t.InlinedInto, Notes: t.Notes,
		ClockCheck: checkToJSON(t), Echo: echoToJSON(t.Echo),
	}
	if t.Corrected {
		j.OverheadMethod = t.Overhead.Method
	}
	if t.Err == "" {
		estimateToJSON(&j, t)
	}
	if x := t.Exact; x != nil {
		exactToJSON(&j, x)
		if t.Corrected && x.Max > 0 {
			j.CorrectedMinNs, j.CorrectedMaxNs = fp(x.CorrectedMin), fp(x.CorrectedMax)
		}
	}
	for _, q := range t.Quantiles {
		j.Quantiles = append(j.Quantiles, NewQuantileJSON(q))
	}
	if t.Hist != nil {
		j.Histogram = NewHistogramJSON(t.Hist)
	}
	j.Callers = callersToJSON(t.Callers)
	return j
}

// estimateToJSON fills in a target's mean and interval, method, and the
// raw mean and overhead when corrected.
func estimateToJSON(j *timeTargetJSON, t *timing.TargetResult) {
	e := t.Estimate
	j.MeanNs, j.LowNs, j.HighNs, j.RelHalfWidth = fp(e.Mean), fp(e.Low), fp(e.High), fp(e.RelHalfWidth)
	j.Method = e.Method
	if e.Dist != "" && e.Dist != e.Method {
		j.Method += "/" + e.Dist
	}
	if t.Corrected {
		raw, o := t.Raw, t.Overhead
		j.Corrected = true
		j.RawMeanNs, j.RawLowNs, j.RawHighNs = fp(raw.Mean), fp(raw.Low), fp(raw.High)
		j.OverheadNs, j.OverheadLow, j.OverheadHigh = fp(o.Mean), fp(o.Low), fp(o.High)
		j.OverheadKind = t.OverheadKind
	}
}

// exactToJSON fills in what the exact clock measured: sum, extremes, mean
// and log2 histogram.
func exactToJSON(j *timeTargetJSON, x *timing.ExactNs) {
	sum, mn, mx := x.Sum, x.Min, x.Max
	j.NsSum, j.NsMin, j.NsMax = &sum, &mn, &mx
	if x.Mean.Calls > 0 {
		j.NsMean, j.NsLow, j.NsHigh = fp(x.Mean.Mean), fp(x.Mean.Low), fp(x.Mean.High)
	}
	j.NsLog2Hist = trimHist(x.Hist)
}

// callersToJSON is the JSON of the first maxJSONCallers caller stacks (nil
// for none).
func callersToJSON(callers []timing.Caller) []callerJSON {
	var out []callerJSON
	for k, c := range callers {
		if k == maxJSONCallers {
			break
		}
		cj := callerJSON{Calls: c.Calls, Ticks: c.Ticks, Stack: []string{}}
		for _, f := range c.Frames {
			for _, in := range f.Inlined {
				cj.Stack = append(cj.Stack, in.Func)
			}
			name := f.Func
			if name == "" {
				name = fmt.Sprintf("%#x", f.Addr)
			}
			cj.Stack = append(cj.Stack, name)
		}
		out = append(out, cj)
	}
	return out
}

// WriteJSON writes v as one indented JSON document: every command's JSON
// output goes through it.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Write prints v with WriteJSON when asJSON, else with its text writer:
// the one switch of every command that offers --json.
func Write[T any](w io.Writer, asJSON bool, v T, text func(io.Writer, T) error) error {
	if asJSON {
		return WriteJSON(w, v)
	}
	return text(w, v)
}

// trimHist drops the empty buckets above the highest used one.
func trimHist(h []uint64) []uint64 {
	n := len(h)
	for n > 0 && h[n-1] == 0 {
		n--
	}
	return h[:n]
}

// WriteTimeJSONFile writes r as JSON to path, through safefile: a link
// at path or another user's file in a sticky directory is refused. The
// file is readable by its owner only (OutputPerm).
func WriteTimeJSONFile(path string, r *timing.Result) error {
	return WriteTimeJSONFileCost(path, r, nil)
}

// WriteTimeJSONFileCost is WriteTimeJSONFile with what the run cost
// tickprof itself (own_cost; nil: left out).
func WriteTimeJSONFileCost(path string, r *timing.Result, cost *selfcost.Cost) error {
	if err := safefile.WriteFile(path, OutputPerm, func(w io.Writer) error { return writeTimeJSON(w, r, cost) }); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// maxDurationS is the longest run a time JSON document may state: a
// time.Duration holds 292 years; a century is more than any run.
const maxDurationS = 100 * 365.25 * 86400

// validate checks every value ReadTimeJSON uses, like a flag: confidences
// strictly between 0 and 1 (estimate's range), times finite and not
// negative, each interval around its mean, a duration a time.Duration
// holds. The error names the value.
func (doc *timeJSON) validate() error {
	if doc.Confidence != 0 && !okConfidence(doc.Confidence) {
		return badField("confidence", doc.Confidence, "a level strictly between 0 and 1, such as 0.95")
	}
	if !(doc.DurationS >= 0 && doc.DurationS <= maxDurationS) {
		return badField("duration_s", doc.DurationS, "a number of seconds from 0 to a century")
	}
	if !(doc.ResolutionNs >= 0) {
		return badField("resolution_ns", doc.ResolutionNs, "a clock resolution of at least 0 ns")
	}
	for i := range doc.Targets {
		if err := doc.validateTarget(i); err != nil {
			return err
		}
	}
	return nil
}

// badField says that the field what holds v where want was expected.
func badField(what string, v any, want string) error {
	return fmt.Errorf("%s = %v: want %s", what, v, want)
}

// okConfidence reports whether c is a confidence level tickprof accepts.
func okConfidence(c float64) bool {
	return c >= estimate.MinConfidence && c <= estimate.MaxConfidence
}

// validateTarget checks target i's confidence, resolution, wall time,
// intervals and quantiles.
func (doc *timeJSON) validateTarget(i int) error {
	j := doc.Targets[i]
	name := fmt.Sprintf("targets[%d] (%s)", i, j.Target)
	if j.Confidence != 0 && !okConfidence(j.Confidence) {
		return badField(name+".confidence", j.Confidence, "a level strictly between 0 and 1, such as 0.95")
	}
	if j.Confidence == 0 && doc.Confidence == 0 && j.MeanNs != nil {
		return badField(name+".confidence", 0, "the level of its interval (or a document-level confidence)")
	}
	if !(j.ResolutionNs >= 0) || !(j.WallNs >= 0) {
		return badField(name, "a negative resolution_ns or wall_ns", "values of at least 0")
	}
	if err := validateIntervals(name, &j); err != nil {
		return err
	}
	for k, q := range j.Quantiles {
		if err := validateQuantile(fmt.Sprintf("%s.quantiles[%d]", name, k), q); err != nil {
			return err
		}
	}
	return nil
}

// validateIntervals checks that each of a target's intervals given whole
// holds its mean, and that only an overhead reaches below 0.
func validateIntervals(name string, j *timeTargetJSON) error {
	for _, iv := range []struct {
		what            string
		mean, low, high *float64
	}{
		{"mean_ns, low_ns, high_ns", j.MeanNs, j.LowNs, j.HighNs},
		{"raw_mean_ns, raw_low_ns, raw_high_ns", j.RawMeanNs, j.RawLowNs, j.RawHighNs},
		{"overhead_ns, overhead_low_ns, overhead_high_ns", j.OverheadNs, j.OverheadLow, j.OverheadHigh},
		{"ns_mean, ns_low, ns_high", j.NsMean, j.NsLow, j.NsHigh},
	} {
		if iv.mean == nil || iv.low == nil || iv.high == nil {
			continue
		}
		m, lo, hi := *iv.mean, *iv.low, *iv.high
		// An overhead's prediction interval may reach below 0; a time's not.
		if !(lo <= m && m <= hi) || (lo < 0 && iv.what[0] != 'o') {
			return badField(name+" "+iv.what, fmt.Sprintf("%g, %g, %g", m, lo, hi), "times of at least 0 ns with low <= mean <= high")
		}
	}
	return nil
}

// validateQuantile checks a quantile's level, confidence and interval; qn
// names it in the error.
func validateQuantile(qn string, q QuantileJSON) error {
	if !(q.Quantile > 0 && q.Quantile < 1) {
		return badField(qn+".quantile", q.Quantile, "a level strictly between 0 and 1, such as 0.99")
	}
	if !okConfidence(q.Confidence) {
		return badField(qn+".confidence", q.Confidence, "a level strictly between 0 and 1, such as 0.95")
	}
	lo, hi := q.ValueNs, q.ValueNs
	if q.LowNs != nil {
		lo = *q.LowNs
	}
	if q.HighNs != nil {
		hi = *q.HighNs
	}
	if !(lo >= 0 && lo <= q.ValueNs && q.ValueNs <= hi && !math.IsInf(hi, 0)) {
		return badField(qn, fmt.Sprintf("value %g in [%g, %g]", q.ValueNs, lo, hi), "times of at least 0 ns with low <= value <= high")
	}
	return nil
}

// ReadTimeJSON reads what WriteTimeJSON wrote, for tools that work from a
// finished run (plan --from, the demo). Each target's Estimate holds the
// reported (possibly corrected) mean and interval, Raw the measured one
// (equal to Estimate when no correction was applied); quantiles and the
// log-geometric histogram are read back, callers and the log2 histogram are
// not. Every value used is checked (see validate): a confidence of 7 or a
// negative time is an error naming it.
func ReadTimeJSON(r io.Reader) (*timing.Result, error) {
	var doc timeJSON
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a tickprof time JSON document: %w", err)
	}
	if doc.Targets == nil {
		return nil, fmt.Errorf("no \"targets\" in the document: give the file `tickprof time --json` wrote")
	}
	if err := doc.validate(); err != nil {
		return nil, err
	}
	run := &timing.Result{
		Clock: doc.Clock, Resolution: doc.ResolutionNs, Confidence: doc.Confidence, Start: doc.Start,
		Duration: time.Duration(doc.DurationS * 1e9), PID: doc.PID, Command: doc.Command,
		StopReason: timing.StopReason(doc.StopReason), Validate: doc.Validate, RingDrops: doc.RingDrops, StackFails: doc.StackFails,
		Correction: timing.CorrectionMode(doc.Correction),
	}
	for _, j := range doc.Targets {
		t, err := targetFromJSON(&j, doc.Confidence)
		if err != nil {
			return nil, err
		}
		run.Targets = append(run.Targets, t)
	}
	return run, nil
}

// targetFromJSON reads one target back; docConf is the document's
// confidence, for a target that gives none of its own.
func targetFromJSON(j *timeTargetJSON, docConf float64) (timing.TargetResult, error) {
	conf := j.Confidence
	if conf == 0 {
		conf = docConf
	}
	t := timing.TargetResult{
		Name: j.Target, Kind: timing.TargetKind(j.Kind), Binary: j.Binary, Calls: j.Calls, Ticks: j.Ticks, Err: j.Error,
		Corrected: j.Corrected, OverheadKind: j.OverheadKind, InlinedInto: j.InlinedInto,
		Orphans: j.Orphans, Crossings: j.Crossings, Dropped: j.Dropped, Covered: j.Covered, Notes: j.Notes,
		ClockCheck: checkFromJSON(j.ClockCheck),
	}
	if j.MeanNs == nil || j.LowNs == nil || j.HighNs == nil {
		if t.Err == "" {
			t.Err = "no estimate"
		}
	} else {
		estimateFromJSON(&t, j, conf)
	}
	if j.NsSum != nil && j.NsMean != nil && j.NsLow != nil && j.NsHigh != nil {
		x := &timing.ExactNs{Sum: *j.NsSum, Mean: estimate.Result{Mean: *j.NsMean, Low: *j.NsLow, High: *j.NsHigh, Confidence: conf, Calls: j.Calls}}
		if j.NsMin != nil && j.NsMax != nil {
			x.Min, x.Max = *j.NsMin, *j.NsMax
		}
		t.Exact = x
	}
	for _, q := range j.Quantiles {
		t.Quantiles = append(t.Quantiles, q.ToQuantile())
	}
	if j.Histogram != nil {
		h, err := j.Histogram.Hist()
		if err != nil {
			return t, fmt.Errorf("target %s: %w", j.Target, err)
		}
		t.Hist = h
	}
	return t, nil
}

// estimateFromJSON reads a target's estimate back, with its raw mean and
// overhead when the document has them.
func estimateFromJSON(t *timing.TargetResult, j *timeTargetJSON, conf float64) {
	method, dist, _ := strings.Cut(j.Method, "/")
	t.Estimate = estimate.Result{Mean: *j.MeanNs, Low: *j.LowNs, High: *j.HighNs,
		Confidence: conf, Method: method, Dist: dist, Calls: j.Calls}
	t.Raw = t.Estimate
	if j.Corrected && j.RawMeanNs != nil && j.RawLowNs != nil && j.RawHighNs != nil {
		t.Raw.Mean, t.Raw.Low, t.Raw.High = *j.RawMeanNs, *j.RawLowNs, *j.RawHighNs
		t.Raw.Method = strings.TrimSuffix(method, "-minus-overhead")
	}
	if j.OverheadNs != nil && j.OverheadLow != nil && j.OverheadHigh != nil {
		t.Overhead = estimate.Result{Mean: *j.OverheadNs, Low: *j.OverheadLow, High: *j.OverheadHigh, Confidence: conf}
	}
}
