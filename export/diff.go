// SPDX-License-Identifier: Apache-2.0

package export

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/google/pprof/profile"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/units"
)

// DiffTable is what changed between two profiles: for CPU profiles each
// function's change in flat and cumulative share (new - base, two
// proportions, Lilja 5.1.3); for `tickprof time` profiles each target's
// change in mean time per call (two means, Lilja ch. 5); for off-CPU and
// wall profiles each function's change in time (DiffSampleType).
type DiffTable struct {
	// Kind is "cpu", "time", OffCPUType or WallType.
	Kind       string  `json:"kind"`
	Confidence float64 `json:"confidence"`
	// BaseSamples and NewSamples are the sample counts (CPU profiles).
	BaseSamples uint64 `json:"base_samples,omitempty"`
	NewSamples  uint64 `json:"new_samples,omitempty"`
	// BaseDuration and NewDuration are the profiles' lengths in ns, and
	// Total the change of the whole time (off-CPU and wall profiles).
	BaseDuration float64  `json:"base_duration_ns,omitempty"`
	NewDuration  float64  `json:"new_duration_ns,omitempty"`
	Total        *DiffRow `json:"total_change,omitempty"`
	// Rows are the changes, largest first; only significant ones unless
	// every row was asked for.
	Rows []DiffRow `json:"changes"`
	// Hidden counts the rows left out because their interval holds zero.
	Hidden int `json:"not_significant"`
}

// DiffRow is one function's (or target's) change.
type DiffRow struct {
	Name string `json:"name"`
	// Base and New are the flat shares (CPU), mean times in ns (time) or
	// cumulative times in ns (off-CPU and wall).
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	// Change is New - Base with its interval.
	Change estimate.Difference `json:"change"`
	// Cum is the change of the cumulative share (CPU profiles only).
	Cum *estimate.Difference `json:"cum_change,omitempty"`
	// Quantiles are the changes of the quantiles both time runs have
	// (exact clock), each with its interval (estimate.QuantileDiff).
	Quantiles []QuantileChange `json:"quantile_changes,omitempty"`
}

// Significant reports whether any change's interval excludes zero.
func (r DiffRow) Significant() bool {
	for _, q := range r.Quantiles {
		if q.Err == "" && q.Diff.Significant {
			return true
		}
	}
	return r.Change.Significant || (r.Cum != nil && r.Cum.Significant)
}

// Diff compares two profiles of the same kind. With all set every row is
// kept; otherwise only the changes whose interval excludes zero.
func Diff(base, new *profile.Profile, o estimate.Options, all bool) (*DiffTable, error) {
	bt, nt := IsTimeProfile(base), IsTimeProfile(new)
	if bt != nt {
		return nil, errors.New("cannot compare a tickprof time profile with a CPU profile: give two of the same kind")
	}
	var t *DiffTable
	var err error
	if bt {
		t, err = diffTime(base, new, o)
	} else {
		t, err = diffCPU(base, new, o)
	}
	if err != nil {
		return nil, err
	}
	return t.keep(all), nil
}

func rowSize(r DiffRow) float64 {
	s := math.Abs(r.Change.Diff)
	if r.Cum != nil && math.Abs(r.Cum.Diff) > s && r.Cum.Significant && !r.Change.Significant {
		s = math.Abs(r.Cum.Diff)
	}
	return s
}

func diffCPU(base, new *profile.Profile, o estimate.Options) (*DiffTable, error) {
	side := func(p *profile.Profile, which string) (funcCounts, error) {
		count, _, err := sampleCounts(p)
		if err != nil {
			return funcCounts{}, fmt.Errorf("%s profile: %w", which, err)
		}
		fc := countFuncs(p, count)
		if fc.overflow {
			return funcCounts{}, fmt.Errorf("%s profile: %w", which, errOverflow)
		}
		if fc.n == 0 {
			return funcCounts{}, fmt.Errorf("%s profile: %w", which, ErrNoSamples)
		}
		return fc, nil
	}
	b, err := side(base, "base")
	if err != nil {
		return nil, err
	}
	n, err := side(new, "new")
	if err != nil {
		return nil, err
	}
	t := &DiffTable{Kind: "cpu", BaseSamples: b.n, NewSamples: n.n}
	names := map[string]bool{}
	for k := range b.cum {
		names[k] = true
	}
	for k := range n.cum {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		flat, err := estimate.DiffProportions(n.flat[name], n.n, b.flat[name], b.n, o)
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", name, err)
		}
		cum, err := estimate.DiffProportions(n.cum[name], n.n, b.cum[name], b.n, o)
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", name, err)
		}
		t.Confidence = flat.Confidence
		t.Rows = append(t.Rows, DiffRow{Name: name,
			Base: float64(b.flat[name]) / float64(b.n), New: float64(n.flat[name]) / float64(n.n),
			Change: flat, Cum: &cum})
	}
	return t, nil
}

