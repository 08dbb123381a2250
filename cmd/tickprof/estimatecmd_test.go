// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// estimateJSON runs `estimate --json args...` and decodes its one object.
func estimateJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	args = append([]string{"--json"}, args...)
	out, _, err := runCommandInProcess(t, newEstimateCmd(), args...)
	if err != nil {
		t.Fatalf("estimate %q: %v", args, err)
	}
	var got map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("estimate %q: output is not JSON: %v\n%s", args, err, out)
	}
	if dec.More() {
		t.Fatalf("estimate %q printed more than one JSON object:\n%s", args, out)
	}
	return got
}

// jsonNear fails unless the JSON number key is within a relative 1e-6 of want.
func jsonNear(t *testing.T, got map[string]any, key string, want float64) {
	t.Helper()
	v, ok := got[key].(float64)
	if !ok {
		t.Errorf("JSON %q = %v (%T), want the number %v", key, got[key], got[key], want)
		return
	}
	if math.Abs(v-want) > 1e-6*math.Abs(want)+1e-9 {
		t.Errorf("JSON %q = %.10g, want %.10g", key, v, want)
	}
}

func TestEstimateTimeJSON(t *testing.T) {
	// Chan's example with the seeds' Wald interval: 3.3332 ms
	// [3.041038, 3.625362] ms (estimate/seeds_test.go).
	got := estimateJSON(t, "--resolution", "16.666ms", "--calls", "2000", "--ticks", "400", "--interval", "wald")
	jsonNear(t, got, "mean_ns", 3.3332e6)
	jsonNear(t, got, "low_ns", 3.041037507e6)
	jsonNear(t, got, "high_ns", 3.625362493e6)
	jsonNear(t, got, "confidence", 0.95)
	jsonNear(t, got, "calls", 2000)
	jsonNear(t, got, "ticks", 400)
	jsonNear(t, got, "stderr_ns", 16.666e6*math.Sqrt(0.2*0.8/2000))
	jsonNear(t, got, "rel_half_width", 0.08765225406)
	if got["method"] != "two-point" {
		t.Errorf("method %v, want two-point", got["method"])
	}

	// Lilja 6.2.3 at 95% Wald: (3.0420, 3.4605) µs; as a fraction, 0.999.
	got = estimateJSON(t, "--resolution", "40us", "--calls", "10482", "--ticks", "852", "--interval", "wald", "--confidence", "0.95")
	jsonNear(t, got, "low_ns", 3042.03343)
	jsonNear(t, got, "high_ns", 3460.542414)

	// With sum c^2 the observed variance enters; the reported interval is
	// the widest, and the candidates list says which were computed.
	got = estimateJSON(t, "--resolution", "1ms", "--calls", "100", "--ticks", "250", "--ticks-sq", "700")
	if got["method"] != "observed" {
		t.Errorf("with a wide observed spread the method should be observed, got %v", got["method"])
	}
	if c, _ := got["candidates"].([]any); len(c) != 2 {
		t.Errorf("candidates %v, want two-point and observed", got["candidates"])
	}

	// No tick crossed: mean 0, an upper bound, and a relative half-width
	// that JSON cannot hold as a number (null).
	got = estimateJSON(t, "--resolution", "4ms", "--calls", "1000", "--ticks", "0")
	jsonNear(t, got, "mean_ns", 0)
	if h, _ := got["high_ns"].(float64); !(h > 0) {
		t.Errorf("zero crossings: high_ns %v, want a positive upper bound", got["high_ns"])
	}
	if v, ok := got["rel_half_width"]; !ok || v != nil {
		t.Errorf("zero crossings: rel_half_width %v, want null", v)
	}
}

