// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/units"
)

// Quantiles: the table cells, terminal histogram, JSON and pprof labels of
// the quantiles `time` reports with the exact clock (estimate.Quantile,
// from a histogram.Hist).

// QuantileName is a quantile level as a column name: 0.99 -> "p99",
// 0.999 -> "p99.9".
func QuantileName(p float64) string {
	return "p" + strconv.FormatFloat(100*p, 'f', -1, 64)
}

// QNs formats ns with three significant digits and a unit ("inf" for
// an unbounded interval end).
func QNs(ns float64) string {
	if math.IsInf(ns, 1) {
		return "inf"
	}
	return units.Ns(ns)
}

// QuantileCell formats a quantile for a table: "1.23ms [1.20ms, 1.27ms]",
// or, with too few calls for an interval at its confidence, what is known
// and what is needed: ">= 1.1ms (too few calls: 2995 needed)".
func QuantileCell(q estimate.Quantile) string {
	if q.TooFew {
		need := "too few calls: " + strconv.FormatUint(q.Ranks.MinCalls, 10) + " needed"
		if q.Low > 0 {
			return ">= " + QNs(q.Low) + " (" + need + ")"
		}
		return "(" + need + ")"
	}
	return QNs(q.Value) + " [" + QNs(q.Low) + ", " + QNs(q.High) + "]"
}

// QuantileJSON is a quantile in JSON documents.
type QuantileJSON struct {
	// Quantile is the level (0.99); Name its column name ("p99").
	Quantile float64 `json:"quantile"`
	Name     string  `json:"name"`
	// ValueNs is the estimate; LowNs and HighNs its interval (HighNs is
	// absent with too_few, LowNs then a one-sided bound when present).
	ValueNs float64  `json:"value_ns"`
	LowNs   *float64 `json:"low_ns,omitempty"`
	HighNs  *float64 `json:"high_ns,omitempty"`
	// ValueLowNs and ValueHighNs bound the order statistic behind value_ns
	// (its histogram bucket, or the refined bin it lies in).
	ValueLowNs  float64 `json:"value_low_ns"`
	ValueHighNs float64 `json:"value_high_ns"`
	Confidence  float64 `json:"confidence"`
	// Coverage is the exact binomial coverage of the rank interval.
	Coverage float64 `json:"coverage,omitempty"`
	Calls    uint64  `json:"calls"`
	// TooFew: no two-sided interval at this confidence; MinCalls are
	// needed.
	TooFew   bool   `json:"too_few,omitempty"`
	MinCalls uint64 `json:"min_calls"`
	RankLow  uint64 `json:"rank_low,omitempty"`
	RankHigh uint64 `json:"rank_high,omitempty"`
	Method   string `json:"method"`
	// Corrected says the per-call probe overhead, in [OverheadLowNs,
	// OverheadHighNs], was subtracted as an interval shift
	// (estimate.CorrectQuantile).
	Corrected      bool    `json:"corrected,omitempty"`
	OverheadLowNs  float64 `json:"overhead_low_ns,omitempty"`
	OverheadHighNs float64 `json:"overhead_high_ns,omitempty"`
}

// NewQuantileJSON converts a quantile for JSON.
func NewQuantileJSON(q estimate.Quantile) QuantileJSON {
	j := QuantileJSON{Quantile: q.P, Name: QuantileName(q.P), ValueNs: q.Value, ValueLowNs: q.ValueLow, ValueHighNs: q.ValueHigh,
		Confidence: q.Confidence, Coverage: q.Coverage, Calls: q.Calls, TooFew: q.TooFew, MinCalls: q.Ranks.MinCalls,
		RankLow: q.Ranks.Low, RankHigh: q.Ranks.High, Method: q.Ranks.Method,
		Corrected: q.Corrected, OverheadLowNs: q.OverheadLow, OverheadHighNs: q.OverheadHigh}
	if q.Low > 0 || !q.TooFew {
		j.LowNs = fp(q.Low)
	}
	if !q.TooFew {
		j.HighNs = fp(q.High)
	}
	return j
}

// ToQuantile converts back.
func (j QuantileJSON) ToQuantile() estimate.Quantile {
	q := estimate.Quantile{P: j.Quantile, Value: j.ValueNs, ValueLow: j.ValueLowNs, ValueHigh: j.ValueHighNs,
		Confidence: j.Confidence, Coverage: j.Coverage, Calls: j.Calls, TooFew: j.TooFew, Bucketed: true, High: math.Inf(1),
		Corrected: j.Corrected, OverheadLow: j.OverheadLowNs, OverheadHigh: j.OverheadHighNs}
	q.Ranks = estimate.Ranks{Low: j.RankLow, High: j.RankHigh, Coverage: j.Coverage, TooFew: j.TooFew, MinCalls: j.MinCalls, Method: j.Method}
	if j.LowNs != nil {
		q.Low = *j.LowNs
	}
	if j.HighNs != nil {
		q.High = *j.HighNs
	}
	return q
}