func diffTime(base, new *profile.Profile, o estimate.Options) (*DiffTable, error) {
	bt, err := TimeReport(base)
	if err != nil {
		return nil, fmt.Errorf("base profile: %w", err)
	}
	nt, err := TimeReport(new)
	if err != nil {
		return nil, fmt.Errorf("new profile: %w", err)
	}
	if bt.Confidence == 0 || nt.Confidence == 0 {
		return nil, errors.New("a time profile does not state its confidence level: cannot compare its intervals")
	}
	if bt.Confidence != nt.Confidence {
		return nil, fmt.Errorf("the profiles' intervals are at different confidence levels (%g%% and %g%%): time both at the same --confidence", 100*bt.Confidence, 100*nt.Confidence)
	}
	t := &DiffTable{Kind: "time", Confidence: bt.Confidence}
	res := func(r TimeRow, conf float64) estimate.Result {
		z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
		return estimate.Result{Mean: r.Mean, Low: r.Low, High: r.High, Confidence: conf,
			StdErr: (r.High - r.Low) / (2 * z), Calls: r.Calls}
	}
	bm := map[string]TimeRow{}
	for _, r := range bt.Rows {
		bm[r.Target] = r
	}
	for _, nr := range nt.Rows {
		br, ok := bm[nr.Target]
		if !ok || !br.HasEstimate || !nr.HasEstimate {
			continue
		}
		d, err := estimate.DiffResults(res(br, bt.Confidence), res(nr, nt.Confidence))
		if err != nil {
			return nil, fmt.Errorf("compare %s: %w", nr.Target, err)
		}
		t.Rows = append(t.Rows, DiffRow{Name: nr.Target, Base: br.Mean, New: nr.Mean, Change: d,
			Quantiles: QuantileChanges(br.qs, nr.qs)})
	}
	if len(t.Rows) == 0 {
		return nil, errors.New("the two time profiles have no timed target in common")
	}
	return t, nil
}

// WriteText writes the differences.
func (t *DiffTable) WriteText(w io.Writer) error {
	conf := fmt.Sprintf("%g%%", 100*t.Confidence)
	switch t.Kind {
	case "cpu":
		fmt.Fprintf(w, "change in share of samples, new - base (%d -> %d samples), %s intervals\n", t.BaseSamples, t.NewSamples, conf)
		fmt.Fprintf(w, "%-34s %-34s %-15s %s\n", "flat change [interval] (pp)", "cum change [interval] (pp)", "base -> new", "function")
		for _, r := range t.Rows {
			fmt.Fprintf(w, "%-34s %-34s %-15s %s\n", fmtPP(r.Change), fmtPP(*r.Cum),
				fmt.Sprintf("%.2f%% -> %.2f%%", 100*r.Base, 100*r.New), r.Name)
		}
	case OffCPUType, WallType:
		t.writeOffCPUText(w, conf)
	case "time":
		fmt.Fprintf(w, "change in mean time per call, new - base, %s intervals (quantiles: MOVER on the order-statistic intervals)\n", conf)
		fmt.Fprintf(w, "%-40s %-24s %s\n", "change [interval]", "base -> new", "target")
		for _, r := range t.Rows {
			fmt.Fprintf(w, "%-40s %-24s %s\n",
				fmt.Sprintf("%s [%s, %s]", fmtSigned(r.Change.Diff), fmtSigned(r.Change.Low), fmtSigned(r.Change.High)),
				units.Ns(r.Base)+" -> "+units.Ns(r.New), r.Name)
			for _, q := range r.Quantiles {
				fmt.Fprintf(w, "    %s\n", q)
			}
		}
	}
	if len(t.Rows) == 0 {
		fmt.Fprintln(w, "no significant change: every interval holds zero")
	}
	if t.Hidden > 0 {
		fmt.Fprintf(w, "%d changes not significant at %s (their interval holds zero); --all shows them\n", t.Hidden, conf)
	}
	return nil
}

func fmtPP(d estimate.Difference) string {
	mark := " "
	if d.Significant {
		mark = "*"
	}
	return fmt.Sprintf("%+.2f [%+.2f, %+.2f]%s", 100*d.Diff, 100*d.Low, 100*d.High, mark)
}

func fmtSigned(ns float64) string {
	if ns >= 0 {
		return "+" + units.Ns(ns)
	}
	return "-" + units.Ns(-ns)
}
