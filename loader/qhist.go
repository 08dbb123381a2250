package loader

import (
	"fmt"

	"github.com/tickprof/tickprof/histogram"
)

// Histogram returns target i's (Index order) histogram of exact durations
// since attach, merged over CPUs, with the exact minimum and maximum; nil
// when the session keeps no histograms (Options.Quantiles with Exact).
func (s *Session) Histogram(i int) (*histogram.Hist, error) {
	if s.quantilesOn() == 0 {
		return nil, nil
	}
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
