// SPDX-License-Identifier: Apache-2.0

package export

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

func sampleRun() *timing.Result {
	return &timing.Result{
		Clock: "jiffies", Resolution: 4e6, Confidence: 0.95, Start: time.Unix(1700000000, 0),
		Duration: 3 * time.Second, PID: 42, StopReason: "target exited",
		Targets: []timing.TargetResult{
			{
				Name: "small", Kind: "user", Binary: "/bin/app", Calls: 1000, Ticks: 2, Crossings: 2,
				Estimate: estimate.Result{Mean: 8000, Low: 1000, High: 29000, Confidence: 0.95, Method: "two-point", Dist: "exact", RelHalfWidth: 1.75},
				Callers:  []timing.Caller{{Frames: []timing.Frame{{Func: "main", File: "/bin/app", Addr: 0x1234}}, Calls: 2, Ticks: 2}},
			},
			{
				Name: "big", Kind: "user", Binary: "/bin/app", Calls: 100, Ticks: 50, Crossings: 45, Dropped: 5,
				Estimate: estimate.Result{Mean: 2e6, Low: 1.5e6, High: 2.5e6, Confidence: 0.95, Method: "observed", Dist: "z", RelHalfWidth: 0.25},
				Callers: []timing.Caller{
					{Frames: []timing.Frame{{Func: "a", File: "/bin/app", Addr: 0x10}, {Func: "main", File: "/bin/app", Addr: 0x1234}}, Calls: 30, Ticks: 33},
					{Frames: []timing.Frame{{File: "/lib/libc.so.6", Addr: 0x7f00}}, Calls: 10, Ticks: 12},
				},
			},
			{Name: "never", Kind: "user", Err: "no calls"},
		},
	}
}

func TestEncodeTime(t *testing.T) {
	r := sampleRun()
	p, err := EncodeTime(r)
	if err != nil {
		t.Fatal(err)
	}
	q := roundTrip(t, p)
	if q.DefaultSampleType != "wall" || len(q.SampleType) != 3 || q.SampleType[2].Unit != "nanoseconds" {
		t.Fatalf("sample types %v default %q", q.SampleType, q.DefaultSampleType)
	}
	// Per target, the samples add up to its exact totals; wall = d * ticks.
	calls, ticks, wall := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, s := range q.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		calls[leaf] += s.Value[0]
		ticks[leaf] += s.Value[1]
		wall[leaf] += s.Value[2]
		if s.Label["target"][0] != leaf {
			t.Errorf("sample of %s labeled %v", leaf, s.Label["target"])
		}
	}
	for _, tg := range r.Targets {
		if calls[tg.Name] != int64(tg.Calls) || ticks[tg.Name] != int64(tg.Ticks) || wall[tg.Name] != int64(4e6*float64(tg.Ticks)) {
			t.Errorf("%s: samples sum to calls %d ticks %d wall %d; want %d, %d, %v",
				tg.Name, calls[tg.Name], ticks[tg.Name], wall[tg.Name], tg.Calls, tg.Ticks, 4e6*float64(tg.Ticks))
		}
	}
	for _, s := range q.Sample {
		if s.Location[0].Line[0].Function.Name == "big" {
			if s.NumLabel["mean_ns"][0] != 2000000 || s.NumLabel["low_ns"][0] != 1500000 || s.NumUnit["high_ns"][0] != "nanoseconds" {
				t.Errorf("labels %v %v", s.NumLabel, s.NumUnit)
			}
		}
	}
	cm := strings.Join(q.Comments, "\n")
	for _, want := range []string{"clock jiffies", "confidence 95%"} {
		if !strings.Contains(cm, want) {
			t.Errorf("comments lack %q: %s", want, cm)
		}
	}
}

func TestWriteTimeJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTimeJSON(&buf, sampleRun()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"clock", "resolution_ns", "confidence", "duration_s", "pid", "targets"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("run lacks %q", k)
		}
	}
	ts := doc["targets"].([]any)
	big := ts[1].(map[string]any)
	for _, k := range []string{"target", "calls", "ticks", "mean_ns", "low_ns", "high_ns", "confidence", "method", "clock", "resolution_ns", "dropped_records"} {
		if _, ok := big[k]; !ok {
			t.Errorf("target lacks %q", k)
		}
	}
	if big["method"] != "observed/z" || big["wall_ns"].(float64) != 2e8 {
		t.Errorf("big: %v", big)
	}
	never := ts[2].(map[string]any)
	if never["mean_ns"] != nil || never["error"] != "no calls" {
		t.Errorf("a target without calls: %v", never)
	}
}

func TestWriteTimeJSONCorrected(t *testing.T) {
	r := sampleRun()
	r.Correction = "on"
	r.Go = &timing.GoStats{Morestack: 7, Expired: 3}
	big := &r.Targets[1]
	big.Raw = big.Estimate
	big.Overhead = estimate.Result{Mean: 1800, Low: 1700, High: 1900, Confidence: 0.95}
	big.Estimate = estimate.Result{Mean: 2e6 - 1800, Low: 1.5e6 - 1900, High: 2.5e6 - 1700, Confidence: 0.95, Method: "observed-minus-overhead", Dist: "z"}
	big.Corrected, big.OverheadKind = true, "user"
	big.InlinedInto = []string{"main.main"}
	var buf bytes.Buffer
	if err := WriteTimeJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Correction string `json:"overhead_correction"`
		Go         struct {
			Morestack uint64 `json:"morestack_skipped"`
			Expired   uint64 `json:"expired_entries"`
		} `json:"go"`
		Targets []map[string]any `json:"targets"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Correction != "on" || doc.Go.Morestack != 7 || doc.Go.Expired != 3 {
		t.Errorf("run: %+v", doc)
	}
	b := doc.Targets[1]
	want := map[string]any{"corrected": true, "mean_ns": 2e6 - 1800.0, "raw_mean_ns": 2e6, "raw_low_ns": 1.5e6,
		"raw_high_ns": 2.5e6, "overhead_ns": 1800.0, "overhead_low_ns": 1700.0, "overhead_high_ns": 1900.0, "overhead_kind": "user"}
	for k, v := range want {
		if b[k] != v {
			t.Errorf("%s = %v, want %v", k, b[k], v)
		}
	}
	if in, _ := b["inlined_into"].([]any); len(in) != 1 || in[0] != "main.main" {
		t.Errorf("inlined_into = %v", b["inlined_into"])
	}
	// An uncorrected target has none of the correction fields.
	for _, k := range []string{"corrected", "raw_mean_ns", "overhead_ns"} {
		if _, ok := doc.Targets[0][k]; ok {
			t.Errorf("uncorrected target has %q", k)
		}
	}
	p, err := EncodeTime(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(p.Comments, "\n"), "corrected for the probe overhead") {
		t.Errorf("profile comments: %v", p.Comments)
	}
}

func TestReadTimeJSONRoundTrip(t *testing.T) {
	r := sampleRun()
	big := &r.Targets[1]
	big.Raw = big.Estimate
	big.Overhead = estimate.Result{Mean: 1800, Low: 1700, High: 1900, Confidence: 0.95}
	big.Estimate = estimate.Result{Mean: 2e6 - 1800, Low: 1.5e6 - 1900, High: 2.5e6 - 1700, Confidence: 0.95, Method: "observed-minus-overhead", Dist: "z"}
	big.Corrected, big.OverheadKind = true, "user"
	var buf bytes.Buffer
	if err := WriteTimeJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTimeJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Clock != "jiffies" || got.Resolution != 4e6 || got.Duration != 3*time.Second || len(got.Targets) != 3 {
		t.Fatalf("run %+v", got)
	}
	s, b, n := got.Targets[0], got.Targets[1], got.Targets[2]
	if s.Name != "small" || s.Calls != 1000 || s.Estimate.Mean != 8000 || s.Estimate.Low != 1000 || s.Estimate.High != 29000 ||
		s.Estimate.Method != "two-point" || s.Estimate.Dist != "exact" || s.Raw.Mean != s.Estimate.Mean || s.Corrected {
		t.Errorf("small: %+v", s)
	}
	if !b.Corrected || b.Estimate.Mean != 2e6-1800 || b.Raw.Mean != 2e6 || b.Raw.Low != 1.5e6 || b.Raw.High != 2.5e6 ||
		b.Raw.Method != "observed" || b.Overhead.Mean != 1800 || b.OverheadKind != "user" || b.Dropped != 5 {
		t.Errorf("big: %+v", b)
	}
	if n.Err != "no calls" {
		t.Errorf("never: %+v", n)
	}
	if _, err := ReadTimeJSON(strings.NewReader(`{"clock":"ns"}`)); err == nil {
		t.Error("a document without targets was read")
	}
	if _, err := ReadTimeJSON(strings.NewReader(`not json`)); err == nil {
		t.Error("not JSON was read")
	}
}

// An unnamed frame is its file plus its offset in the file (not its
// absolute address), and a cut caller stack ends in the truncated marker.
func TestEncodeTimeUnnamedAndCut(t *testing.T) {
	r := sampleRun()
	r.Targets[1].Callers = []timing.Caller{{Frames: []timing.Frame{{File: "/usr/bin/sqlite3", Addr: 0x564b175490c4, Off: 0x490c4}}, Calls: 40, Ticks: 45, Cut: true}}
	p, err := EncodeTime(r)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range p.Sample {
		if s.Location[0].Line[0].Function.Name != "big" || len(s.Location) < 2 {
			continue
		}
		found = true
		if got := s.Location[1].Line[0].Function.Name; got != "sqlite3+0x490c4" {
			t.Errorf("unnamed frame %q, want sqlite3+0x490c4", got)
		}
		if got := s.Location[len(s.Location)-1].Line[0].Function.Name; got != TruncatedFrame {
			t.Errorf("cut stack ends in %q, want %q", got, TruncatedFrame)
		}
	}
	if !found {
		t.Error("no caller sample of big")
	}
}

// TestEncodeTimeInlinedCaller: a caller frame with inlined functions is one
// location with a line per function, the inlined ones first, each with its
// own source file and line, as the CPU profile encodes them; the mapping
// says it has lines and inlined frames. The JSON stack names every
// function.
func TestEncodeTimeInlinedCaller(t *testing.T) {
	r := sampleRun()
	r.Targets[1].Callers = []timing.Caller{{Frames: []timing.Frame{
		{Func: "level", File: "/bin/app", Addr: 0x1343, Off: 0x1343, Source: "/src/app.c", Line: 48,
			Inlined: []timing.SourceLine{{Func: "step", Source: "/src/app.c", Line: 40}}},
		{Func: "main", File: "/bin/app", Addr: 0x1136, Off: 0x1136, Source: "/src/app.c", Line: 71},
	}, Calls: 45, Ticks: 50}}
	p, err := EncodeTime(r)
	if err != nil {
		t.Fatal(err)
	}
	q := roundTrip(t, p)
	found := false
	for _, s := range q.Sample {
		if s.Location[0].Line[0].Function.Name != "big" || len(s.Location) != 3 {
			continue
		}
		found = true
		l := s.Location[1]
		if len(l.Line) != 2 || l.Line[0].Function.Name != "step" || l.Line[0].Line != 40 || l.Line[1].Function.Name != "level" ||
			l.Line[1].Line != 48 || l.Line[1].Function.Filename != "/src/app.c" || l.Address != 0x1343 {
			t.Errorf("inlined caller location %+v", l)
		}
		if m := l.Mapping; m == nil || m.File != "/bin/app" || !m.HasFunctions || !m.HasLineNumbers || !m.HasInlineFrames {
			t.Errorf("mapping %+v", m)
		}
	}
	if !found {
		t.Fatalf("no sample of big with its two caller frames")
	}
	var buf bytes.Buffer
	if err := WriteTimeJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Targets []struct {
			Callers []struct{ Stack []string }
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Targets) < 2 || len(doc.Targets[1].Callers) != 1 || strings.Join(doc.Targets[1].Callers[0].Stack, " ") != "step level main" {
		t.Errorf("JSON callers of big: %+v, want the stack step level main", doc.Targets)
	}
}
