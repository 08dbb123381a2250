// SPDX-License-Identifier: Apache-2.0

package export

import (
	"math"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/sampler"
)

// testOffData is testCPUData with two off-CPU stacks through b: blocked
// intervals of 10 ms and 30 ms sampled at p = 0.5, and one runnable of
// 1 ms at p = 1.
func testOffData() *sampler.Profile {
	d := testCPUData()
	var blocked, runnable estimate.HTSums
	blocked.Add(10e6, 0.5)
	blocked.Add(30e6, 0.5)
	runnable.Add(1e6, 1)
	d.Samples = append(d.Samples,
		sampler.Sample{Locations: []int{4, 1, 2}, Off: &sampler.OffCPU{State: sampler.OffBlocked, HTSums: blocked}},
		sampler.Sample{Locations: []int{1, 2}, Off: &sampler.OffCPU{State: sampler.OffRunnable, HTSums: runnable}})
	return d
}

func encodeOff(t *testing.T, d *sampler.Profile, def string) *profile.Profile {
	t.Helper()
	p, err := EncodeCPU(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := AddOffCPU(p, d, def); err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, p)
}

func TestOffCPUReportSums(t *testing.T) {
	p := encodeOff(t, testOffData(), OffCPUType)
	if !IsOffCPUProfile(p) || p.DefaultSampleType != OffCPUType || OffCPUTableType(p) != OffCPUType {
		t.Fatalf("types %v default %q", p.SampleType, p.DefaultSampleType)
	}
	tab, err := OffCPUReport(p, OffCPUType, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// b: 80 ms blocked (variance 2 (10^2 + 30^2) ms^2) + 1 ms runnable.
	b := offRowOf(t, tab, "b")
	if math.Abs(b.Cum.Mean-81e6) > 1 || math.Abs(b.Cum.StdErr-math.Sqrt(2000e12)) > 1e3 || b.Cum.Calls != 3 {
		t.Errorf("b cum %+v", b.Cum)
	}
	if tab.Blocked.Mean != 80e6 || tab.Runnable.Mean != 1e6 || tab.Runnable.High != 1e6 {
		t.Errorf("blocked %+v runnable %+v", tab.Blocked, tab.Runnable)
	}
	// The kernel frame is the leaf of the blocked stack.
	if k := offRowOf(t, tab, "do_syscall_64"); k.Flat.Mean != 80e6 {
		t.Errorf("do_syscall_64 flat %v", k.Flat.Mean)
	}
	// Wall: b's CPU samples (100 of 1 ms) join its off-CPU time.
	wt, err := OffCPUReport(p, WallType, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := offRowOf(t, wt, "b"); math.Abs(w.Cum.Mean-181e6) > 1 {
		t.Errorf("b wall %v, want 181 ms", w.Cum.Mean)
	}
}

// TestOffCPUMerge: two windows merged by pprof's Merge give the report of
// their union (the sums add).
func TestOffCPUMerge(t *testing.T) {
	a, b := encodeOff(t, testOffData(), WallType), encodeOff(t, testOffData(), WallType)
	m, err := profile.Merge([]*profile.Profile{a, b})
	if err != nil {
		t.Fatal(err)
	}
	one, err := OffCPUReport(a, OffCPUType, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	two, err := OffCPUReport(m, OffCPUType, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := offRowOf(t, one, "b"), offRowOf(t, two, "b")
	if math.Abs(r2.Cum.Mean-2*r1.Cum.Mean) > 2 || math.Abs(r2.Cum.StdErr-math.Sqrt2*r1.Cum.StdErr) > 1e3 || r2.Cum.Calls != 2*r1.Cum.Calls {
		t.Errorf("merged %+v, one window %+v", r2.Cum, r1.Cum)
	}
}

func TestOffCPUReportRefuses(t *testing.T) {
	p, err := EncodeCPU(testCPUData())
	if err != nil {
		t.Fatal(err)
	}
	if IsOffCPUProfile(p) {
		t.Fatal("a CPU profile taken for an off-CPU one")
	}
	if _, err := OffCPUReport(p, OffCPUType, estimate.Options{}); err == nil {
		t.Fatal("no error for a profile without off-CPU time")
	}
}

func TestSplitOffCPU(t *testing.T) {
	cpu, has := SplitOffCPU(testOffData())
	if !has || len(cpu.Samples) != len(testCPUData().Samples) {
		t.Fatalf("split: %v, %d samples", has, len(cpu.Samples))
	}
	if _, has := SplitOffCPU(testCPUData()); has {
		t.Fatal("a CPU profile has off-CPU stacks")
	}
	if _, err := EncodeOffCPUWindow(testOffData()); err != nil {
		t.Fatal(err)
	}
}

func offRowOf(t *testing.T, tab *OffCPUTable, fn string) OffCPURow {
	t.Helper()
	for _, r := range tab.Rows {
		if r.Function == fn {
			return r
		}
	}
	t.Fatalf("no row %s", fn)
	return OffCPURow{}
}