// HistogramJSON is a log-geometric histogram in JSON: its layout, the exact
// minimum and maximum, and the non-empty buckets as [low_ns, high_ns,
// count] (high exclusive; the overflow bucket's high is 0).
type HistogramJSON struct {
	Layout  string      `json:"layout"`
	MinNs   uint64      `json:"min_ns"`
	MaxNs   uint64      `json:"max_ns"`
	Buckets [][3]uint64 `json:"buckets"`
}

// histLayout names the bucket layout (histogram's constants).
var histLayout = fmt.Sprintf("log-geometric sub_buckets=%d exact=%d mantissa_bits=%d max_log2=%d", histogram.Sub, histogram.Exact, histogram.MantBits, histogram.MaxLog2)

// NewHistogramJSON converts a histogram for JSON.
func NewHistogramJSON(h *histogram.Hist) *HistogramJSON {
	j := &HistogramJSON{Layout: histLayout, MinNs: h.Min, MaxNs: h.Max, Buckets: [][3]uint64{}}
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		lo, hi := histogram.Bounds(i)
		if i == histogram.Buckets-1 {
			hi = 0
		}
		j.Buckets = append(j.Buckets, [3]uint64{lo, hi, c})
	}
	return j
}

// Hist converts back; an error when the layout differs or a bucket is not
// one of the layout's.
func (j *HistogramJSON) Hist() (*histogram.Hist, error) {
	if j.Layout != histLayout {
		return nil, fmt.Errorf("histogram layout %q, this build reads %q", j.Layout, histLayout)
	}
	h := &histogram.Hist{Min: j.MinNs, Max: j.MaxNs}
	for _, b := range j.Buckets {
		i := histogram.Index(b[0])
		if lo, _ := histogram.Bounds(i); lo != b[0] {
			return nil, fmt.Errorf("histogram bucket [%d, %d) is not a bucket of the layout", b[0], b[1])
		}
		h.Counts[i] += b[2]
	}
	return h, nil
}

// HistogramLabels adds the histogram h to pprof numeric labels, for a
// profile (or an agent's push) that carries a target's durations and not
// only its quantiles: hist_low_ns lists the lower bound (ns) of every
// non-empty bucket, in increasing order, hist_calls the calls in each, and
// min_ns and max_ns the exact extremes. HistogramFromLabels reads them
// back.
func HistogramLabels(h *histogram.Hist, labels map[string][]int64) {
	if h.Total() == 0 {
		return
	}
	var lows, calls []int64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		lo, _ := histogram.Bounds(i)
		lows, calls = append(lows, int64(lo)), append(calls, int64(c))
	}
	labels["hist_low_ns"], labels["hist_calls"] = lows, calls
	labels["min_ns"], labels["max_ns"] = []int64{int64(h.Min)}, []int64{int64(h.Max)}
}

// HistogramFromLabels reads a histogram written by HistogramLabels (nil
// without one); an error when the lists differ in length or a bound is
// not a bucket of this build's layout.
func HistogramFromLabels(labels map[string][]int64) (*histogram.Hist, error) {
	lows, calls := labels["hist_low_ns"], labels["hist_calls"]
	if lows == nil && calls == nil {
		return nil, nil
	}
	if len(lows) != len(calls) || len(labels["min_ns"]) != 1 || len(labels["max_ns"]) != 1 {
		return nil, fmt.Errorf("histogram labels: %d bucket bounds, %d counts, and min_ns and max_ns once each wanted", len(lows), len(calls))
	}
	h := &histogram.Hist{Min: uint64(labels["min_ns"][0]), Max: uint64(labels["max_ns"][0])}
	for k, lo := range lows {
		if lo < 0 || calls[k] < 0 {
			return nil, fmt.Errorf("histogram labels: bucket %d ns with %d calls", lo, calls[k])
		}
		i := histogram.Index(uint64(lo))
		if b, _ := histogram.Bounds(i); b != uint64(lo) {
			return nil, fmt.Errorf("histogram labels: %d ns is not a bucket bound of the layout (%s)", lo, histLayout)
		}
		h.Counts[i] += uint64(calls[k])
	}
	if h.Total() > 0 && h.Min > h.Max {
		return nil, fmt.Errorf("histogram labels: min_ns %d above max_ns %d", h.Min, h.Max)
	}
	return h, nil
}

