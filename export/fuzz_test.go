// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// seedProfiles returns encoded profiles of each kind the readers meet: a
// CPU profile, a tickprof time profile, a goroutine profile, one with
// negative values.
func seedProfiles(t testing.TB) [][]byte {
	var out [][]byte
	enc := func(p *profile.Profile) {
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf.Bytes())
		buf.Reset()
		p.WriteUncompressed(&buf)
		out = append(out, buf.Bytes())
	}
	enc(cpuProfile(5, 3, 1))
	enc(cpuProfile(5, -3))
	run := &timing.Result{Clock: "jiffies", Resolution: 4e6, Confidence: 0.95, Duration: time.Second,
		Targets: []timing.TargetResult{
			{Name: "main.f", Kind: "user", Calls: 1000, Ticks: 25, Estimate: estimate.Result{Mean: 100000, Low: 60000, High: 150000, Confidence: 0.95}},
			{Name: "idle", Kind: "user", Err: "no calls"},
		}}
	if p, err := EncodeTime(run); err == nil {
		enc(p)
	}
	g := cpuProfile(7)
	g.SampleType = []*profile.ValueType{{Type: "goroutine", Unit: "count"}, {Type: "x", Unit: "y"}}
	enc(g)
	return out
}

// report runs what `tickprof report` runs on a profile and checks the
// table: shares and intervals inside [0, 1], times not negative.
func report(t *testing.T, p *profile.Profile) {
	if IsTimeProfile(p) {
		tab, err := TimeReport(p)
		if err != nil {
			return
		}
		for _, r := range tab.Rows {
			if r.HasEstimate && (r.Low < 0 || r.Low > r.Mean || r.Mean > r.High) {
				t.Fatalf("time row %+v: not 0 <= low <= mean <= high", r)
			}
		}
		tab.WriteText(io.Discard, 0)
		return
	}
	tab, err := CPUReport(p, estimate.Options{Confidence: 0.95})
	if err != nil {
		return
	}
	for _, r := range tab.Rows {
		for _, s := range []ShareEstimate{r.Flat, r.Cum} {
			if !(0 <= s.Low && s.Low <= s.Share && s.Share <= s.High && s.High <= 1) || s.Time < 0 || math.IsNaN(s.Time) {
				t.Fatalf("row %s: share %+v out of range", r.Function, s)
			}
		}
	}
	tab.SortByCum()
	tab.WriteText(io.Discard, 0)
}

// readFuzzed reads fuzzed bytes as a profile (ReadProfile); false when
// they are none, after checking that the error is one line.
func readFuzzed(t *testing.T, data []byte) (*profile.Profile, bool) {
	t.Helper()
	p, err := ReadProfile(data, "fuzz.pb.gz")
	if err != nil {
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of more than one line: %q", err)
		}
		return nil, false
	}
	return p, true
}

// FuzzReport feeds arbitrary bytes to the reader of `tickprof report`
// and `plan --from` (ReadProfile, then TimeReport or CPUReport): an error
// or a table in range, never a panic.
func FuzzReport(f *testing.F) {
	for _, b := range seedProfiles(f) {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("\x1f\x8b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, ok := readFuzzed(t, data); ok {
			report(t, p)
		}
	})
}

// FuzzDiff feeds two arbitrary profiles to Diff, the reader of `tickprof
// diff`.
func FuzzDiff(f *testing.F) {
	seeds := seedProfiles(f)
	for i, a := range seeds {
		f.Add(a, seeds[(i+1)%len(seeds)])
		f.Add(a, a)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		base, err := ReadProfile(a, "base")
		if err != nil {
			return
		}
		newp, err := ReadProfile(b, "new")
		if err != nil {
			return
		}
		d, err := Diff(base, newp, estimate.Options{Confidence: 0.9}, true)
		if err != nil {
			return
		}
		for _, r := range d.Rows {
			c := r.Change
			if math.IsNaN(c.Low) || math.IsNaN(c.High) || c.Low > c.High {
				t.Fatalf("row %s: change interval [%v, %v]", r.Name, c.Low, c.High)
			}
		}
		d.WriteText(io.Discard)
	})
}

// FuzzReadTimeJSON feeds arbitrary documents to ReadTimeJSON (plan --from,
// the demo, the bench harness): an error, or targets whose values are all
// in range.
func FuzzReadTimeJSON(f *testing.F) {
	var buf bytes.Buffer
	run := &timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Duration: 3 * time.Second,
		Targets: []timing.TargetResult{{Name: "f", Kind: "user", Calls: 100, Ticks: 10000,
			Estimate: estimate.Result{Mean: 100, Low: 90, High: 110, Confidence: 0.95, Method: "observed"},
			Raw:      estimate.Result{Mean: 120, Low: 110, High: 130, Confidence: 0.95}, Corrected: true,
			Overhead: estimate.Result{Mean: 20, Low: -5, High: 45, Confidence: 0.95}}}}
	WriteTimeJSON(&buf, run)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"confidence":7,"targets":[{"target":"f","calls":4,"mean_ns":1,"low_ns":0,"high_ns":2}]}`))
	f.Add([]byte(`{"targets":[]}`))
	f.Add([]byte(`{"duration_s":1e308,"targets":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ReadTimeJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		if r.Duration < 0 {
			t.Fatalf("negative duration %v", r.Duration)
		}
		for _, tg := range r.Targets {
			if tg.Err != "" {
				continue
			}
			for _, e := range []estimate.Result{tg.Estimate, tg.Raw} {
				if !(e.Confidence > 0 && e.Confidence < 1) || e.Low < 0 || !(e.Low <= e.Mean && e.Mean <= e.High) {
					t.Fatalf("target %s: %+v out of range", tg.Name, e)
				}
				// What plan --from does with it must not panic.
				z := estimate.Z(e.Confidence)
				estimate.PlanFromPilot(estimate.Result{Mean: e.Mean, Low: e.Low, High: e.High, Confidence: e.Confidence,
					StdErr: (e.High - e.Low) / 2 / z}, tg.Calls, 0.05, estimate.Options{Confidence: 0.95})
			}
		}
	})
}
