// SPDX-License-Identifier: Apache-2.0

package demo_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/demo"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

func TestDemoTruthAndTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "truth.txt")
	lines := "truth func=demo_short calls=100 mean_ns=5100.0 sd_ns=20.5\ntruth func=demo_sleep calls=10 mean_ns=1060000.0 sd_ns=900.0\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	truth, err := demo.ReadTruth(path)
	if err != nil {
		t.Fatal(err)
	}
	if truth["demo_short"].Calls != 100 || truth["demo_sleep"].Mean != 1.06e6 {
		t.Fatalf("truth %+v", truth)
	}
	// A run as `time` returns it: demo_short corrected (raw 7.3 us, less
	// the probes' in-call cost: 5.1 us, holding the truth), demo_sleep
	// corrected far from its truth, demo_medium without calls, and
	// demo_sleep2 left uncorrected (no calibration of its probe kind).
	res := func(m, lo, hi float64) estimate.Result {
		return estimate.Result{Mean: m, Low: lo, High: hi, Confidence: 0.95}
	}
	ts := &timing.Result{Resolution: 4e6, Targets: []timing.TargetResult{
		{Name: "demo_short", Calls: 100, Raw: res(7300, 7000, 7600), Estimate: res(5100, 4800, 5400), Corrected: true},
		{Name: "demo_sleep", Calls: 10, Raw: res(2e6, 1.9e6, 2.1e6), Estimate: res(1.99e6, 1.89e6, 2.09e6), Corrected: true},
		{Name: "demo_medium", Err: "0 calls: nothing to estimate"},
		{Name: "demo_sleep2", Calls: 10, Raw: res(2e6, 1.9e6, 2.1e6), Estimate: res(2e6, 1.9e6, 2.1e6)},
	}}
	var out bytes.Buffer
	if err := table.WriteDemoTable(&out, ts, demo.Means(truth)); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"demo_short", "5.10 µs", "yes", "demo_sleep", "no", "no estimate", "not corrected"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if len(demo.Source) == 0 || len(demo.Functions()) != 3 {
		t.Error("the demo workload is not embedded")
	}
}
