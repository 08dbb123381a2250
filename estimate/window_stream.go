// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"math/bits"
)

// WindowStats holds a windowed run's windows as the statistics WindowedTime
// needs, in memory that does not grow with the run: the totals, and for the
// batches of 1, 2, 4, ... consecutive windows (groupSize picks one of them)
// the number of batches and their residuals' centred power sums. A run of
// hours under an overhead budget adds a window every few tens of ms; the
// estimate from WindowStats.Windowed is WindowedTime's on all of them, to
// floating-point rounding (TestWindowStatsMatch).
//
// The zero value is empty and ready to use.
type WindowStats struct {
	total  Window
	m      int
	levels []windowLevel // levels[j]: batches of 2^j windows
}

// windowLevel is the statistics of the batches of 2^j consecutive windows.
type windowLevel struct {
	part    Window // the batch being filled
	partN   int
	batches int // complete batches
	full    int // complete batches with calls
	sum     centred
	ticks   centred
	rate    centred
}

// centred keeps the power sums of residuals e = x - r y over batches, to the
// third order, around a centre r0 moved to the running ratio sum x / sum y
// as batches come (so that the sums stay small and the residuals at the
// final ratio lose no precision to cancellation): with f = x - r0 y it
// holds sum f^2, f y, y^2, f^3, f^2 y, f y^2, y^3, from which the sums at any
// other centre follow exactly (shift).
type centred struct {
	r0, x, y                     float64
	f2, fy, y2, f3, f2y, fy2, y3 float64
}

func (c *centred) add(x, y float64) {
	c.x += x
	c.y += y
	if c.y > 0 {
		c.shift(c.x / c.y)
	}
	f := x - c.r0*y
	c.f2 += f * f
	c.fy += f * y
	c.y2 += y * y
	c.f3 += f * f * f
	c.f2y += f * f * y
	c.fy2 += f * y * y
	c.y3 += y * y * y
}

// shift moves the centre to r: f' = f - d y with d = r - r0.
func (c *centred) shift(r float64) {
	d := r - c.r0
	if d == 0 {
		return
	}
	f2, fy, f3, f2y, fy2 := c.f2, c.fy, c.f3, c.f2y, c.fy2
	c.f2 = f2 - 2*d*fy + d*d*c.y2
	c.fy = fy - d*c.y2
	c.f3 = f3 - 3*d*f2y + 3*d*d*fy2 - d*d*d*c.y3
	c.f2y = f2y - 2*d*fy2 + d*d*c.y3
	c.fy2 = fy2 - d*c.y3
	c.r0 = r
}

// at returns sum e^2 and sum e^3 for e = x - r y.
func (c centred) at(r float64) (s2, s3 float64) {
	c.shift(r)
	return c.f2, c.f3
}

// addBatch adds one complete batch b to the level.
func (l *windowLevel) addBatch(b Window) {
	l.batches++
	if b.Calls > 0 {
		l.full++
	}
	n := float64(b.Calls)
	l.sum.add(b.Sum, n)
	l.ticks.add(float64(b.Ticks), n)
	l.rate.add(n, b.Length/1e9)
}

// withPart is the level with its incomplete batch added as a batch, as
// clusters makes the last group of fewer windows.
func (l windowLevel) withPart() windowLevel {
	if l.partN > 0 {
		l.addBatch(l.part)
	}
	return l
}

// Add adds a window; an invalid window (a length that is not positive, a
// negative drain or duration total, ticks without calls) is refused with
// the reason and leaves s as it was.
func (s *WindowStats) Add(w Window) error {
	if err := checkWindow(s.m+1, w); err != nil {
		return err
	}
	if w.Calls == 0 && w.Ticks != 0 {
		return inputf("window %d has %d ticks but no calls: ticks are counted inside calls", s.m+1, w.Ticks)
	}
	s.total.add(w)
	s.m++
	for j := range s.levels {
		l := &s.levels[j]
		l.part.add(w)
		if l.partN++; l.partN == 1<<j {
			l.addBatch(l.part)
			l.part, l.partN = Window{}, 0
		}
	}
	if s.m == 1<<len(s.levels) {
		// The first batch of the next level is every window so far.
		var l windowLevel
		l.addBatch(s.total)
		s.levels = append(s.levels, l)
	}
	return nil
}

// Windows is the number of windows added.
func (s *WindowStats) Windows() int { return s.m }

// Total is the windows' sums: lengths, drains, counts and durations.
func (s *WindowStats) Total() Window { return s.total }

// Levels is the number of batch sizes kept, log2 of the windows added plus
// one: the only part of s that grows with the run.
func (s *WindowStats) Levels() int { return len(s.levels) }

// checkWindow validates window i (1-based).
func checkWindow(i int, win Window) error {
	if !(win.Length > 0) || !finite(win.Length) {
		return inputf("window %d has length %v ns: want a positive duration", i, win.Length)
	}
	if !(win.Drain >= 0) || !finite(win.Drain) {
		return inputf("window %d has drain %v ns: want a duration of zero or more", i, win.Drain)
	}
	if !(win.Sum >= 0) || !finite(win.Sum) {
		return inputf("window %d has a duration total of %v ns: want zero or more", i, win.Sum)
	}
	return nil
}

// Windowed is WindowedTime over the windows added, for a run of elapsed ns
// and a clock of resolution ns (0: the exact clock).
func (s *WindowStats) Windowed(elapsed, resolution float64, o Options) (Windowed, error) {
	conf, iv, err := o.check()
	if err != nil {
		return Windowed{}, err
	}
	if s.m < 2 {
		return Windowed{}, inputf("%d windows: an interval with windows as clusters needs at least 2", s.m)
	}
	if !(resolution >= 0) || !finite(resolution) {
		return Windowed{}, inputf("resolution %v ns is not a duration: give the tick length, or 0 for the exact clock", resolution)
	}
	t := s.total
	w := Windowed{Windows: s.m, Probed: t.Length, Attached: t.Length + t.Drain, Censored: t.Censored}
	if !(elapsed >= w.Attached*(1-1e-12)) || !finite(elapsed) {
		return Windowed{}, inputf("run of %v ns is shorter than its windows and drains (%v ns)", elapsed, w.Attached)
	}
	w.Duty = math.Min(1, w.Attached/elapsed)
	g := groupSize(s.m, w.Duty)
	l := s.levels[bits.Len(uint(g))-1].withPart()
	n := t.Calls
	rate := float64(n) / (w.Probed / 1e9)
	ss, _ := l.rate.at(rate)
	w.Rate = rateResult(w.Probed, n, l.batches, ss, conf)
	if n == 0 {
		return w, inputf("no call entered any of %d windows: no mean yet; probe longer", s.m)
	}
	nf := float64(n)
	if resolution > 0 {
		mc := float64(t.Ticks) / nf
		r := Result{Mean: resolution * mc, Confidence: conf, Calls: n, Events: t.Ticks}
		cands := []Candidate{twoPointCandidate(n, t.Ticks, resolution, conf, iv)}
		if l.full >= 2 {
			r.Batches = l.full
			s2, s3 := l.ticks.at(mc)
			cands = append(cands, batchMeansFrom(l.full, s2, s3, resolution, nf, r.Mean, conf))
		}
		w.Mean = widest(r, cands)
		return w, nil
	}
	mean := t.Sum / nf
	s2, s3 := l.sum.at(mean)
	w.Mean = clusterResult(mean, n, l.full, s2, s3, conf)
	return w, nil
}
