// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/units"
)

// TimeTable is the interval table read back from a `tickprof time` profile:
// one row per target with its mean time per call and interval, taken from
// the numeric labels mean_ns, low_ns and high_ns EncodeTime writes.
type TimeTable struct {
	// Confidence is the level of every interval, from the profile's
	// comments (0 when they do not say).
	Confidence float64 `json:"confidence"`
	// Duration is the wall-clock length of the run in ns.
	Duration float64 `json:"duration_ns"`
	// Rows are the targets, by estimated total time.
	Rows []TimeRow `json:"targets"`
}

// TimeRow is one timed target.
type TimeRow struct {
	Target string  `json:"target"`
	Calls  uint64  `json:"calls"`
	Ticks  uint64  `json:"ticks"`
	Wall   float64 `json:"wall_ns"` // estimated total time in the target
	// HasEstimate is false for a target without calls (no interval).
	HasEstimate bool    `json:"has_estimate"`
	Mean        float64 `json:"mean_ns"`
	Low         float64 `json:"low_ns"`
	High        float64 `json:"high_ns"`
	// Quantiles, MinNs and MaxNs come from a run with the exact clock.
	Quantiles []QuantileJSON `json:"quantiles,omitempty"`
	MinNs     *int64         `json:"min_ns,omitempty"`
	MaxNs     *int64         `json:"max_ns,omitempty"`

	qs []estimate.Quantile
	// Method is the interval's model when report computed it from the
	// counts of a merge-friendly profile ("" when read from labels).
	Method string `json:"method,omitempty"`
}

// IsTimeProfile reports whether p was written by `tickprof time`: sample
// types calls/count, ticks/count, wall/nanoseconds.
func IsTimeProfile(p *profile.Profile) bool {
	if len(p.SampleType) != 3 && !isTimeWindowTypes(p.SampleType) {
		return false
	}
	st := p.SampleType
	return st[0].Type == "calls" && st[0].Unit == "count" && st[1].Type == "ticks" && st[2].Type == "wall" && st[2].Unit == "nanoseconds"
}

var confComment = regexp.MustCompile(`^confidence ([0-9.]+)% for every interval`)

// TimeReport reads the interval table of a `tickprof time` profile.
func TimeReport(p *profile.Profile) (*TimeTable, error) {
	if !IsTimeProfile(p) {
		return nil, fmt.Errorf("not a tickprof time profile (sample types are not calls, ticks, wall)")
	}
	t := &TimeTable{Duration: float64(p.DurationNanos), Confidence: commentConfidence(p.Comments)}
	if err := negativeValues(p); err != nil {
		return nil, err
	}
	rows, order, err := timeRows(p, t.Confidence)
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, ErrNoSamples
	}
	for _, n := range order {
		r := rows[n]
		for i := range r.qs {
			r.qs[i].Calls = r.Calls
			r.Quantiles = append(r.Quantiles, NewQuantileJSON(r.qs[i]))
		}
		t.Rows = append(t.Rows, *r)
	}
	if err := recomputeTimeRows(p, t); err != nil {
		return nil, err
	}
	sort.SliceStable(t.Rows, func(i, j int) bool { return t.Rows[i].Wall > t.Rows[j].Wall })
	return t, nil
}

// commentConfidence is the confidence the last valid confidence comment
// states (0 if none does).
func commentConfidence(comments []string) float64 {
	var conf float64
	for _, c := range comments {
		if m := confComment.FindStringSubmatch(c); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil && v/100 >= estimate.MinConfidence && v/100 <= estimate.MaxConfidence {
				conf = v / 100
			}
		}
	}
	return conf
}

// timeRows sums p's samples into a row per target, returned with the
// targets in the order they first appear; conf is the quantiles'
// confidence.
func timeRows(p *profile.Profile, conf float64) (map[string]*TimeRow, []string, error) {
	rows := map[string]*TimeRow{}
	var order []string
	for _, s := range p.Sample {
		name := sampleTarget(s)
		if name == "" {
			continue
		}
		r := rows[name]
		if r == nil {
			r = &TimeRow{Target: name}
			rows[name] = r
			order = append(order, name)
		}
		if err := r.add(s, conf); err != nil {
			return nil, nil, err
		}
	}
	return rows, order, nil
}

