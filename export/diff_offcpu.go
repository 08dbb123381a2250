// SPDX-License-Identifier: Apache-2.0

package export

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/google/pprof/profile"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/units"
)

// Comparing off-CPU and wall profiles (docs/statistics.md, "Comparing
// off-CPU time").
//
// Each side's time by function is rebuilt from the raw sums the profile
// carries (OffCPUReport: the Horvitz-Thompson estimate and its estimated
// variance, and for wall time the CPU samples), with its score interval;
// the two sides are independent samples, so the change new - base and its
// interval come from the two intervals by MOVER (estimate.DiffResults). A
// function absent from one side has no sampled interval there: its time
// is 0, but unsampled intervals may hold some, so its interval is the
// score interval at T^ = 0, [0, z^2 k], with k = V^/T^ of that side's
// whole profile (its sampling probabilities and the scale of its
// intervals); a side whose every interval was taken (V^ = 0) gives [0, 0].

// Sample types Diff compares (DiffSampleType's typ).
const (
	// SamplesType compares CPU samples: shares with intervals.
	SamplesType = "samples"
)

// DiffSampleType compares two profiles by sample type typ: SamplesType
// (CPU shares), OffCPUType or WallType (time by function, from the raw
// off-CPU sums), or "" to choose as report does: a time profile's own
// comparison, a profile with off-CPU time by its default type
// (OffCPUTableType), else CPU samples. With all set every row is kept;
// otherwise only the changes whose interval excludes zero.
func DiffSampleType(base, new *profile.Profile, typ string, o estimate.Options, all bool) (*DiffTable, error) {
	if typ == "" {
		var err error
		if typ, err = diffChooseType(base, new); err != nil {
			return nil, err
		}
	}
	switch typ {
	case "":
		return Diff(base, new, o, all)
	case SamplesType:
		if IsTimeProfile(base) || IsTimeProfile(new) {
			return nil, errors.New("sample type samples: a tickprof time profile has no CPU samples")
		}
		return Diff(base, new, o, all)
	case OffCPUType, WallType:
		t, err := diffOffCPU(base, new, typ, o)
		if err != nil {
			return nil, err
		}
		return t.keep(all), nil
	}
	return nil, fmt.Errorf("sample type %q: want %s, %s or %s", typ, SamplesType, OffCPUType, WallType)
}

// diffChooseType is the sample type report would choose for both profiles
// ("" for the comparison Diff makes of time or CPU profiles).
func diffChooseType(base, new *profile.Profile) (string, error) {
	bo, no := IsOffCPUProfile(base), IsOffCPUProfile(new)
	if !bo || !no {
		return "", nil
	}
	bt, nt := OffCPUTableType(base), OffCPUTableType(new)
	if bt != nt {
		return "", fmt.Errorf("the base profile's default sample type is %s, the new one's %s: choose the one to compare", bt, nt)
	}
	return bt, nil
}

// diffOffCPU compares each function's cumulative off-CPU (or wall) time.
func diffOffCPU(base, new *profile.Profile, typ string, o estimate.Options) (*DiffTable, error) {
	bt, err := OffCPUReport(base, typ, o)
	if err != nil {
		return nil, fmt.Errorf("base profile: %w", err)
	}
	nt, err := OffCPUReport(new, typ, o)
	if err != nil {
		return nil, fmt.Errorf("new profile: %w", err)
	}
	t := &DiffTable{Kind: typ, Confidence: bt.Total.Confidence, BaseDuration: bt.Duration, NewDuration: nt.Duration}
	if t.Total, err = diffOffRow("in all", bt.Total, nt.Total); err != nil {
		return nil, err
	}
	rows := func(tab *OffCPUTable) map[string]OffEstimate {
		m := map[string]OffEstimate{}
		for _, r := range tab.Rows {
			m[r.Function] = r.Cum
		}
		return m
	}
	bm, nm := rows(bt), rows(nt)
	names := make([]string, 0, len(bm)+len(nm))
	for fn := range bm {
		names = append(names, fn)
	}
	for fn := range nm {
		if _, ok := bm[fn]; !ok {
			names = append(names, fn)
		}
	}
	sort.Strings(names)
	for _, fn := range names {
		r, err := diffOffRow(fn, orZero(bm, fn, bt.Total), orZero(nm, fn, nt.Total))
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, *r)
	}
	return t, nil
}

// orZero is m's estimate for fn or, without one, no time: the score
// interval at 0 with the scale k = V/T of the side's total.
func orZero(m map[string]OffEstimate, fn string, total OffEstimate) OffEstimate {
	if e, ok := m[fn]; ok {
		return e
	}
	e := OffEstimate{Confidence: total.Confidence}
	if total.Mean > 0 && total.StdErr > 0 {
		z := distuv.UnitNormal.Quantile(1 - (1-total.Confidence)/2)
		e.High = z * z * total.StdErr * total.StdErr / total.Mean
	}
	return e
}

// diffOffRow is the change of one time, new - base, with its MOVER interval.
func diffOffRow(name string, base, new OffEstimate) (*DiffRow, error) {
	res := func(e OffEstimate) estimate.Result {
		return estimate.Result{Mean: e.Mean, Low: e.Low, High: e.High, StdErr: e.StdErr, Confidence: e.Confidence, Calls: e.Calls}
	}
	d, err := estimate.DiffResults(res(base), res(new))
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", name, err)
	}
	return &DiffRow{Name: name, Base: base.Mean, New: new.Mean, Change: d}, nil
}

// keep sorts t's rows by the size of their change and, unless all is
// set, keeps the significant ones.
func (t *DiffTable) keep(all bool) *DiffTable {
	sort.SliceStable(t.Rows, func(i, j int) bool {
		return rowSize(t.Rows[i]) > rowSize(t.Rows[j])
	})
	if !all {
		kept := t.Rows[:0]
		for _, r := range t.Rows {
			if r.Significant() {
				kept = append(kept, r)
			} else {
				t.Hidden++
			}
		}
		t.Rows = kept
	}
	return t
}

// writeOffCPUText writes the changes of an off-CPU or wall comparison.
func (t *DiffTable) writeOffCPUText(w io.Writer, conf string) {
	what := "off-CPU time"
	if t.Kind == WallType {
		what = "wall-clock time (on + off CPU)"
	}
	fmt.Fprintf(w, "change in %s by function (anywhere on the stack), new - base, %s intervals\n", what, conf)
	if r := t.Total; r != nil {
		fmt.Fprintf(w, "in all: %s -> %s, %s [%s, %s]; profiles of %s and %s\n", units.Ns(r.Base), units.Ns(r.New),
			fmtSigned(r.Change.Diff), fmtSigned(r.Change.Low), fmtSigned(r.Change.High), units.Ns(t.BaseDuration), units.Ns(t.NewDuration))
	}
	fmt.Fprintf(w, "%-40s %-24s %s\n", "change [interval]", "base -> new", "function")
	for _, r := range t.Rows {
		mark := " "
		if r.Change.Significant {
			mark = "*"
		}
		fmt.Fprintf(w, "%-40s %-24s %s\n",
			fmt.Sprintf("%s [%s, %s]%s", fmtSigned(r.Change.Diff), fmtSigned(r.Change.Low), fmtSigned(r.Change.High), mark),
			units.Ns(r.Base)+" -> "+units.Ns(r.New), r.Name)
	}
}