func TestEstimateBatches(t *testing.T) {
	// Beilner Table 17a, interval (1,2): ten repetitions of 10000 cycles.
	dir := t.TempDir()
	file := filepath.Join(dir, "b.txt")
	content := "# Beilner Table 17a, c(1,2)\n" +
		"10000 11931\n10000 11949\n10000 11931\n10000 11899\n10000 11912 # rep 5\n" +
		"\n10000 11906\n10000 11940\n10000 11902\n10000 11963\n10000 11935\n"
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got := estimateJSON(t, "--resolution", "1ms", "--batches", file)
	jsonNear(t, got, "mean_ns", 1192.68e3)
	jsonNear(t, got, "calls", 100000)
	jsonNear(t, got, "ticks", 119268)
	jsonNear(t, got, "batches", 10)
	var sawBatch bool
	for _, c := range got["candidates"].([]any) {
		m := c.(map[string]any)
		if m["method"] == "batch-means" {
			sawBatch = true
			// Beilner's s_dMT for (1,2), 2.139470 µs, is this standard
			// error times sqrt(10).
			if se := m["stderr_ns"].(float64) * math.Sqrt(10); math.Abs(se-2139.470339) > 1e-3 {
				t.Errorf("batch-means stderr × sqrt(10) = %v ns, want 2139.470 (Beilner Table 17b)", se)
			}
		}
	}
	if !sawBatch {
		t.Errorf("no batch-means candidate in %v", got["candidates"])
	}

	out, _, err := runCommandInProcess(t, newEstimateCmd(), "--resolution", "1ms", "--batches", file, "--contiguous")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "10 batches") || !strings.Contains(out, "95% CI [") {
		t.Errorf("human output for batches:\n%s", out)
	}
}

func TestEstimateShareJSON(t *testing.T) {
	// Lilja 6.3.1: 12 of 800 samples, 99%, Wald: (0.003930, 0.026070),
	// 31.44 to 208.56 ms of the 8 s.
	got := estimateJSON(t, "--samples", "800", "--hits", "12", "--period", "10ms", "--confidence", "99%", "--interval", "wald")
	jsonNear(t, got, "share", 0.015)
	jsonNear(t, got, "share_low", 0.003930300519)
	jsonNear(t, got, "share_high", 0.02606969948)
	jsonNear(t, got, "time_ns", 120e6)
	jsonNear(t, got, "time_low_ns", 0.003930300519*8e9)
	jsonNear(t, got, "time_high_ns", 0.02606969948*8e9)
	// The same with --elapsed 8s.
	got2 := estimateJSON(t, "--samples", "800", "--hits", "12", "--elapsed", "8s", "--confidence", "99%", "--interval", "wald")
	for _, k := range []string{"time_ns", "time_low_ns", "time_high_ns"} {
		jsonNear(t, got2, k, got[k].(float64))
	}
	// Without a period or elapsed time there is no time.
	got = estimateJSON(t, "--samples", "6000", "--hits", "658", "--interval", "wald")
	jsonNear(t, got, "share_low", 0.1017601334)
	jsonNear(t, got, "share_high", 0.1175732)
	if _, ok := got["time_ns"]; ok {
		t.Errorf("time_ns without --period or --elapsed: %v", got)
	}
	// --interval exact: Clopper-Pearson (0.006202, 0.029952).
	got = estimateJSON(t, "--samples", "800", "--hits", "12", "--confidence", "99%", "--interval", "exact")
	if got["method"] != "exact" {
		t.Errorf("--interval exact: method %v", got["method"])
	}
	jsonNear(t, got, "share_low", 0.006202435966)
	jsonNear(t, got, "share_high", 0.02995242841)
	// The default names the construction it chose.
	got = estimateJSON(t, "--samples", "800", "--hits", "12")
	if m, _ := got["method"].(string); m == "" {
		t.Errorf("default interval: no method reported: %v", got)
	}
}

