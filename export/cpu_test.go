// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/timing"
)

// testCPUData is a profile with known counts: 300 samples of a <- main,
// 100 of b <- main, one truncated sample of an unknown address in a, and
// 50 calls of a counted.
func testCPUData() *sampler.Profile {
	return &sampler.Profile{
		Period:   1e6,
		Start:    time.Unix(1700000000, 0),
		Duration: 2 * time.Second,
		Mappings: []sampler.ProfileMapping{
			{Start: 0x400000, Limit: 0x500000, File: "/bin/prog", BuildID: "abcd", Symbolized: true, Lines: true},
			{Start: 0xffffffff81000000, Limit: 0xffffffff82000000, File: "[kernel.kallsyms]", Symbolized: true},
		},
		Locations: []sampler.Location{
			{Address: 0x401000, Mapping: 0, Function: "a", File: "prog.c", Line: 10},
			{Address: 0x402000, Mapping: 0, Function: "b", File: "prog.c", Line: 20},
			{Address: 0x403000, Mapping: 0, Function: "main", File: "prog.c", Line: 30},
			{Address: 0x404000, Mapping: 0},
			{Address: 0xffffffff81000100, Mapping: 1, Function: "do_syscall_64"},
		},
		Samples: []sampler.Sample{
			{Locations: []int{0, 2}, Count: 300},
			{Locations: []int{1, 2}, Count: 99},
			{Locations: []int{4, 1, 2}, Count: 1},
			{Locations: []int{3}, Count: 1, Truncated: true},
		},
		Calls: []sampler.CallCount{{Function: "a", Calls: 50}},
	}
}

func encodeDecode(t *testing.T, d *sampler.Profile) *profile.Profile {
	t.Helper()
	p, err := EncodeCPU(d)
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, p)
}

func TestEncodeCPULayout(t *testing.T) {
	p := encodeDecode(t, testCPUData())
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" ||
		p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" {
		t.Errorf("sample types %v", p.SampleType)
	}
	if p.PeriodType.Type != "cpu" || p.Period != 1e6 || p.DurationNanos != 2e9 {
		t.Errorf("period %v %d, duration %d", p.PeriodType, p.Period, p.DurationNanos)
	}
	m := p.Mapping[0]
	if m.File != "/bin/prog" || m.BuildID != "abcd" || !m.HasFunctions || !m.HasFilenames || !m.HasLineNumbers {
		t.Errorf("mapping %+v", m)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[0]
		if s.Value[1] != s.Value[0]*1e6 {
			t.Errorf("cpu value %d for %d samples", s.Value[1], s.Value[0])
		}
	}
	if sum != 401 {
		t.Errorf("total %d samples, want 401", sum)
	}
	if c := CallCounts(p); len(c) != 1 || c[0] != (CallCount{"a", 50}) {
		t.Errorf("call counts %+v", c)
	}
	if _, err := EncodeCPU(&sampler.Profile{}); err == nil {
		t.Error("zero period accepted")
	}
	bad := testCPUData()
	bad.Samples[0].Locations = []int{99}
	if _, err := EncodeCPU(bad); err == nil {
		t.Error("bad location index accepted")
	}
}

func TestCPUReport(t *testing.T) {
	p := encodeDecode(t, testCPUData())
	tab, err := CPUReport(p, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Samples != 401 || tab.Period != 1e6 || tab.Truncated != 1 || tab.Confidence != 0.95 {
		t.Errorf("table header %+v", tab)
	}
	rows := map[string]FuncRow{}
	for _, r := range tab.Rows {
		rows[r.Function] = r
	}
	a := rows["a"]
	want, _ := estimate.Share(300, 401, estimate.Options{})
	if a.Flat.Hits != 300 || a.Flat.Low != want.Low || math.Abs(a.Flat.Time-300e6) > 1 {
		t.Errorf("a: %+v, want share interval %+v", a.Flat, want)
	}
	if rows["main"].Cum.Hits != 400 || rows["main"].Flat.Hits != 0 {
		t.Errorf("main: %+v", rows["main"])
	}
	if rows["b"].Cum.Hits != 100 || rows["b"].Flat.Hits != 99 {
		t.Errorf("b: %+v", rows["b"])
	}
	if _, ok := rows["prog+0x4000"]; !ok {
		t.Errorf("unknown frame not named by mapping and offset: %v", rows)
	}
	if tab.Rows[0].Function != "a" || tab.Rows[0].Uncertain {
		t.Errorf("a should rank first and certainly: %+v", tab.Rows[0])
	}
	// The 1-sample rows overlap each other.
	last := tab.Rows[len(tab.Rows)-1]
	if !last.Uncertain {
		t.Errorf("last row %+v should be marked uncertain", last)
	}
	if len(tab.PerCall) != 1 {
		t.Fatalf("per call %+v", tab.PerCall)
	}
	pc := tab.PerCall[0]
	// a is on the stack of 300 samples of 1 ms; 50 calls: 6 ms per call.
	if pc.Hits != 300 || math.Abs(pc.Mean-6e6) > 1 || !(pc.Low < 6e6 && pc.High > 6e6) {
		t.Errorf("time per call %+v", pc)
	}
	var buf bytes.Buffer
	if err := tab.WriteText(&buf, 3); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"401 samples", "95% confidence", "74.81% [", "time per call", "6.00 ms [", "more functions"} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}
}

