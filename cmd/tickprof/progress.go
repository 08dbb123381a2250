package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// progress shows live estimates while `tickprof time` runs: redrawn in
// place at most 4 times a second on a terminal, one plain line per target
// every second otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	lines int
	last  time.Time
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, tty: stdIsTerminal(w)}
}

// update shows the rows at elapsed; ts.precision is the goal (0: none).
func (p *progress) update(elapsed time.Duration, rows []targetRow, ts timeSetup) {
	rel := ts.precision
	now := time.Now()
	min := time.Second
	if p.tty {
		min = 250 * time.Millisecond
	}
	if now.Sub(p.last) < min {
		return
	}
	p.last = now
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%6.1fs  %-28s %10d calls  ", elapsed.Seconds(), r.name, r.calls)
		if r.err != nil {
			b.WriteString("waiting for calls")
		} else {
			m, lo, hi := formatInterval(r.res.Mean, r.res.Low, r.res.High)
			fmt.Fprintf(&b, "%s [%s, %s] (%s)", m, lo, hi, formatPercent(r.res.Confidence))
			if !math.IsInf(r.res.RelHalfWidth, 0) && !math.IsNaN(r.res.RelHalfWidth) {
				fmt.Fprintf(&b, " ±%s", formatPercent(r.res.RelHalfWidth))
			}
			if rel > 0 {
				switch need, lo, hi := remaining(r, rel, elapsed, ts); {
				case need == 0:
					b.WriteString("  precision reached")
				case need > 0:
					fmt.Fprintf(&b, "  ~%s more for ±%s", roundNeed(need), formatPercent(rel))
					if lo != need || hi != need {
						fmt.Fprintf(&b, " (%s–%s, 80%%)", roundNeed(lo), roundNeed(hi))
					}
				}
			}
		}
		if p.tty {
			b.WriteString("\x1b[K")
		}
		b.WriteByte('\n')
	}
	if p.tty && p.lines > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA", p.lines)
	}
	io.WriteString(p.w, b.String())
	p.lines = len(rows)
}

// clear removes the live lines on a terminal before the final table.
func (p *progress) clear() {
	if p.tty && p.lines > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.lines)
		p.lines = 0
	}
}

// roundNeed rounds a forecast to two significant digits' worth.
func roundNeed(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= 10*time.Second:
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