func TestEstimateHuman(t *testing.T) {
	out, _, err := runCommandInProcess(t, newEstimateCmd(), "--resolution", "16.666ms", "--calls", "2000", "--ticks", "400", "--interval", "wald")
	if err != nil {
		t.Fatal(err)
	}
	want := "mean 3.33 ms  95% CI [3.04 ms, 3.63 ms]  (±8.77%, two-point/wald, 2000 calls, 400 ticks)\n"
	if out != want {
		t.Errorf("human output\n got %q\nwant %q", out, want)
	}
	out, _, err = runCommandInProcess(t, newEstimateCmd(), "--samples", "800", "--hits", "12", "--period", "10ms", "--confidence", "99%", "--interval", "wald")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"share 1.50%  99% CI [0.393%, 2.61%]", "time  120 ms  99% CI [31.4 ms, 209 ms]"} {
		if !strings.Contains(out, w) {
			t.Errorf("share output lacks %q:\n%s", w, out)
		}
	}
	// Every line that prints a time also prints an interval and a level.
	out, _, err = runCommandInProcess(t, newEstimateCmd(), "--resolution", "1ms", "--calls", "100", "--ticks", "250", "--ticks-sq", "700")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(first, "95% CI [") {
		t.Errorf("estimate line without interval and confidence: %q", first)
	}
}

func TestEstimateBadInput(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(badFile, []byte("100 3\n100 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkUsageErrors(t, "estimate", newEstimateCmd, []usageCase{
		{nil, "nothing to estimate"},
		{[]string{"--calls", "10", "--ticks", "3"}, "--resolution"},
		{[]string{"--resolution", "0s", "--calls", "10", "--ticks", "3"}, "above zero"},
		{[]string{"--resolution", "1ms"}, "--calls and --ticks"},
		{[]string{"--resolution", "1ms", "--calls", "10"}, "--calls needs --ticks"},
		{[]string{"--resolution", "1ms", "--ticks", "10"}, "--ticks needs --calls"},
		{[]string{"--resolution", "1ms", "--calls", "-5", "--ticks", "3"}, "negative"},
		{[]string{"--resolution", "1ms", "--calls", "ten", "--ticks", "3"}, "not a non-negative integer"},
		{[]string{"--resolution", "1ms", "--calls", "0", "--ticks", "0"}, "no calls"},
		{[]string{"--resolution", "1ms", "--calls", "0", "--ticks", "5"}, "no calls"},
		{[]string{"--resolution", "1ms", "--calls", "10", "--ticks", "30", "--ticks-sq", "5"}, "inconsistent"},
		{[]string{"--resolution", "1ms", "--calls", "10", "--ticks", "3", "--confidence", "95"}, "ambiguous"},
		{[]string{"--resolution", "1ms", "--calls", "10", "--ticks", "3", "--interval", "bogus"}, "wald, wilson or exact"},
		{[]string{"--resolution", "1ms", "--batches", filepath.Join(dir, "missing.txt")}, "--batches"},
		{[]string{"--resolution", "1ms", "--batches", badFile}, "line 2"},
		{[]string{"--resolution", "1ms", "--batches", badFile, "--calls", "5", "--ticks", "1"}, "not both"},
		{[]string{"--resolution", "1ms", "--calls", "10", "--ticks", "3", "--samples", "5"}, "cannot be combined"},
		{[]string{"--samples", "10", "--hits", "11"}, "cannot exceed"},
		{[]string{"--samples", "0", "--hits", "0"}, "no samples"},
		{[]string{"--samples", "10"}, "both --samples"},
		{[]string{"--hits", "3"}, "both --samples"},
		{[]string{"--samples", "10", "--hits", "3", "--period", "1ms", "--elapsed", "1s"}, "not both"},
		{[]string{"--samples", "10", "--hits", "3", "--period", "-1ms"}, "negative"},
		{[]string{"--samples", "10", "--hits", "3", "--elapsed", "0"}, "above zero"},
		{[]string{"--samples", "10", "--hits", "3", "stray"}, "takes no arguments"},
		{[]string{"--samples"}, "needs an argument"},
	})
}

func TestEstimateHelpDocumentsFlags(t *testing.T) {
	checkHelpFlags(t, "estimate", newEstimateCmd, []string{"--resolution", "--calls", "--ticks", "--ticks-sq", "--batches", "--contiguous",
		"--samples", "--hits", "--period", "--elapsed", "--confidence", "--interval", "--json"})
}

// TestPlanEstimateRegistered checks both commands are reachable from the
// root command.
func TestPlanEstimateRegistered(t *testing.T) {
	root := newRootCmd()
	for _, name := range []string{"plan", "estimate"} {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			t.Errorf("root command does not register %s: %v", name, err)
		}
	}
}
