// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
)

// tally is one figure of one case over its runs.
type tally struct {
	caseName, title, check string
	runs, held             int
	noInterval             int       // runs without an estimate (counted as not held)
	above, below           int       // misses with the interval above / below the truth
	errs, widths           []float64 // relative error and half-width of each run with an estimate
	loadMin, loadMax       float64
	failed                 int // runs that ended in an error (not counted in runs)
}

// caseRuns is what the runs of one case gave.
type caseRuns struct {
	c        tcase
	outcomes []outcome
	failures []string
}

// tallies sums the runs of each case, figure by figure, in the order of
// the cases and of the figures' first appearance.
func tallies(all []caseRuns) []*tally {
	var out []*tally
	for _, cr := range all {
		byName := map[string]*tally{}
		var order []*tally
		lmin, lmax := math.Inf(1), math.Inf(-1)
		for _, o := range cr.outcomes {
			lmin, lmax = math.Min(lmin, math.Min(o.load0, o.load1)), math.Max(lmax, math.Max(o.load0, o.load1))
			for _, ch := range o.checks {
				t := byName[ch.name]
				if t == nil {
					t = &tally{caseName: cr.c.name, title: cr.c.title, check: ch.name}
					byName[ch.name] = t
					order = append(order, t)
				}
				t.add(ch)
			}
		}
		if len(order) == 0 {
			order = []*tally{{caseName: cr.c.name, title: cr.c.title, check: "mean"}}
		}
		for _, t := range order {
			t.loadMin, t.loadMax, t.failed = lmin, lmax, len(cr.failures)
		}
		out = append(out, order...)
	}
	return out
}

func (t *tally) add(ch check) {
	t.runs++
	switch {
	case ch.held:
		t.held++
	case ch.noInterval:
		t.noInterval++
	case ch.low > ch.truth:
		t.above++
	default:
		t.below++
	}
	if !ch.noInterval {
		t.errs = append(t.errs, ch.relError())
		t.widths = append(t.widths, ch.relHalfWidth())
	}
}

// coverage is the share of runs whose interval held the truth, with its
// Clopper-Pearson interval at level conf.
func (t *tally) coverage(conf float64) (estimate.Proportion, error) {
	return estimate.Share(uint64(t.held), uint64(t.runs), estimate.Options{Confidence: conf, Interval: estimate.Exact})
}

// median returns the median of v (NaN when empty).
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// pct formats a share as a percentage ("—" for NaN, "∞" for +Inf).
func pct(x float64, prec int) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.IsInf(x, 1):
		return "∞"
	}
	return fmt.Sprintf("%+.*f%%", prec, 100*x)
}

// table formats the tallies as a Markdown table.
func table(ts []*tally) string {
	var b strings.Builder
	b.WriteString("| case | figure | runs | held | coverage [95% CI] | misses: interval above / below truth | no estimate | median error of the estimate | median half-width | load (1 min) |\n")
	b.WriteString("|---|---|---:|---:|---|---|---:|---:|---:|---|\n")
	for _, t := range ts {
		cov := "—"
		if p, err := t.coverage(0.95); err == nil {
			cov = fmt.Sprintf("%.0f%% [%.0f%%, %.0f%%]", 100*p.Share, 100*p.Low, 100*p.High)
		}
		w := strings.TrimPrefix(pct(median(t.widths), 1), "+")
		if w != "—" && w != "∞" {
			w = "±" + w
		}
		runs := fmt.Sprint(t.runs)
		if t.failed > 0 {
			runs += fmt.Sprintf(" (+%d failed)", t.failed)
		}
		load := "—"
		if t.loadMin <= t.loadMax {
			load = fmt.Sprintf("%.1f–%.1f", t.loadMin, t.loadMax)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %d / %d | %d | %s | %s | %s |\n",
			t.title, t.check, runs, t.held, cov, t.above, t.below, t.noInterval,
			pct(median(t.errs), 1), w, load)
	}
	return b.String()
}

// minHeld returns the least k such that P(X < k) <= alpha for X binomial
// (n, p): with true coverage p, fewer than k of n intervals hold the truth
// with probability at most alpha. It also returns that probability.
func minHeld(n int, p, alpha float64) (k int, falseAlarm float64) {
	b := distuv.Binomial{N: float64(n), P: p}
	for k = n; k > 0; k-- {
		if fa := b.CDF(float64(k - 1)); fa <= alpha {
			return k, fa
		}
	}
	return 0, 0
}
