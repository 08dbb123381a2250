// SPDX-License-Identifier: Apache-2.0

package export

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/sampler"
)

// cpuWindow is window i of a synthetic sampled process: the same mappings
// and locations in every window, random counts per stack and call counts.
func cpuWindow(r *rand.Rand, i int) *sampler.Profile {
	d := testCPUData()
	d.Start = time.Unix(1700000000+int64(10*i), 0)
	d.Duration = 10 * time.Second
	for j := range d.Samples {
		d.Samples[j].Count = int64(r.IntN(40)) // zero too: a stack absent from a window
	}
	// "a" is on sampled stacks; "rare" is counted but never sampled.
	d.Calls = []sampler.CallCount{{Function: "a", Calls: 1 + int64(r.IntN(1000))}, {Function: "rare", Calls: 1 + int64(r.IntN(5))}}
	return d
}

// union adds the windows' counts into one CPUData, as one long run would
// have gathered them.
func union(ws []*sampler.Profile) *sampler.Profile {
	u := *ws[0]
	u.Samples = append([]sampler.Sample(nil), ws[0].Samples...)
	u.Calls = append([]sampler.CallCount(nil), ws[0].Calls...)
	for _, w := range ws[1:] {
		for j := range w.Samples {
			u.Samples[j].Count += w.Samples[j].Count
		}
		for j := range w.Calls {
			u.Calls[j].Calls += w.Calls[j].Calls
		}
		u.Duration += w.Duration
	}
	return &u
}

// TestCPUWindowCallsType: a window without counted functions has no
// calls/count column (it would be all zeros); one with them has it, and the
// counts are on it.
func TestCPUWindowCallsType(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	w := cpuWindow(r, 0)
	with, err := EncodeCPUWindow(w)
	if err != nil {
		t.Fatal(err)
	}
	calls := w.Calls
	w.Calls = nil
	without, err := EncodeCPUWindow(w)
	if err != nil {
		t.Fatal(err)
	}
	types := func(p *profile.Profile) (ts []string) {
		for _, st := range p.SampleType {
			ts = append(ts, st.Type+"/"+st.Unit)
		}
		return ts
	}
	if got := types(without); !reflect.DeepEqual(got, []string{"samples/count", "cpu/nanoseconds"}) {
		t.Errorf("window without counted functions has sample types %v", got)
	}
	if got := types(with); !reflect.DeepEqual(got, []string{"samples/count", "cpu/nanoseconds", "calls/count"}) {
		t.Errorf("window with counted functions has sample types %v", got)
	}
	want := []CallCount{{Function: calls[0].Function, Calls: calls[0].Calls}, {Function: calls[1].Function, Calls: calls[1].Calls}}
	if got := sampleCallCounts(with); !reflect.DeepEqual(got, want) {
		t.Errorf("call counts of the window: %+v", got)
	}
	if !IsMergeable(without) || !IsMergeable(with) {
		t.Error("CPU windows not mergeable")
	}
	plain, err := EncodeCPU(cpuWindow(r, 1))
	if err != nil {
		t.Fatal(err)
	}
	if IsMergeable(plain) {
		t.Error("a CPU profile with call counts in comments is mergeable")
	}
}

func TestMergedCPUWindowsReportAsUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 2, 6, 30} {
		var ws []*sampler.Profile
		var ps []*profile.Profile
		for i := 0; i < n; i++ {
			w := cpuWindow(r, i)
			ws = append(ws, w)
			p, err := EncodeCPUWindow(w)
			if err != nil {
				t.Fatal(err)
			}
			// Through the wire format, as a backend receives it.
			ps = append(ps, roundTrip(t, p))
		}
		merged, err := profile.Merge(ps)
		if err != nil {
			t.Fatal(err)
		}
		if !IsMergeable(merged) {
			t.Fatal("merged CPU profile not recognised as mergeable")
		}
		want, err := EncodeCPU(union(ws))
		if err != nil {
			t.Fatal(err)
		}
		for _, conf := range []float64{0.9, 0.99} {
			o := estimate.Options{Confidence: conf}
			got, err := CPUReport(merged, o)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := CPUReport(want, o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Samples != exp.Samples || got.Total != exp.Total || got.Period != exp.Period {
				t.Errorf("n=%d: totals %d/%v/%v, union %d/%v/%v", n, got.Samples, got.Total, got.Period, exp.Samples, exp.Total, exp.Period)
			}
			if !reflect.DeepEqual(got.Rows, exp.Rows) {
				t.Errorf("n=%d conf=%v: rows of the merged windows differ from the union's:\n%+v\n%+v", n, conf, got.Rows, exp.Rows)
			}
			if len(exp.PerCall) == 0 || !reflect.DeepEqual(got.PerCall, exp.PerCall) {
				t.Errorf("n=%d: time per call of the merged windows %+v, union %+v", n, got.PerCall, exp.PerCall)
			}
			if got.Duration != float64(time.Duration(n)*10*time.Second) {
				t.Errorf("n=%d: merged duration %v", n, got.Duration)
			}
		}
	}
}

