// SPDX-License-Identifier: Apache-2.0

package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/timing"
)

// evilName is a function name that, printed raw, sets the terminal's
// title, clears the screen, returns the cursor and turns on a C1 control
// and a right-to-left override.
const evilName = "evil\x1b]0;pwned\x07\x1b[2J\rX\u009b1m\u202eeman"

// rawControls lists the control bytes found in out (none may reach a
// terminal but newlines and tabs) and whether a C1 or bidi character did.
func rawControls(out []byte) []byte {
	var bad []byte
	for _, c := range out {
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			bad = append(bad, c)
		}
	}
	if bytes.Contains(out, []byte("\u009b")) || bytes.Contains(out, []byte("\u202e")) {
		bad = append(bad, 0x9b)
	}
	return bad
}

// runRaw runs tickprof and returns its stdout and stderr as bytes.
func runRaw(t *testing.T, args ...string) (stdout, stderr []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = work
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	return o.Bytes(), e.Bytes()
}

// TestEscapesNamesFromFiles: a crafted CPU profile and a crafted time
// profile name a function and a target with terminal control sequences:
// report, diff and plan --from print them escaped, in text and in JSON,
// and JSON still decodes to the exact name.
func TestEscapesNamesFromFiles(t *testing.T) {
	dir := t.TempDir()
	fn := &profile.Function{ID: 1, Name: evilName, SystemName: evilName}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	cpu := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10000000,
		Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
		Sample: []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{40, 400000000}}},
	}
	cpuFile := filepath.Join(dir, "cpu.pb.gz")
	if err := export.WriteProfileFile(cpuFile, cpu); err != nil {
		t.Fatal(err)
	}
	run := &timing.Result{Clock: "ns", Resolution: 1, Confidence: 0.95, Targets: []timing.TargetResult{
		{Name: evilName, Kind: "user", Calls: 1000, Ticks: 100000, Estimate: estimate.Result{Mean: 100, Low: 90, High: 110, Confidence: 0.95, Calls: 1000}}}}
	tp, err := export.EncodeTime(run)
	if err != nil {
		t.Fatal(err)
	}
	timeFile := filepath.Join(dir, "time.pb.gz")
	if err := export.WriteProfileFile(timeFile, tp); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"report", cpuFile}, {"report", "--json", cpuFile},
		{"report", timeFile}, {"report", "--json", timeFile},
		{"diff", "--all", cpuFile, cpuFile}, {"diff", "--all", "--json", cpuFile, cpuFile},
		{"plan", "--from", timeFile, "--precision", "5%"}, {"plan", "--from", timeFile, "--precision", "5%", "--json"},
	} {
		out, errs := runRaw(t, args...)
		if bad := rawControls(append(out, errs...)); len(bad) > 0 {
			t.Errorf("tickprof %v: control bytes % x reached the terminal:\n%q", args, bad, out)
		}
		if !bytes.Contains(out, []byte("evil")) {
			t.Errorf("tickprof %v: the function is not shown:\n%s%s", args, out, errs)
		}
		if args[1] == "--json" || args[len(args)-1] == "--json" {
			if !strings.Contains(jsonStrings(t, out), evilName) {
				t.Errorf("tickprof %v: JSON does not hold the exact name:\n%q", args, out)
			}
		}
	}
}

// jsonStrings decodes a JSON document and returns every string it holds,
// joined.
func jsonStrings(t *testing.T, doc []byte) string {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("output is not JSON: %v:\n%s", err, doc)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// TestEscapesSymbolNames samples a program whose hot function's symbol
// was renamed with objcopy to hold terminal control sequences: the table
// shows it escaped, the pprof file holds it exactly.
func TestEscapesSymbolNames(t *testing.T) {
	bpftest.Require(t)
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		t.Skip("objcopy not installed")
	}
	burn := testtarget.Sampled(t, "burn", "burnevil")
	evil := filepath.Join(t.TempDir(), "burnevil")
	if out, err := exec.Command(objcopy, "--redefine-sym", "burn_a="+evilName, burn, evil).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	os.Chmod(evil, 0o755)
	prof := filepath.Join(t.TempDir(), "out.pb.gz")
	out, errs := runRaw(t, "sample", "--duration", "2s", "-o", prof, "--", evil, "30", "/dev/null")
	if bad := rawControls(append(out, errs...)); len(bad) > 0 {
		t.Errorf("control bytes % x reached the terminal:\n%q\n%q", bad, out, errs)
	}
	if !bytes.Contains(out, []byte(`evil\x1b]0;pwned\x07`)) {
		t.Errorf("the renamed function is not shown escaped:\n%s", out)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, fn := range p.Function {
		found = found || fn.Name == evilName
	}
	if !found {
		t.Errorf("the profile does not hold the exact name %q", evilName)
	}
}
