// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/units"
)

// progressQuantile is a quantile in the live progress: "p99 1.2ms
// [1.1ms, 1.3ms] ±8.3%".
func progressQuantile(q estimate.Quantile) string {
	s := export.QuantileName(q.P) + " " + export.QuantileCell(q)
	if w := q.RelHalfWidth(); !math.IsInf(w, 0) && !math.IsNaN(w) {
		s += " ±" + units.Percent(w)
	}
	return s
}

// WriteHistogram draws h as a terminal histogram in the style of bcc's
// funclatency, one row per power of two with the calls in it, and marks
// the rows holding each quantile's estimate with the quantile and its
// interval. Durations are in ns.
func WriteHistogram(w io.Writer, name string, h *histogram.Hist, qs []estimate.Quantile) error {
	n := h.Total()
	if n == 0 {
		_, err := fmt.Fprintf(w, "%s: no calls\n", name)
		return err
	}
	rows := octaveRows(h, qs)
	var maxc uint64
	for _, r := range rows {
		maxc = max(maxc, r.count)
	}
	const width = 40
	if _, err := fmt.Fprintf(w, "%s: %d calls, min %s, max %s\n%25s : %-10s |%-*s|\n", name, n, export.QNs(float64(h.Min)), export.QNs(float64(h.Max)), "ns", "count", width, " distribution"); err != nil {
		return err
	}
	for _, r := range rows {
		bar := int(math.Round(float64(r.count) / float64(maxc) * width))
		if r.count > 0 && bar == 0 {
			bar = 1
		}
		line := fmt.Sprintf("%11d -> %-10d : %-10d |%-*s|", r.lo, r.hi, r.count, width, strings.Repeat("*", bar))
		if len(r.marks) > 0 {
			line += " <- " + strings.Join(r.marks, "; ")
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// octaveRow is a row of the terminal histogram: the durations [lo, hi]
// (ns), the calls in them, and the quantiles whose estimates fall there.
type octaveRow struct {
	lo, hi uint64
	count  uint64
	marks  []string
}

// octave is the row of a duration: floor(log2 v), 0 for v < 2.
func octave(v uint64) int {
	if v < 2 {
		return 0
	}
	return bits.Len64(v) - 1
}

// octaveRows sums h's buckets by power of two, from the first non-empty
// one to the last, and marks each quantile's row.
func octaveRows(h *histogram.Hist, qs []estimate.Quantile) []octaveRow {
	first, last := 64, -1
	counts := map[int]uint64{}
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		lo, _ := histogram.Bounds(i)
		k := octave(lo)
		counts[k] += c
		first, last = min(first, k), max(last, k)
	}
	var rows []octaveRow
	for k := first; k <= last; k++ {
		r := octaveRow{lo: uint64(1) << k, hi: uint64(1)<<(k+1) - 1, count: counts[k]}
		if k == 0 {
			r.lo = 0
		}
		for _, q := range qs {
			if !q.TooFew && octave(uint64(q.Value)) == k && r.count > 0 {
				r.marks = append(r.marks, export.QuantileName(q.P)+" "+export.QuantileCell(q))
			}
		}
		rows = append(rows, r)
	}
	return rows
}