// TestReportRuntimePprof reads a profile written by Go's runtime/pprof.
func TestReportRuntimePprof(t *testing.T) {
	var buf bytes.Buffer
	testtarget.CPUProfile(t, &buf, 400*time.Millisecond)
	p, err := ReadProfile(buf.Bytes(), "runtime")
	if errors.Is(err, ErrNoSamples) {
		t.Skip("runtime/pprof took no samples (machine too busy)")
	}
	if err != nil {
		t.Fatal(err)
	}
	tab, err := CPUReport(p, estimate.Options{Confidence: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Samples == 0 || tab.Period != 1e7 || tab.Confidence != 0.9 {
		t.Errorf("runtime/pprof table: %d samples, period %v, confidence %v", tab.Samples, tab.Period, tab.Confidence)
	}
	found := false
	for _, r := range tab.Rows {
		if strings.Contains(r.Function, "TestReportRuntimePprof") && r.Cum.Hits > 0 {
			found = true
		}
	}
	if !found {
		t.Error("the test function is not in its own profile")
	}
}

func TestReadProfileBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "is empty"},
		{"text", []byte("hello world\n"), "not a pprof profile"},
	} {
		_, err := ReadProfile(tc.data, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", tc.name, err, tc.want)
		}
	}
	// A valid profile with no samples.
	var buf bytes.Buffer
	empty := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	if err := empty.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProfile(buf.Bytes(), "nosamples"); !errors.Is(err, ErrNoSamples) {
		t.Errorf("profile without samples: %v", err)
	}
	// A heap profile has no sample type a CPU table can use.
	heap := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}},
		Sample:     []*profile.Sample{{Value: []int64{10}}},
	}
	if _, err := CPUReport(heap, estimate.Options{}); err == nil || !strings.Contains(err.Error(), "not a CPU profile") {
		t.Errorf("heap profile: %v", err)
	}
}

func TestTimeReportRoundTrip(t *testing.T) {
	run := &timing.Result{Clock: "jiffies", Resolution: 4e6, Confidence: 0.95, Duration: time.Second,
		Targets: []timing.TargetResult{
			{Name: "main.f", Kind: "user", Calls: 1000, Ticks: 25,
				Estimate: estimate.Result{Mean: 100000, Low: 60000, High: 150000, Confidence: 0.95}},
			{Name: "idle", Kind: "user", Err: "no calls"},
		}}
	p, err := EncodeTime(run)
	if err != nil {
		t.Fatal(err)
	}
	if !IsTimeProfile(p) {
		t.Fatal("EncodeTime output not recognised as a time profile")
	}
	tab, err := TimeReport(p)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Confidence != 0.95 || len(tab.Rows) != 2 {
		t.Fatalf("table %+v", tab)
	}
	r := tab.Rows[0]
	if r.Target != "main.f" || r.Calls != 1000 || !r.HasEstimate || r.Mean != 100000 || r.Low != 60000 || r.High != 150000 {
		t.Errorf("row %+v", r)
	}
	if tab.Rows[1].HasEstimate {
		t.Errorf("target without calls has an estimate: %+v", tab.Rows[1])
	}
	var buf bytes.Buffer
	tab.WriteText(&buf, 0)
	if !strings.Contains(buf.String(), "100 µs [60.0 µs, 150 µs]") || !strings.Contains(buf.String(), "95% confidence") {
		t.Errorf("text:\n%s", buf.String())
	}
}

