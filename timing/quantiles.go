package timing

import (
	"fmt"
	"math"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/histogram"
	"github.com/tickprof/tickprof/loader"
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

// quantilesReached is the precision stop rule on a quantile
// (Config.PrecisionQuantile) after poll p: every target's QuantileStop says
// stop. A target without calls, or whose histogram cannot be read, has not
// reached it.
func (s *Session) quantilesReached(p loader.Poll) bool {
	ts := s.ls.Targets()
	if s.qstops == nil {
		s.qstops = make([]estimate.QuantileStop, len(ts))
		s.qplans = make([]uint64, len(ts))
		for i := range s.qstops {
			s.qstops[i].Rel = s.cfg.Precision
		}
	}
	all := len(ts) > 0
	for i := range ts {
		// Read the histogram only when the rule will look.
		if i >= len(p.Totals) || !s.qstops[i].Due(p.Totals[i].Calls) {
			all = false
			continue
		}
		h, err := s.ls.Histogram(i)
		if err != nil || h == nil || h.Total() == 0 {
			all = false
			continue
		}
		q, err := h.Quantile(s.cfg.PrecisionQuantile, s.cfg.Estimate)
		// Every target's rule takes its look, whatever the others say.
		if err != nil || !s.qstops[i].Check(q) {
			all = false
		}
		s.qplans[i] = 0
		if pl, err := h.PlanQuantile(s.cfg.PrecisionQuantile, s.cfg.Precision, s.cfg.Estimate); err == nil {
			s.qplans[i] = pl.Calls
		}
	}
	return all
}

// quantileRemaining forecasts the time target i still needs before its
// quantile stop rule stops the run (-1: unknown, before the rule has
// planned from a histogram with enough calls beyond the quantile): the
// calls to the rule's stop (QuantileStop.CallsToStop, on the plan from
// the histogram at its last look) at the call rate so far, and at least
// until the next poll.
func (s *Session) quantileRemaining(i int, calls uint64, elapsed time.Duration) time.Duration {
	if i >= len(s.qplans) || s.qplans[i] == 0 || calls == 0 || elapsed <= 0 {
		return -1
	}
	more := float64(s.qstops[i].CallsToStop(calls, s.qplans[i]) - calls)
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
		c, err := estimate.CorrectQuantile(q, o)
		if err != nil {
			return
		}
		cs = append(cs, c)
	}
	t.RawQuantiles, t.Quantiles = t.Quantiles, cs
}
