// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/loader"
)

// DefaultQuantiles are the quantile levels `time` reports with the exact
// clock when none are asked for.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99, 0.999}

// quantiles reads target i's histogram of exact durations and estimates
// the configured quantiles with their intervals.
func (s *Session) quantiles(i int) (*histogram.Hist, []estimate.Quantile, error) {
	h, err := s.ls.Histogram(i)
	if err != nil {
		return nil, nil, err
	}
	if h == nil {
		return nil, nil, fmt.Errorf("no duration histogram: quantiles need the ns clock")
	}
	if h.Total() == 0 {
		return h, nil, nil
	}
	qs := make([]estimate.Quantile, 0, len(s.cfg.Quantiles))
	for _, p := range s.cfg.Quantiles {
		q, err := h.Quantile(p, s.cfg.Estimate)
		if err != nil {
			return h, nil, err
		}
		qs = append(qs, q)
	}
	return h, qs, nil
}

// quantileRule is a target's stop rule on a quantile: the rule, the
// calls its interval needs, planned from the histogram at the rule's last
// look (0: no plan), the quantile at that look, and whether the run was
// told that the goal is finer than the buckets allow.
type quantileRule struct {
	stop   estimate.QuantileStop
	plan   uint64
	last   *estimate.Quantile
	warned bool
}

// quantilesReached is the precision stop rule on a quantile
// (Config.PrecisionQuantile) after poll p: every target's QuantileStop says
// stop. A target without calls, or whose histogram cannot be read, has not
// reached it.
func (s *Session) quantilesReached(p loader.Poll) bool {
	ts := s.ls.Targets()
	if s.qrules == nil {
		s.qrules = make([]quantileRule, len(ts))
		for i := range s.qrules {
			s.qrules[i].stop.Rel = s.cfg.Precision
		}
	}
	all := len(ts) > 0
	for i := range ts {
		// Read the histogram only when the rule will look.
		if i >= len(p.Totals) || !s.qrules[i].stop.Due(p.Totals[i].Calls) {
			all = false
			continue
		}
		h, err := s.ls.Histogram(i)
		if err != nil || h == nil || h.Total() == 0 {
			all = false
			continue
		}
		// Every target's rule takes its look, whatever the others say.
		if !s.qrules[i].look(h, s.cfg, ts[i].Name) {
			all = false
		}
	}
	return all
}

// look checks the rule on h's quantile and plans from h; it says whether
// the rule stops, and warns once when the buckets alone are wider than the
// goal at this duration (the rule cannot stop then).
func (r *quantileRule) look(h *histogram.Hist, cfg Config, name string) bool {
	q, err := h.Quantile(cfg.PrecisionQuantile, cfg.Estimate)
	if err != nil {
		return false
	}
	stop := r.stop.Check(q)
	r.last, r.plan = &q, 0
	if pl, err := h.PlanQuantile(cfg.PrecisionQuantile, cfg.Precision, cfg.Estimate); err == nil {
		r.plan = pl.Calls
	}
	if f := histogram.Width(q.Value) / (2 * q.Value); f >= cfg.Precision && !r.warned {
		r.warned = true
		cfg.warn("%s: %s near %.0f ns cannot reach ±%.3g%%: the histogram's buckets alone take ±%.3g%% there", name, fmtQuantile(cfg.PrecisionQuantile), q.Value, 100*cfg.Precision, 100*f)
	}
	return stop
}

// fmtQuantile names a level as a column does ("p99.9").
func fmtQuantile(p float64) string { return "p" + strconv.FormatFloat(100*p, 'f', -1, 64) }

// quantileRemaining forecasts the time target i still needs before its
// quantile stop rule stops the run (-1: unknown, before the rule has
// planned from a histogram with enough calls beyond the quantile): the
// calls to the rule's stop (QuantileStop.CallsToStop, on the plan from
// the histogram at its last look) at the call rate so far, and at least
// until the next poll.
func (s *Session) quantileRemaining(i int, calls uint64, elapsed time.Duration) time.Duration {
	if i >= len(s.qrules) || s.qrules[i].plan == 0 || calls == 0 || elapsed <= 0 {
		return -1
	}
	more := float64(s.qrules[i].stop.CallsToStop(calls, s.qrules[i].plan) - calls)
	secs := math.Min(math.Max(more*elapsed.Seconds()/float64(calls), s.cfg.Interval.Seconds()), 1e7)
	return time.Duration(secs * float64(time.Second))
}

