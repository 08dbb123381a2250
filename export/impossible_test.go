// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"compress/gzip"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// timeWindowProfile is a merge-friendly time profile of one target.
func timeWindowProfile(t *testing.T, calls, ticks, ticksSq uint64) *profile.Profile {
	t.Helper()
	p, err := EncodeTimeWindow(&TimeWindow{Clock: "ns", Resolution: 1, Confidence: 0.95, Start: time.Unix(1e9, 0), Duration: time.Second,
		Targets: []TimeWindowTarget{{Name: "f", Calls: calls, Ticks: ticks, TicksSq: ticksSq}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readBack encodes p and reads it back as report, diff and plan --from
// do (ReadProfile).
func readBack(t *testing.T, p *profile.Profile) (*profile.Profile, error) {
	t.Helper()
	return ReadProfile(encode(t, p), "t.pb.gz")
}

// TestImpossibleTimeProfiles: report, diff and plan --from (which all read
// a time profile with ReadProfile and TimeReport) refuse what no run can
// have written, instead of printing it or an interval made from it.
func TestImpossibleTimeProfiles(t *testing.T) {
	// 100 calls of 1000 ticks in all have a sum of squares of at least
	// 10^4; 10 gave an interval 10^4 times too narrow.
	if _, err := TimeReport(timeWindowProfile(t, 100, 1000, 10)); err == nil {
		t.Error("ticks_sq below ticks^2/calls accepted")
	} else {
		oneLine(t, err, "ticks_sq 10 is not possible")
	}
	if _, err := TimeReport(timeWindowProfile(t, 100, 1000, 2e6)); err == nil {
		t.Error("ticks_sq above ticks^2 accepted")
	}
	if _, err := TimeReport(timeWindowProfile(t, 100, 1000, 20000)); err != nil {
		t.Errorf("a possible ticks_sq refused: %v", err)
	}
	// Two windows whose calls add up past the largest int64.
	a := timeWindowProfile(t, math.MaxInt64, 10, 100)
	a.Sample = append(a.Sample, a.Sample[0])
	if q, err := readBack(t, a); err == nil {
		_, err = TimeReport(q)
		oneLine(t, err, "add up to more than")
	}

	run := &timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []timing.TargetResult{
		{Name: "f", Kind: "user", Calls: 1000, Ticks: 100000, Estimate: estimate.Result{Mean: 100, Low: 90, High: 110, Confidence: 0.95}}}}
	base, err := EncodeTime(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string][]int64
		want   string
	}{
		{"inverted p99", map[string][]int64{"p99_ns": {200}, "p99_low_ns": {300}, "p99_high_ns": {100}}, "p99 interval"},
		{"p50 above its high", map[string][]int64{"p50_ns": {200}, "p50_low_ns": {100}, "p50_high_ns": {150}}, "p50 interval"},
		{"negative p90", map[string][]int64{"p90_ns": {-5}, "p90_low_ns": {-10}, "p90_high_ns": {3}}, "p90 interval"},
		{"min above max", map[string][]int64{"min_ns": {500}, "max_ns": {20}}, "min_ns 500, max_ns 20"},
		{"negative min", map[string][]int64{"min_ns": {-1}, "max_ns": {20}}, "min_ns -1"},
	} {
		p := base.Copy()
		for k, v := range c.labels {
			p.Sample[0].NumLabel[k] = v
		}
		q, err := readBack(t, p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = TimeReport(q)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		oneLine(t, err, c.want)
		if _, err := Diff(q, q, estimate.Options{}, true); err == nil {
			t.Errorf("%s: diff accepted it", c.name)
		}
	}
	neg := base.Copy()
	neg.DurationNanos = -5
	_, err = readBack(t, neg)
	oneLine(t, err, "duration -5 ns")
	cpu := cpuProfile(3, 4)
	cpu.DurationNanos = -1
	_, err = readBack(t, cpu)
	oneLine(t, err, "duration -1 ns")
}

// TestGzipBombBounded: a 1 MiB gzip that stands for 1 GiB is refused after
// decompressing at most 64 MiB of it (it was parsed whole: 2.6 GB).
func TestGzipBombBounded(t *testing.T) {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	bomb := bytes.Repeat(member.Bytes(), 16) // 1 GiB of zeros
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := ReadProfile(bomb, "bomb.pb.gz")
	runtime.ReadMemStats(&m1)
	oneLine(t, err, "limit")
	if a := m1.TotalAlloc - m0.TotalAlloc; a > 256<<20 {
		t.Errorf("reading a %d KiB gzip bomb allocated %d MiB", len(bomb)>>10, a>>20)
	}
	if gunzipBound(20<<20) != 640<<20 || gunzipBound(1<<20) != 64<<20 || gunzipBound(200<<20) != MaxProfileData {
		t.Errorf("gunzipBound: %d %d %d", gunzipBound(20<<20), gunzipBound(1<<20), gunzipBound(200<<20))
	}
}
