package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/testdata/demo"
)

func TestDemoTruthAndTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "truth.txt")
	lines := "truth func=demo_short calls=100 mean_ns=5100.0 sd_ns=20.5\ntruth func=demo_sleep calls=10 mean_ns=1060000.0 sd_ns=900.0\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	truth, err := readTruth(path)
	if err != nil {
		t.Fatal(err)
	}
	if truth["demo_short"].calls != 100 || truth["demo_sleep"].mean != 1.06e6 {
		t.Fatalf("truth %+v", truth)
	}
	f := func(v float64) *float64 { return &v }
	ts := demoTargets{resolution: 4e6, targets: []demoTarget{
		// Raw 7.3 us includes a 2.2 us overhead: corrected 5.1 us holds the truth.
		{Target: "demo_short", Calls: 100, MeanNs: f(7300), LowNs: f(7000), HighNs: f(7600), Confidence: 0.95},
		// An interval far from the truth says so.
		{Target: "demo_sleep", Calls: 10, MeanNs: f(2e6), LowNs: f(1.9e6), HighNs: f(2.1e6), Confidence: 0.95},
		{Target: "demo_medium", Calls: 0, Confidence: 0.95, Error: "0 calls: nothing to estimate"},
	}}
	o := calibrate.Overhead{Kind: "user", MeanNs: 2200, LowNs: 2100, HighNs: 2300, StdErrNs: 100 / 1.959963984540054, Confidence: 0.95}
	var out bytes.Buffer
	if err := writeDemoTable(&out, ts, truth, o); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"demo_short", "5.10 µs", "yes", "demo_sleep", "no", "no estimate"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if len(demo.Source) == 0 || len(demo.Functions()) != 3 {
		t.Error("the demo workload is not embedded")
	}
}