func TestDiffCPU(t *testing.T) {
	base := encodeDecode(t, testCPUData())
	d2 := testCPUData()
	d2.Samples[0].Count = 100 // a: 300 -> 100 of about 200
	d2.Samples[1].Count = 99
	newp := encodeDecode(t, d2)
	tab, err := Diff(base, newp, estimate.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) == 0 || tab.Rows[0].Name != "a" || !tab.Rows[0].Change.Significant || tab.Rows[0].Change.Diff >= 0 {
		t.Fatalf("largest significant change should be a's drop: %+v", tab.Rows)
	}
	for _, r := range tab.Rows {
		if !r.Significant() {
			t.Errorf("insignificant row shown: %+v", r)
		}
	}
	all, err := Diff(base, newp, estimate.Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Rows) != len(tab.Rows)+tab.Hidden || all.Hidden != 0 {
		t.Errorf("--all: %d rows, default %d + %d hidden", len(all.Rows), len(tab.Rows), tab.Hidden)
	}
	same, err := Diff(base, base, estimate.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(same.Rows) != 0 {
		t.Errorf("a profile against itself shows changes: %+v", same.Rows)
	}
	var buf bytes.Buffer
	same.WriteText(&buf)
	if !strings.Contains(buf.String(), "no significant change") {
		t.Errorf("text:\n%s", buf.String())
	}
}

func TestDiffTime(t *testing.T) {
	mk := func(mean, lo, hi float64) *profile.Profile {
		p, err := EncodeTime(&timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []timing.TargetResult{
			{Name: "f", Calls: 100, Ticks: 100, Estimate: estimate.Result{Mean: mean, Low: lo, High: hi, Confidence: 0.95}}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tab, err := Diff(mk(1000, 900, 1100), mk(2000, 1900, 2100), estimate.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 1 || tab.Rows[0].Change.Diff != 1000 || !tab.Rows[0].Change.Significant {
		t.Fatalf("time diff %+v", tab.Rows)
	}
	tab, err = Diff(mk(1000, 900, 1100), mk(1050, 950, 1150), estimate.Options{}, false)
	if err != nil || len(tab.Rows) != 0 || tab.Hidden != 1 {
		t.Errorf("overlapping times: %+v %v", tab, err)
	}
	if _, err := Diff(mk(1, 0, 2), encodeDecode(t, testCPUData()), estimate.Options{}, false); err == nil {
		t.Error("time vs CPU profile accepted")
	}
}

func FuzzReadProfile(f *testing.F) {
	var buf bytes.Buffer
	p, _ := EncodeCPU(testCPUData())
	p.Write(&buf)
	f.Add(buf.Bytes())
	buf.Reset()
	tp, _ := EncodeTime(&timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []timing.TargetResult{
		{Name: "f", Calls: 1, Ticks: 1, Estimate: estimate.Result{Mean: 1, Low: 0, High: 2, Confidence: 0.95}}}})
	tp.Write(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte("not a profile"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ok := readFuzzed(t, data)
		if !ok {
			return
		}
		if IsTimeProfile(p) {
			if tab, err := TimeReport(p); err == nil {
				tab.WriteText(&bytes.Buffer{}, 0)
			}
			Diff(p, p, estimate.Options{}, true)
			return
		}
		if tab, err := CPUReport(p, estimate.Options{}); err == nil {
			tab.WriteText(&bytes.Buffer{}, 0)
			for _, r := range tab.Rows {
				if r.Flat.Low > r.Flat.Share || r.Flat.Share > r.Flat.High {
					t.Fatalf("interval does not hold the share: %+v", r.Flat)
				}
			}
		}
		Diff(p, p, estimate.Options{}, true)
	})
}

func TestEncodeCPUInlined(t *testing.T) {
	d := testCPUData()
	d.Mappings[0].Inlines = true
	d.Locations[0].Inlined = []sampler.Line{{Function: "inner", File: "inner.c", Line: 5}, {Function: "middle", File: "middle.c", Line: 7}}
	p := encodeDecode(t, d)
	var loc *profile.Location
	for _, l := range p.Location {
		if l.Address == 0x401000 {
			loc = l
		}
	}
	if loc == nil || len(loc.Line) != 3 || loc.Line[0].Function.Name != "inner" || loc.Line[1].Function.Name != "middle" ||
		loc.Line[2].Function.Name != "a" || loc.Line[0].Line != 5 || !loc.Mapping.HasInlineFrames {
		t.Fatalf("inlined location %+v", loc)
	}
	tab, err := CPUReport(p, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The innermost inlined function takes the flat samples; every level
	// counts once in cum.
	if tab.Rows[0].Function != "inner" || tab.Rows[0].Flat.Hits != 300 {
		t.Errorf("top row %+v", tab.Rows[0])
	}
	for _, r := range tab.Rows {
		if r.Function == "a" && (r.Cum.Hits != 300 || r.Flat.Hits != 0) {
			t.Errorf("a: %+v", r)
		}
	}
}
