// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tickprof/tickprof/internal/termsafe"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/timing"
)

// Progress shows live estimates while `tickprof time` runs: redrawn in
// place at most 4 times a second on a terminal, one plain line per target
// every second otherwise.
type Progress struct {
	w     io.Writer
	tty   bool
	lines int
	last  time.Time
}

// NewProgress returns a Progress writing to w. It redraws in place with
// control sequences of its own, so it writes to what w wraps
// (termsafe.Unwrap) and escapes the target names itself.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: termsafe.Unwrap(w), tty: isTerminal(w)}
}

// Update shows the estimates after a polling batch.
func (p *Progress) Update(pr timing.Progress) {
	rel, elapsed, rows := pr.Precision, pr.Elapsed, pr.Rows
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
	for i, r := range rows {
		fmt.Fprintf(&b, "%6.1fs  %-28s %10d calls  ", elapsed.Seconds(), termsafe.String(r.Name), r.Calls)
		if r.Err != nil {
			b.WriteString("waiting for calls")
		} else {
			m, lo, hi := units.Interval(r.Result.Mean, r.Result.Low, r.Result.High)
			fmt.Fprintf(&b, "%s [%s, %s] (%s)", m, lo, hi, units.Percent(r.Result.Confidence))
			if !math.IsInf(r.Result.RelHalfWidth, 0) && !math.IsNaN(r.Result.RelHalfWidth) {
				fmt.Fprintf(&b, " ±%s", units.Percent(r.Result.RelHalfWidth))
			}
			if i < len(pr.Quantiles) && pr.Quantiles[i] != nil {
				b.WriteString("  " + progressQuantile(*pr.Quantiles[i]))
			}
			if rel > 0 {
				switch need := pr.Remaining[i]; {
				case need == 0:
					b.WriteString("  precision reached")
				case need > 0:
					fmt.Fprintf(&b, "  ~%s more for ±%s", roundNeed(need), units.Percent(rel))
					if i < len(pr.RemainingLow) && i < len(pr.RemainingHigh) {
						if lo, hi := pr.RemainingLow[i], pr.RemainingHigh[i]; lo >= 0 && (lo != need || hi != need) {
							fmt.Fprintf(&b, " (%s–%s, 80%%)", roundNeed(lo), roundNeed(hi))
						}
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

// Clear removes the live lines on a terminal before the final table.
func (p *Progress) Clear() {
	if p.tty && p.lines > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.lines)
		p.lines = 0
	}
}

// roundNeed rounds a forecast to about two significant digits.
func roundNeed(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= 10*time.Second:
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