// correctQuantiles shifts t's quantiles by the per-call probe overhead o
// subtracted from its mean (estimate.CorrectQuantile), keeping the
// measured ones in RawQuantiles; on an error they stay as measured.
func correctQuantiles(t *TargetResult, o estimate.Result) {
	if len(t.Quantiles) == 0 {
		return
	}
	cs := make([]estimate.Quantile, 0, len(t.Quantiles))
	for _, q := range t.Quantiles {
		c, err := correctQuantile(t, q, o)
		if err != nil {
			return
		}
		cs = append(cs, c)
	}
	t.RawQuantiles, t.Quantiles = t.Quantiles, cs
}

// correctQuantile corrects one quantile of t: by the distribution of the
// overheads its echoes measured (estimate.CorrectQuantileByDist), or, without
// echoes, by shifting its interval by o's (estimate.CorrectQuantile).
func correctQuantile(t *TargetResult, q estimate.Quantile, o estimate.Result) (estimate.Quantile, error) {
	e := t.Echo
	if e == nil || o.Method != "echo" || e.Hist == nil || t.Hist == nil {
		return estimate.CorrectQuantile(q, o)
	}
	conf := q.Confidence
	// The level asked for keeps its refined interval; the others come
	// from the buckets.
	dq := func(p float64) (estimate.Quantile, error) {
		if p == q.P {
			return q, nil
		}
		return t.Hist.Quantile(p, estimate.Options{Confidence: conf})
	}
	gbar := e.Sums.G / math.Max(1, e.Sums.N)
	k := e.Model.Slope(e.BodyShare) / e.Model.B
	od := estimate.OverheadDist{Hist: scaledHist{e.Hist, e.Model.A, k}, N: uint64(e.Sums.N),
		Error: estimate.Z(conf) * e.Model.Spread(gbar)}
	for _, m := range e.BatchMedians {
		od.BatchMedians = append(od.BatchMedians, math.Max(0, e.Model.A+k*(m-e.Model.A)))
	}
	bound := estimate.HistogramBound(t.Hist, float64(t.Hist.Min), float64(t.Hist.Max), estimate.Options{Confidence: conf})
	return estimate.CorrectQuantileBounded(q.P, dq, bound, od, o.Mean, conf)
}

// refine plans the refined buckets around the quantiles asked for
// (loader.Session.Refine); a failure is warned once and ends refining (the
// quantiles are then bucket-limited from there on, still sound).
func (s *Session) refine() {
	if s.refineOff || len(s.cfg.Quantiles) == 0 {
		return
	}
	levels := s.cfg.Quantiles
	if q := s.cfg.PrecisionQuantile; q > 0 && !slices.Contains(levels, q) {
		levels = append(slices.Clone(levels), q)
	}
	if err := s.ls.Refine(histogram.Refiner{Levels: levels, Estimate: s.cfg.Estimate}); err != nil {
		s.refineOff = true
		s.cfg.warn("refining the quantiles' buckets failed, their intervals stay bucket-wide: %v", err)
	}
}

// refineFirst is the first refinement's time after the start; the next
// ones double it until the polls take over.
const refineFirst = 5 * time.Millisecond

// refineSchedule fires the refinements before the first poll, at
// refineFirst, twice that, and so on below the poll interval: the calls
// counted before a bucket is refined are known only to their bucket, so
// the sooner the better, and the calls double between refinements at a
// steady rate (the polls then refine as the calls grow, Session.Refine).
type refineSchedule struct {
	*time.Timer
	at, until time.Duration
}

func newRefineSchedule(interval time.Duration) *refineSchedule {
	return &refineSchedule{Timer: time.NewTimer(refineFirst), at: refineFirst, until: interval}
}

// next arms the timer for the next refinement, if it comes before the
// first poll.
func (r *refineSchedule) next() {
	if r.at *= 2; r.at < r.until {
		r.Timer.Reset(r.at / 2)
	}
}

// scaledHist is the echoes' histogram of overheads, computed in BPF with
// the model's slope B, as they are with the slope for the calls' body
// share: each value v is A + k (v - A). The map is increasing, so buckets
// keep their order.
type scaledHist struct {
	h    *histogram.Hist
	a, k float64
}

func (s scaledHist) Buckets() int       { return s.h.Buckets() }
func (s scaledHist) Count(i int) uint64 { return s.h.Count(i) }
func (s scaledHist) Bounds(i int) (float64, float64) {
	lo, hi := s.h.Bounds(i)
	return math.Max(0, s.a+s.k*(lo-s.a)), math.Max(0, s.a+s.k*(hi-s.a))
}