// timeWindows simulates a target of mean duration et timed with a dithered
// clock of resolution d (c_i = floor(T_i/d + U), U uniform), in n windows;
// it returns the window profiles and the raw per-call counts of all of them.
func timeWindows(t *testing.T, r *rand.Rand, n int, d, et float64) ([]*profile.Profile, []uint64, []estimate.Batch) {
	var ps []*profile.Profile
	var all []uint64
	var bs []estimate.Batch
	for i := 0; i < n; i++ {
		calls := 50 + r.IntN(500)
		tw := &TimeWindow{Clock: "tick:1us", Resolution: d, Confidence: 0.95,
			Start: time.Unix(1700000000+int64(10*i), 0), Duration: 10 * time.Second}
		var tg TimeWindowTarget
		tg.Name, tg.Binary = "main.work", "/bin/app"
		for k := 0; k < calls; k++ {
			dur := et * r.ExpFloat64() // long right tail
			c := uint64(math.Floor(dur/d + r.Float64()))
			tg.Calls++
			tg.Ticks += c
			tg.TicksSq += c * c
			all = append(all, c)
		}
		bs = append(bs, estimate.Batch{Calls: tg.Calls, Ticks: tg.Ticks})
		tw.Targets = []TimeWindowTarget{tg, {Name: "read", Calls: uint64(r.IntN(3))}}
		p, err := EncodeTimeWindow(tw)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, roundTrip(t, p))
	}
	return ps, all, bs
}

// windowBatchMeans is the symmetric batch-means interval (ns) over the
// windows' raw counts: m/(m-1) sum (S_j - R n_j)^2 / n^2, Student t.
func windowBatchMeans(bs []estimate.Batch, d, conf float64) (lo, hi float64) {
	var n, s float64
	for _, b := range bs {
		n += float64(b.Calls)
		s += float64(b.Ticks)
	}
	r := s / n
	var ss float64
	for _, b := range bs {
		e := float64(b.Ticks) - r*float64(b.Calls)
		ss += e * e
	}
	m := float64(len(bs))
	se := d * math.Sqrt(m/(m-1)*ss) / n
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: m - 1}.Quantile(1 - (1-conf)/2)
	return math.Max(0, d*r-q*se), d*r + q*se
}

func TestMergedTimeWindowsReportAsUnion(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	const d = 1000.0
	for _, n := range []int{1, 3, 12} {
		ps, raw, bs := timeWindows(t, r, n, d, 2300)
		merged, err := profile.Merge(ps)
		if err != nil {
			t.Fatal(err)
		}
		if !IsTimeProfile(merged) || !IsMergeable(merged) {
			t.Fatal("merged windows not read as a mergeable time profile")
		}
		tab, err := TimeReport(merged)
		if err != nil {
			t.Fatal(err)
		}
		var c estimate.Counts
		c.Resolution, c.HasTicksSq = d, true
		for _, v := range raw {
			c.Calls++
			c.Ticks += v
			c.TicksSq += v * v
		}
		want, err := estimate.Time(c, estimate.Options{Confidence: 0.95})
		if err != nil {
			t.Fatal(err)
		}
		var row *TimeRow
		for i := range tab.Rows {
			if tab.Rows[i].Target == "main.work" {
				row = &tab.Rows[i]
			}
		}
		if row == nil || !row.HasEstimate {
			t.Fatalf("n=%d: no estimate for main.work: %+v", n, tab.Rows)
		}
		// The widest of the union's interval and the windows' batch means.
		if n > 1 {
			if lo, hi := windowBatchMeans(bs, d, 0.95); hi-lo > want.High-want.Low {
				want.Low, want.High, want.Method = lo, hi, "window-batch-means"
			}
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
		if row.Calls != c.Calls || row.Ticks != c.Ticks || row.Mean != want.Mean || !near(row.Low, want.Low) || !near(row.High, want.High) || row.Method != want.Method {
			t.Errorf("n=%d: merged %+v, union of the raw counts %+v", n, *row, want)
		}
		if tab.Confidence != 0.95 {
			t.Errorf("confidence %v", tab.Confidence)
		}
		work := 0
		for _, s := range merged.Sample {
			if s.Label["target"][0] == "main.work" {
				work++
			}
		}
		if work != 1 {
			t.Errorf("merged profile has %d samples of main.work, want one", work)
		}
	}
}

func TestMergedTimeDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	base, _, _ := timeWindows(t, r, 4, 1000, 2000)
	slow, _, _ := timeWindows(t, r, 4, 1000, 4000)
	bm, _ := profile.Merge(base)
	nm, _ := profile.Merge(slow)
	tab, err := Diff(bm, nm, estimate.Options{Confidence: 0.95}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 1 || tab.Rows[0].Name != "main.work" || !tab.Rows[0].Significant() {
		t.Errorf("diff of merged windows (mean doubled): %+v", tab.Rows)
	}
}

// roundTrip writes p in the pprof format and reads it back.
func roundTrip(t *testing.T, p *profile.Profile) *profile.Profile {
	t.Helper()
	q, err := ReadProfile(encode(t, p), "window")
	if err != nil {
		t.Fatal(err)
	}
	return q
}