// add adds a sample's counts to the row, and takes its labels: the
// extremes and quantiles from the first sample that has them, the mean
// and interval from each.
func (r *TimeRow) add(s *profile.Sample, conf float64) error {
	c, k := nonNeg(s.Value[0]), nonNeg(s.Value[1])
	if r.Calls+c < r.Calls || r.Ticks+k < r.Ticks || r.Calls+c > math.MaxInt64 || r.Ticks+k > math.MaxInt64 {
		return fmt.Errorf("target %s: %w", r.Target, errOverflow)
	}
	r.Calls += c
	r.Ticks += k
	r.Wall += float64(nonNeg(s.Value[2]))
	if r.qs == nil && r.MinNs == nil {
		if mn, mx := s.NumLabel["min_ns"], s.NumLabel["max_ns"]; len(mn) == 1 && len(mx) == 1 {
			if mn[0] < 0 || mn[0] > mx[0] {
				return fmt.Errorf("target %s: labels min_ns %d, max_ns %d are not a range of times (want 0 <= min <= max): the profile was not written by tickprof time as is", r.Target, mn[0], mx[0])
			}
			r.MinNs, r.MaxNs = &mn[0], &mx[0]
		}
		r.qs = QuantilesFromLabels(s.NumLabel, conf, 0)
		if err := checkQuantiles(r.Target, r.qs); err != nil {
			return err
		}
	}
	mean, lo, hi := s.NumLabel["mean_ns"], s.NumLabel["low_ns"], s.NumLabel["high_ns"]
	if len(mean) > 0 && len(lo) > 0 && len(hi) > 0 {
		if lo[0] < 0 || !(lo[0] <= mean[0] && mean[0] <= hi[0]) {
			return fmt.Errorf("target %s: labels mean_ns %d, low_ns %d, high_ns %d are not an interval of times (want 0 <= low <= mean <= high): the profile was not written by tickprof time as is", r.Target, mean[0], lo[0], hi[0])
		}
		r.HasEstimate = true
		r.Mean, r.Low, r.High = float64(mean[0]), float64(lo[0]), float64(hi[0])
	}
	return nil
}

// checkQuantiles refuses quantiles read from labels whose interval is
// not one (low <= value <= high, all times non-negative).
func checkQuantiles(target string, qs []estimate.Quantile) error {
	for _, q := range qs {
		if q.Value < 0 || q.Low < 0 || q.Low > q.Value || (!q.TooFew && q.Value > q.High) {
			return fmt.Errorf("target %s: the p%g interval %g [%g, %g] ns is not an interval of times (want 0 <= low <= value <= high): the profile was not written by tickprof time as is",
				target, 100*q.P, q.Value, q.Low, q.High)
		}
	}
	return nil
}

// WriteText writes the time table.
func (t *TimeTable) WriteText(w io.Writer, top int) error {
	conf := "unstated confidence"
	if t.Confidence > 0 {
		conf = fmt.Sprintf("%g%% confidence", 100*t.Confidence)
	}
	fmt.Fprintf(w, "tickprof time profile: %d targets", len(t.Rows))
	if t.Duration > 0 {
		fmt.Fprintf(w, " over %s", units.Ns(t.Duration))
	}
	fmt.Fprintf(w, "; intervals at %s\n", conf)
	fmt.Fprintf(w, "%-34s %12s %-34s  %s\n", "mean per call [interval]", "calls", "total = calls x mean [interval]", "target")
	rows := t.Rows
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	for _, r := range rows {
		est, total := "no calls: no estimate", "-"
		if r.HasEstimate {
			n := float64(r.Calls)
			est = fmt.Sprintf("%s [%s, %s]", units.Ns(r.Mean), units.Ns(r.Low), units.Ns(r.High))
			total = fmt.Sprintf("%s [%s, %s]", units.Ns(n*r.Mean), units.Ns(n*r.Low), units.Ns(n*r.High))
		}
		fmt.Fprintf(w, "%-34s %12d %-34s  %s\n", est, r.Calls, total, r.Target)
	}
	if len(rows) < len(t.Rows) {
		fmt.Fprintf(w, "... %d more targets (--top 0 shows all)\n", len(t.Rows)-len(rows))
	}
	for _, r := range rows {
		if len(r.qs) == 0 && r.MinNs == nil {
			continue
		}
		var cells []string
		if r.MinNs != nil {
			cells = append(cells, "min "+units.Ns(float64(*r.MinNs)), "max "+units.Ns(float64(*r.MaxNs)))
		}
		for _, q := range r.qs {
			cells = append(cells, QuantileName(q.P)+" "+QuantileCell(q))
		}
		fmt.Fprintf(w, "%s: %s\n", r.Target, strings.Join(cells, "; "))
	}
	if len(t.Rows) > 0 && t.Rows[0].Method != "" {
		fmt.Fprintln(w, "intervals computed from the summed counts of mergeable windows (the windows as batches when there are two or more)")
	}
	return nil
}
