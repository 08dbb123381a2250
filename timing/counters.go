// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"math/bits"
	"time"

	"github.com/cilium/ebpf"

	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/loader"
)

// Counters are one target's counters, cumulative since its probes were
// attached: what a caller that cuts its own reports reads (Poll, Read)
// instead of running the session's estimates.
type Counters struct {
	// Calls is n, the calls completed; Ticks is sum c_i, the clock ticks
	// they crossed (ns with the ns clock).
	Calls, Ticks uint64
	// TicksSq is sum c_i^2: its low 64 bits, and TicksSqHi the bits above
	// (one call of more than 2^32 ticks passes them: 4.3 s with the ns
	// clock).
	TicksSq, TicksSqHi uint64
	// Hist is the histogram of the exact durations, read just after the
	// counters (so it may hold a few calls more or fewer); nil unless the
	// session keeps one (Config.Quantiles with an exact clock).
	Hist *histogram.Hist
}

// Sub returns the counters since prev, an earlier read of the same target.
// The histogram's difference holds the bucket counts only (no minimum or
// maximum); nil when c has none, c's own when prev has none.
func (c Counters) Sub(prev Counters) Counters {
	d := Counters{Calls: c.Calls - prev.Calls, Ticks: c.Ticks - prev.Ticks}
	var borrow uint64
	d.TicksSq, borrow = bits.Sub64(c.TicksSq, prev.TicksSq, 0)
	d.TicksSqHi, _ = bits.Sub64(c.TicksSqHi, prev.TicksSqHi, borrow)
	if c.Hist != nil {
		d.Hist = &histogram.Hist{}
		for b, n := range c.Hist.Counts {
			d.Hist.Counts[b] = n
			if prev.Hist != nil {
				d.Hist.Counts[b] -= prev.Hist.Counts[b]
			}
		}
	}
	return d
}

// Poll reads every target's counters (Targets order) and closes a
// polling batch, as Run's polls do: for a caller that cuts its own reports
// instead of calling Run.
func (s *Session) Poll() ([]Counters, error) { return s.counters(s.ls.Poll) }

// Read reads every target's counters (Targets order) without closing a
// batch, so it may be called while Run runs in another goroutine.
func (s *Session) Read() ([]Counters, error) { return s.counters(s.ls.Read) }

// counters reads the counters with read, then the histograms.
func (s *Session) counters(read func() (loader.Poll, error)) ([]Counters, error) {
	p, err := read()
	if err != nil {
		return nil, err
	}
	out := make([]Counters, len(p.Totals))
	for i, c := range p.Totals {
		out[i] = Counters{Calls: c.Calls, Ticks: c.Ticks, TicksSq: c.TicksSq.Lo, TicksSqHi: c.TicksSq.Hi}
		if out[i].Hist, err = s.ls.Histogram(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// programRuntime is the time the programs ran, as the kernel's BPF
// statistics count it (0 when they are off).
func programRuntime(ps []*ebpf.Program) (d time.Duration) {
	for _, p := range ps {
		if st, err := p.Stats(); err == nil {
			d += st.Runtime
		}
	}
	return d
}
