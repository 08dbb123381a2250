// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/plan"
	"github.com/tickprof/tickprof/timing"
)

// runPlanFromArgs runs `plan` (which has --from) and returns the JSON.
func runPlanFromArgs(t *testing.T, args ...string) (plan.Pilot, error) {
	t.Helper()
	cmd := newPlanCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--json"))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		return plan.Pilot{}, err
	}
	var p plan.Pilot
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("plan --from printed %q: %v", out.String(), err)
	}
	return p, nil
}

func TestPlanFromTimeJSON(t *testing.T) {
	// A pilot of 1000 calls in 1 s: mean 1000 ns ± 100 ns at 95%. For ±2%
	// the half-width must shrink 5x: 25x the calls (Lilja eq. 4.21), so
	// 24000 more calls, 24 s at 1000 calls/s.
	path := filepath.Join(t.TempDir(), "pilot.json")
	doc := `{"clock":"ns","confidence":0.95,"duration_s":1,"targets":[
	  {"target":"work","calls":1000,"mean_ns":1000,"low_ns":900,"high_ns":1100,"confidence":0.95},
	  {"target":"idle","calls":0,"mean_ns":null,"low_ns":null,"high_ns":null,"confidence":0.95,"error":"no calls"}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := runPlanFromArgs(t, "--from", path, "--precision", "2%")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Targets) != 2 {
		t.Fatalf("targets %+v", p.Targets)
	}
	w := p.Targets[0]
	if w.Need < 24990 || w.Need > 25010 || w.More != w.Need-1000 || w.MoreTimeNs == nil || math.Abs(*w.MoreTimeNs-24e9) > 0.02e9 {
		t.Errorf("work: %+v, want about 25000 calls, 24000 more, 24 s", w)
	}
	if p.Targets[1].Error == "" {
		t.Errorf("idle target planned without calls: %+v", p.Targets[1])
	}
	// Already precise enough: nothing more.
	p, err = runPlanFromArgs(t, "--from", path, "--precision", "20%")
	if err != nil {
		t.Fatal(err)
	}
	if p.Targets[0].More != 0 {
		t.Errorf("±20%% from a ±10%% pilot: more = %d, want 0", p.Targets[0].More)
	}
	// Flags that do not go with --from are usage errors.
	if _, err := runPlanFromArgs(t, "--from", path, "--expect", "1us"); err == nil || cli.ExitCode(err) != 2 {
		t.Errorf("--from with --expect: err %v, want a usage error", err)
	}
}

func TestPlanFromCorrectedJSONUsesRawSpread(t *testing.T) {
	// A corrected run: the corrected interval (±300 ns) carries the
	// overhead's uncertainty, which more calls do not shrink; the plan must
	// come from the raw spread (±100 ns on 1000 ns, as above): 25000 calls
	// for ±2%. Planning from the corrected figures would ask for far more.
	path := filepath.Join(t.TempDir(), "pilot.json")
	doc := `{"clock":"ns","confidence":0.95,"duration_s":1,"targets":[
	  {"target":"work","calls":1000,"mean_ns":500,"low_ns":200,"high_ns":800,
	   "raw_mean_ns":1000,"raw_low_ns":900,"raw_high_ns":1100,"corrected":true,"confidence":0.95}]}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := runPlanFromArgs(t, "--from", path, "--precision", "2%")
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Targets[0]; w.Need < 24990 || w.Need > 25010 {
		t.Errorf("work: need %d calls, want about 25000 (from the raw spread)", w.Need)
	}
}

func TestPlanFromTimeProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pilot.pb.gz")
	run := &timing.Result{Clock: "jiffies", Resolution: 4e6, Confidence: 0.95, Start: time.Unix(1, 0), Duration: 2 * time.Second,
		Targets: []timing.TargetResult{{Name: "f", Kind: "user", Calls: 4000, Ticks: 10,
			Estimate: estimate.Result{Mean: 10000, Low: 8000, High: 12000, Confidence: 0.95}}}}
	if err := export.WriteTimeProfile(path, run); err != nil {
		t.Fatal(err)
	}
	p, err := runPlanFromArgs(t, "--from", path, "--precision", "10%")
	if err != nil {
		t.Fatal(err)
	}
	// ±20% now, ±10% asked: 4x the calls, 12000 more at 2000 calls/s = 6 s.
	if len(p.Targets) != 1 || p.Kind != "time" {
		t.Fatalf("plan %+v", p)
	}
	f := p.Targets[0]
	if f.Need < 15990 || f.Need > 16010 || f.MoreTimeNs == nil || math.Abs(*f.MoreTimeNs-6e9) > 0.02e9 {
		t.Errorf("f: %+v, want about 16000 calls and 6 s more", f)
	}
}

func TestPlanFromCPUProfile(t *testing.T) {
	// 1000 samples over 10 s: hot has 20%. For ±5% of its share:
	// n = z^2 (1-p)/(p e^2) = 3.8415 * 0.8 / (0.2 * 0.0025) = 6146 samples.
	fnHot := &profile.Function{ID: 1, Name: "hot"}
	fnCold := &profile.Function{ID: 2, Name: "cold"}
	lHot := &profile.Location{ID: 1, Line: []profile.Line{{Function: fnHot}}}
	lCold := &profile.Location{ID: 2, Line: []profile.Line{{Function: fnCold}}}
	prof := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10e6,
		DurationNanos: 10e9,
		Function:      []*profile.Function{fnHot, fnCold},
		Location:      []*profile.Location{lHot, lCold},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lHot}, Value: []int64{200, 200 * 10e6}},
			{Location: []*profile.Location{lCold}, Value: []int64{800, 800 * 10e6}},
		},
	}
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	if err := export.WriteProfileFile(path, prof); err != nil {
		t.Fatal(err)
	}
	p, err := runPlanFromArgs(t, "--from", path, "--precision", "5%")
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != "cpu" || len(p.Targets) != 2 {
		t.Fatalf("plan %+v", p)
	}
	for _, r := range p.Targets {
		if r.Target != "hot" {
			continue
		}
		if r.Need < 6140 || r.Need > 6150 || r.More != r.Need-1000 || r.MoreTimeNs == nil || math.Abs(*r.MoreTimeNs-float64(r.More)/100*1e9) > 1e6 {
			t.Errorf("hot: %+v, want 6146 samples, at 100 samples/s", r)
		}
		return
	}
	t.Errorf("no row for hot: %+v", p.Targets)
}
