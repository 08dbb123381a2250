package loader

import (
	"fmt"

	"github.com/tickprof/tickprof/histogram"
)

// Histogram returns target i's (Index order) histogram of exact durations
// since attach, merged over CPUs, with the exact minimum and maximum; nil
// when the session keeps no histograms (Options.Quantiles with Exact).
// After Stop it is the histogram read just before the final counters: the
// calls it holds are all in them, and a call that ended between the two
// reads is in the counters only.
func (s *Session) Histogram(i int) (*histogram.Hist, error) {
	if s.quantilesOn() == 0 {
		return nil, nil
	}
	if s.stopped && s.finalHists != nil {
		if h := s.finalHists[i]; h != nil {
			out := *h
			if out.Total() > 0 && s.final != nil {
				out.Min, out.Max = s.final.Totals[i].NsMin, s.final.Totals[i].NsMax
			}
			return &out, nil
		}
	}
	h, err := s.readHist(i)
	if err != nil {
		return nil, err
	}
	// Min and max are read after the buckets: the BPF program updates
	// them before the histogram, so they cover every call counted above.
	p, err := s.read()
	if err != nil {
		return nil, err
	}
	if h.Total() > 0 {
		h.Min, h.Max = p.Totals[i].NsMin, p.Totals[i].NsMax
	}
	return h, nil
}

// readHist reads and merges target i's per-CPU histograms (without the
// minimum and maximum).
func (s *Session) readHist(i int) (*histogram.Hist, error) {
	t := s.targets[i]
	var per [][histogram.Buckets]uint64
	if err := s.objs.TpQhist.Lookup(t.Index, &per); err != nil {
		return nil, fmt.Errorf("read the duration histogram of %s: %w", t.Name, err)
	}
	h := &histogram.Hist{}
	for c := range per {
		for b, n := range per[c] {
			h.Counts[b] += n
		}
	}
	return h, nil
}

// readHists reads every target's histogram; nil without quantiles, and a
// nil entry for a target whose histogram could not be read.
func (s *Session) readHists() []*histogram.Hist {
	if s.quantilesOn() == 0 {
		return nil
	}
	out := make([]*histogram.Hist, len(s.targets))
	for i := range s.targets {
		out[i], _ = s.readHist(i)
	}
	return out
}
