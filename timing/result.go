// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/rank"
	"github.com/tickprof/tickprof/internal/symbolize"
)

// buildRun gathers the final results from the last poll p.
func (s *Session) buildRun(p loader.Poll, reason StopReason) *Result {
	ls, cfg := s.ls, &s.cfg
	clk := ls.Clock()
	run := &Result{
		Clock: clk.String(), Resolution: clk.Resolution(), Confidence: cfg.Estimate.Confidence,
		Start: s.start, Duration: p.At.Sub(s.start), PID: s.pid, Command: cfg.Command, StopReason: reason,
		Validate: cfg.Exact && clk.Kind != loader.ClockNS,
		Records:  p.Records, RingDrops: p.Stats.RingDrops, StackFails: p.Stats.StackFails, Links: ls.LinkKind(),
	}
	inflight, _ := ls.InFlight()
	var callers []loader.Caller
	var records []uint64
	if cfg.SkipCallers {
		records = ls.CallerRecords()
	} else {
		callers = ls.Callers()
	}
	for i, c := range p.Totals {
		tg := ls.Targets()[i]
		if tg.Spec.Kind == loader.KindGoUser && run.Go == nil {
			if g, err := ls.GoStats(); err == nil {
				run.Go = &GoStats{Morestack: g.Morestack, Expired: g.Expired, NoGoroutine: g.NoGoroutine}
			}
		}
		row := estimateTarget(clk, c, ls.Batches(i), cfg.Estimate)
		t := TargetResult{
			Name: tg.Name, Kind: TargetKind(tg.Spec.Kind.String()), Binary: tg.Spec.File,
			Calls: c.Calls, Ticks: c.Ticks, Estimate: row.Result, Counts: row.counts,
			Orphans: c.Orphans, Crossings: c.Crossings, InlinedInto: s.inlined[tg.Name],
		}
		if i < len(inflight) {
			t.Orphans += inflight[i]
		}
		t.ClockCheck = loader.ClockCheck(clk, c, ls.Batches(i), cfg.Estimate)
		if row.Err != nil {
			t.Err = row.Err.Error()
		}
		t.Notes = untimedNotes(t, p.Stats, tg.Spec.Kind)
		if row.Decided != "" {
			t.Notes = append(t.Notes, "the mean is "+row.Decided)
		}
		if cfg.SkipCallers {
			t.Dropped = subFloor(c.Crossings, records[i])
		} else {
			t.Callers, t.Dropped = targetCallers(callers, i, c)
			if clk.Kind == loader.ClockNS {
				scaleCallers(t.Callers, c.Ticks)
			}
		}
		if cfg.Exact || clk.Kind == loader.ClockNS {
			t.Exact, t.Covered = exactFigures(c, row, run.Validate, cfg.Estimate)
		}
		if len(cfg.Quantiles) > 0 && c.Calls > 0 {
			if h, qs, err := s.quantiles(i); err != nil {
				cfg.warn("%s: %v", tg.Name, err)
			} else {
				t.Hist, t.Quantiles = h, qs
			}
		}
		run.Targets = append(run.Targets, t)
	}
	return run
}

// targetCallers are the caller stacks of target i, and the crossing
// records lost (whose caller is unknown).
func targetCallers(callers []loader.Caller, i int, c loader.Counters) ([]Caller, uint64) {
	var out []Caller
	var recs uint64
	for _, cl := range callers {
		if cl.Target != i {
			continue
		}
		recs += cl.Records
		tc := Caller{Calls: cl.Records, Ticks: cl.Ticks, Cut: cl.Cut, Unwound: cl.Unwound, Stop: cl.Stop.String()}
		for _, l := range cl.Stack {
			tc.Frames = append(tc.Frames, frameOf(l))
		}
		out = append(out, tc)
	}
	return out, subFloor(c.Crossings, recs)
}

// frameOf is the Frame of a symbolized address.
func frameOf(l symbolize.Location) Frame {
	f := Frame{File: l.Path, Addr: l.Addr, Off: l.Offset}
	n := len(l.Frames)
	if n == 0 {
		return f
	}
	f.Func, f.Source, f.Line = l.Frames[n-1].Function, l.Frames[n-1].File, l.Frames[n-1].Line
	for _, in := range l.Frames[:n-1] {
		f.Inlined = append(f.Inlined, SourceLine{Func: in.Function, Source: in.File, Line: in.Line})
	}
	return f
}

// exactFigures are a target's exact-ns figures and, when validating a
// tick clock, whether its interval holds the exact mean.
func exactFigures(c loader.Counters, row Row, validate bool, est estimate.Options) (*ExactNs, *bool) {
	x := &ExactNs{Sum: c.NsSum, Min: c.NsMin, Max: c.NsMax, Hist: append([]uint64(nil), c.Hist[:]...)}
	if m, err := estimate.MeanFromSums(c.Calls, float64(c.NsSum), c.NsSq.Float64(), est); err == nil {
		x.Mean = m
	}
	if !validate || row.Err != nil || c.Calls == 0 {
		return x, nil
	}
	// Both sides as measured: the check is on the clock and the
	// estimator, before any overhead correction.
	exact := float64(c.NsSum) / float64(c.Calls)
	cov := row.Result.Low <= exact && exact <= row.Result.High
	return x, &cov
}

// scaleCallers spreads a target's exact total (ns) over its callers in
// proportion to their record-grid estimates (ns clock: a record per grid
// line a call spans, so the estimates are unbiased shares but do not add
// up to the exact total).
func scaleCallers(cs []Caller, total uint64) {
	var sum uint64
	for _, c := range cs {
		sum += c.Ticks
	}
	if sum == 0 {
		return
	}
	var given uint64
	for i := range cs {
		cs[i].Ticks = uint64(float64(cs[i].Ticks) / float64(sum) * float64(total))
		given += cs[i].Ticks
	}
	// Rounding: the remainder goes to the largest caller (the first).
	cs[0].Ticks += subFloor(total, given)
}

// subFloor returns a-b, or 0 when b > a.
func subFloor(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// StackComments say, for a profile's comments, how many of the target's
// crossing records have a caller stack that ended early, and where and why,
// most records first; nil when every stack is complete.
func (t *TargetResult) StackComments() []string {
	by := map[string]uint64{}
	var cut, all uint64
	for _, c := range t.Callers {
		all += c.Calls
		if c.Cut {
			cut += c.Calls
			by[c.Stop] += c.Calls
		}
	}
	if cut == 0 {
		return nil
	}
	out := []string{fmt.Sprintf("%s: caller stacks that ended before their outermost frame: %d of %d crossing records", t.Name, cut, all)}
	for _, r := range rank.ByCount(by) {
		why := r
		if why == "" {
			why = "unknown"
		}
		out = append(out, fmt.Sprintf("  %d records: %s", by[r], why))
	}
	return out
}