// QuantileLabels are a target's quantiles as pprof numeric labels (ns):
// p99_ns, p99_low_ns, p99_high_ns, the bucket of the estimate's order
// statistic as p99_at_low_ns and p99_at_high_ns (diff needs it), and
// p99_min_calls when there were too few calls for an interval (p99_low_ns
// is then a one-sided bound, and there is no p99_high_ns), and, when the
// quantile was corrected for the probe overhead, the overhead interval
// subtracted as p99_overhead_low_ns and p99_overhead_high_ns.
func QuantileLabels(qs []estimate.Quantile, labels map[string][]int64) {
	for _, q := range qs {
		k := QuantileName(q.P)
		labels[k+"_ns"] = []int64{int64(math.Round(q.Value))}
		if q.ValueLow != 0 || q.ValueHigh != 0 {
			labels[k+"_at_low_ns"] = []int64{int64(math.Floor(q.ValueLow))}
			labels[k+"_at_high_ns"] = []int64{int64(math.Ceil(q.ValueHigh))}
		}
		if q.Low > 0 || !q.TooFew {
			labels[k+"_low_ns"] = []int64{int64(math.Floor(q.Low))}
		}
		if q.TooFew {
			labels[k+"_min_calls"] = []int64{int64(q.Ranks.MinCalls)}
		} else {
			labels[k+"_high_ns"] = []int64{int64(math.Ceil(q.High))}
		}
		if q.Corrected {
			labels[k+"_overhead_low_ns"] = []int64{int64(math.Floor(q.OverheadLow))}
			labels[k+"_overhead_high_ns"] = []int64{int64(math.Ceil(q.OverheadHigh))}
		}
	}
}

// QuantilesFromLabels reads back the quantiles QuantileLabels wrote, in
// increasing level, with confidence conf and calls n.
func QuantilesFromLabels(labels map[string][]int64, conf float64, n uint64) []estimate.Quantile {
	var qs []estimate.Quantile
	for k, v := range labels {
		name, ok := strings.CutSuffix(k, "_ns")
		if !ok || !strings.HasPrefix(name, "p") || strings.Contains(name, "_") || len(v) != 1 {
			continue
		}
		pct, err := strconv.ParseFloat(name[1:], 64)
		if err != nil || !(pct > 0 && pct < 100) {
			continue
		}
		q := estimate.Quantile{P: math.Round(pct*1e10) / 1e12, Value: float64(v[0]), Confidence: conf, Calls: n, High: math.Inf(1), Bucketed: true}
		q.Ranks.Method = "order-statistics"
		if conf > 0 && conf < 1 {
			q.Ranks.MinCalls = estimate.MinCallsForQuantile(q.P, conf)
		}
		if lo, ok := labels[name+"_low_ns"]; ok && len(lo) == 1 {
			q.Low = float64(lo[0])
		}
		if a, ok := labels[name+"_at_low_ns"]; ok && len(a) == 1 {
			q.ValueLow = float64(a[0])
		}
		if b, ok := labels[name+"_at_high_ns"]; ok && len(b) == 1 {
			q.ValueHigh = float64(b[0])
		}
		ol, okl := labels[name+"_overhead_low_ns"]
		oh, okh := labels[name+"_overhead_high_ns"]
		if okl && okh && len(ol) == 1 && len(oh) == 1 {
			q.Corrected, q.OverheadLow, q.OverheadHigh = true, float64(ol[0]), float64(oh[0])
		}
		if hi, ok := labels[name+"_high_ns"]; ok && len(hi) == 1 {
			q.High = float64(hi[0])
		} else {
			q.TooFew = true
			q.Ranks.TooFew = true
			if mc, ok := labels[name+"_min_calls"]; ok && len(mc) == 1 {
				q.Ranks.MinCalls = uint64(mc[0])
			}
		}
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].P < qs[j].P })
	return qs
}

// QuantileChange is one quantile's change between two runs.
type QuantileChange struct {
	// Name is the quantile's column name ("p99").
	Name string `json:"name"`
	// Base and New are the two runs' quantiles.
	Base QuantileJSON `json:"base"`
	New  QuantileJSON `json:"new"`
	// Diff is New - Base with its interval (estimate.QuantileDiff); Err
	// says why there is none.
	Diff estimate.Difference `json:"change"`
	Err  string              `json:"error,omitempty"`
}

// QuantileChanges pairs the quantiles of two runs by level and computes
// each change with its interval.
func QuantileChanges(base, new []estimate.Quantile) []QuantileChange {
	var out []QuantileChange
	for _, b := range base {
		for _, n := range new {
			if n.P != b.P {
				continue
			}
			c := QuantileChange{Name: QuantileName(b.P), Base: NewQuantileJSON(b), New: NewQuantileJSON(n)}
			d, err := estimate.QuantileDiff(b, n)
			if err != nil {
				c.Err = err.Error()
			} else {
				c.Diff = d
			}
			out = append(out, c)
		}
	}
	return out
}

// String formats a change: "p99 +120µs [+40µs, +210µs] (1.2ms -> 1.32ms)
// significant", or "no significant change" when the interval holds zero.
func (c QuantileChange) String() string {
	if c.Err != "" {
		return fmt.Sprintf("%s: no interval (%s)", c.Name, c.Err)
	}
	d := c.Diff
	s := fmt.Sprintf("%s %s [%s, %s] (%s -> %s)", c.Name, signed(d.Diff), signed(d.Low), signed(d.High), QNs(c.Base.ValueNs), QNs(c.New.ValueNs))
	if d.Significant {
		s += " significant"
	} else {
		s += " no significant change"
	}
	return s
}

func signed(ns float64) string {
	if ns >= 0 {
		return "+" + QNs(ns)
	}
	return "-" + QNs(-ns)
}
