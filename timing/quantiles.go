package timing

import (
	"fmt"

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
	}
	return all
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
