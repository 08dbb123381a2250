// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/estimate/histogram"
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
// minimum and maximum), with the calls counted in refined bins: those
// first, so that every call they hold is in the buckets read after.
func (s *Session) readHist(i int) (*histogram.Hist, error) {
	t := s.targets[i]
	fine, err := s.readFine(i)
	if err != nil {
		return nil, err
	}
	var per [][histogram.Buckets]uint64
	if err := s.objs.TpQhist.Lookup(t.Index, &per); err != nil {
		return nil, fmt.Errorf("read the duration histogram of %s: %w", t.Name, err)
	}
	h := &histogram.Hist{Fine: fine}
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

// refineState is the refinement's state (bpf/qhist.h): the half of the
// configuration the programs use, each half's windows per target, the
// calls counted in the halves left (per target), and each target's calls
// at its last plan.
type refineState struct {
	cur     uint32
	wins    [2][][]histogram.Window
	fine    []*histogram.Fine
	planned []uint64
}

// refineOn is tp_qrefine: 1 when quantiles are kept and not NoRefine.
func (s *Session) refineOn() uint32 {
	if s.quantilesOn() == 1 && !s.opts.NoRefine {
		return 1
	}
	return 0
}

// RefineGrowth is the growth in a target's calls after which Refine plans
// its windows again (between, it keeps them).
const RefineGrowth = 1.25

// Refine plans the refined windows of every target whose calls grew by
// RefineGrowth since its last plan, from its histogram now (r.Windows),
// and makes them the ones the programs use: it writes them into the
// configuration half not in use, zeroes that half's bins, switches to it,
// and adds the bins of the half it left, final now, to the target's
// refined calls. Without refinement (Options.NoRefine, no quantiles) or
// after Stop it does nothing. Call it between polls: the sooner after the
// start the better (the calls before a bucket is refined are known only
// to their bucket), then as the calls grow.
func (s *Session) Refine(r histogram.Refiner) error {
	if s.refineOn() == 0 || s.stopped {
		return nil
	}
	st := s.refineInit()
	p, err := s.read()
	if err != nil {
		return err
	}
	next := make([][]histogram.Window, len(s.targets))
	for i := range s.targets {
		next[i] = st.wins[st.cur][i]
		// The counters tell which targets are due without reading every
		// histogram (they count a call before its histogram does).
		if n := p.Totals[i].Calls; n == 0 || float64(n) < RefineGrowth*float64(st.planned[i]) {
			continue
		}
		h, err := s.readHist(i)
		if err != nil {
			return err
		}
		if n := h.Total(); n > 0 {
			next[i], st.planned[i] = r.Windows(h), n
		}
	}
	return s.switchHalf(next)
}

// refineEnd switches to a half with no window, so that every refined
// call is in the accumulated counts (Stop).
func (s *Session) refineEnd() {
	if s.refine != nil {
		_ = s.switchHalf(make([][]histogram.Window, len(s.targets)))
	}
}

func (s *Session) refineInit() *refineState {
	if s.refine == nil {
		n := len(s.targets)
		st := &refineState{fine: make([]*histogram.Fine, n), planned: make([]uint64, n)}
		st.wins[0], st.wins[1] = make([][]histogram.Window, n), make([][]histogram.Window, n)
		for i := range st.fine {
			st.fine[i] = &histogram.Fine{}
		}
		s.refine = st
	}
	return s.refine
}

// switchHalf makes next (per target) the windows in use (Refine): per
// target, the half not in use gets its windows and zeroed bins, then a
// second write of the same element flips the half in use (bpf/qhist.h).
func (s *Session) switchHalf(next [][]histogram.Window) error {
	st := s.refine
	old, half := st.cur, 1-st.cur
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("count the CPUs: %w", err)
	}
	zero := make([]bpf.TimingTpQrPool, ncpu)
	for i, t := range s.targets {
		var cfg bpf.TimingTpQrCfg
		cfg.Cur = old
		refineConfig(&cfg, old, st.wins[old][i])
		refineConfig(&cfg, half, next[i])
		if len(next[i]) != 0 || len(st.wins[half][i]) != 0 {
			// The half had or gets windows: clear its bins first.
			if err := s.objs.TpQrPool.Put(2*t.Index+half, zero); err != nil {
				return fmt.Errorf("clear the refined bins of %s: %w", t.Name, err)
			}
			if err := s.objs.TpQrCfg.Put(t.Index, &cfg); err != nil {
				return fmt.Errorf("write the refined windows of %s: %w", t.Name, err)
			}
		}
		cfg.Cur = half
		if err := s.objs.TpQrCfg.Put(t.Index, &cfg); err != nil {
			return fmt.Errorf("switch the refined windows of %s: %w", t.Name, err)
		}
	}
	st.cur, st.wins[half] = half, next
	for i := range s.targets {
		if len(st.wins[old][i]) == 0 {
			continue
		}
		counts, err := s.readPool(i, old)
		if err != nil {
			return err
		}
		for _, w := range st.wins[old][i] {
			st.fine[i].AddWindow(w, counts)
		}
	}
	return nil
}

// refineConfig writes windows ws into half of the BPF configuration c.
func refineConfig(c *bpf.TimingTpQrCfg, half uint32, ws []histogram.Window) {
	for k, w := range ws[:min(len(ws), len(c.S[half]))] {
		s := &c.S[half][k]
		c.Pos[half][w.Bucket] = uint8(k + 1)
		s.A, s.Span, s.Mul = w.A, uint32(w.Span), w.Mul
		s.Off, s.End = uint32(w.Off), uint32(w.End())
	}
}

// readPool reads target i's refined bins of a half, summed over CPUs.
func (s *Session) readPool(i int, half uint32) ([]uint64, error) {
	t := s.targets[i]
	var per []bpf.TimingTpQrPool
	if err := s.objs.TpQrPool.Lookup(2*t.Index+half, &per); err != nil {
		return nil, fmt.Errorf("read the refined bins of %s: %w", t.Name, err)
	}
	out := make([]uint64, histogram.RefineBins)
	for c := range per {
		for k, n := range per[c].B {
			out[k] += uint64(n)
		}
	}
	return out, nil
}

// readFine returns target i's refined calls so far: those of the halves
// left and those of the half in use now (nil before Refine).
func (s *Session) readFine(i int) (*histogram.Fine, error) {
	st := s.refine
	if st == nil {
		return nil, nil
	}
	f := st.fine[i].Clone()
	if len(st.wins[st.cur][i]) == 0 {
		return f, nil
	}
	counts, err := s.readPool(i, st.cur)
	if err != nil {
		return nil, err
	}
	for _, w := range st.wins[st.cur][i] {
		f.AddWindow(w, counts)
	}
	return f, nil
}
