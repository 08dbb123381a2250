// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
)

// runCommandInProcess executes a freshly built command with args and
// returns what it printed on stdout and stderr and the error Execute
// returned.
func runCommandInProcess(t *testing.T, cmd *cobra.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// checkUsageError fails unless err is a one-line usage error (exit status 2)
// whose message contains want.
func checkUsageError(t *testing.T, args []string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%q: no error, want one mentioning %q", args, want)
		return
	}
	if code := cli.ExitCode(err); code != 2 {
		t.Errorf("%q: exit status %d for %q, want 2", args, code, err)
	}
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("%q: error %q, want one line mentioning %q", args, msg, want)
	}
}

func TestPlanJSON(t *testing.T) {
	cases := []struct {
		args       []string
		executions uint64
		runTimeNs  float64 // 0: no run time expected
	}{
		// Chan eq. 5: 1536.6 -> 1537 (see estimate/seeds_test.go).
		{[]string{"--resolution", "16.666ms", "--expect", "3.3332ms", "--precision", "10%"}, 1537, 0},
		// Chan eq. 5c at 80%.
		{[]string{"--resolution", "16.666ms", "--expect", "3.3332ms", "--precision", "0.1", "--confidence", "0.80"}, 657, 0},
		// Danzig Figure 2, 1 ms to three digits, 10 ms per iteration.
		{[]string{"--resolution", "20ms", "--expect", "1ms", "--digits", "3", "--loop", "10ms"}, 729878, 729878 * 10e6},
		// Beilner Table 15, (90%, p = 0.1), d/ET = 20; at 400 cycles/s.
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--confidence", "90%", "--rate", "400/s"}, 20563, 20563.0 / 400 * 1e9},
		// Danzig eq. 4 as an absolute error: ±10 µs on 1 ms with 20 ms.
		{[]string{"--resolution", "20ms", "--expect", "1ms", "--abs-error", "10us"}, 729878, 0},
	}
	for _, c := range cases {
		args := append([]string{"--json"}, c.args...)
		out, _, err := runCommandInProcess(t, newPlanCmd(), args...)
		if err != nil {
			t.Errorf("plan %q: %v", args, err)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("plan %q: output is not one JSON object: %v\n%s", args, err, out)
			continue
		}
		for _, k := range []string{"executions", "resolution_ns", "expect_ns", "confidence", "half_width_ns", "rel_half_width"} {
			if _, ok := got[k]; !ok {
				t.Errorf("plan %q: JSON lacks %q", args, k)
			}
		}
		if !strings.Contains(out, `"executions": `) || strings.Contains(out, `"executions": `+"\"") {
			t.Errorf("plan %q: executions is not a JSON number", args)
		}
		if e, _ := got["executions"].(float64); uint64(e) != c.executions || e != math.Trunc(e) {
			t.Errorf("plan %q: executions %v, want %d", args, got["executions"], c.executions)
		}
		rt, hasRT := got["run_time_ns"].(float64)
		if c.runTimeNs == 0 && hasRT {
			t.Errorf("plan %q: run_time_ns %v without --rate or --loop", args, rt)
		}
		if c.runTimeNs != 0 && math.Abs(rt-c.runTimeNs) > 1e-9*c.runTimeNs {
			t.Errorf("plan %q: run_time_ns %v, want %v", args, rt, c.runTimeNs)
		}
	}
}

func TestPlanHuman(t *testing.T) {
	out, _, err := runCommandInProcess(t, newPlanCmd(), "--resolution", "20ms", "--expect", "1ms", "--digits", "3", "--loop", "10ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"729878 executions", "95% confidence", "expected 1 ms", "resolution 20 ms", "run time  7300 s (2.03 h)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	// A whole number of ticks: the model predicts no spread; say so.
	out, _, err = runCommandInProcess(t, newPlanCmd(), "--resolution", "1ms", "--expect", "2ms", "--precision", "5%")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "note:") || !strings.Contains(out, "1 execution ") {
		t.Errorf("plan for a whole number of ticks should plan one execution and warn:\n%s", out)
	}
}

func TestPlanBadInput(t *testing.T) {
	checkUsageErrors(t, "plan", newPlanCmd, []usageCase{
		{[]string{"--expect", "1ms", "--precision", "5%"}, "--resolution"},
		{[]string{"--resolution", "1ms", "--precision", "5%"}, "--expect"},
		{[]string{"--resolution", "0ms", "--expect", "1ms", "--precision", "5%"}, "above zero"},
		{[]string{"--resolution", "-1ms", "--expect", "1ms", "--precision", "5%"}, "negative"},
		{[]string{"--resolution", "1", "--expect", "1ms", "--precision", "5%"}, "no unit"},
		{[]string{"--resolution", "1ms", "--expect", "50us"}, "exactly one of --precision"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--digits", "3"}, "exactly one of --precision"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "0%"}, "above zero"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5"}, "ambiguous"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--digits", "0"}, "--digits"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--digits", "x"}, "invalid argument"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--abs-error", "0s"}, "above zero"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--confidence", "100%"}, "--confidence"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--rate", "0/s"}, "--rate"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--rate", "5/s", "--loop", "1ms"}, "not both"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--loop", "zero"}, "--loop"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "--bogus"}, "unknown flag"},
		{[]string{"--resolution", "1ms", "--expect", "50us", "--precision", "5%", "extra"}, "takes no arguments"},
	})
}

// usageCase is a command line and what its usage error must mention.
type usageCase struct {
	args []string
	want string
}

// checkUsageErrors runs a command made by newCmd on each case: each must be
// a usage error (checkUsageError) and print nothing.
func checkUsageErrors(t *testing.T, name string, newCmd func() *cobra.Command, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		out, _, err := runCommandInProcess(t, newCmd(), c.args...)
		checkUsageError(t, c.args, err, c.want)
		if out != "" {
			t.Errorf("%s %q printed %q despite the error", name, c.args, out)
		}
	}
}

func TestPlanHelpDocumentsFlags(t *testing.T) {
	checkHelpFlags(t, "plan", newPlanCmd, []string{"--resolution", "--expect", "--confidence", "--precision", "--abs-error", "--digits", "--rate", "--loop", "--json"})
}

// checkHelpFlags fails unless the --help output of a command made by newCmd
// documents every flag on its own line with an example ("e.g."; --json
// lists its keys instead) and has an examples section.
func checkHelpFlags(t *testing.T, name string, newCmd func() *cobra.Command, flags []string) {
	t.Helper()
	help, _, err := runCommandInProcess(t, newCmd(), "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range flags {
		line := ""
		_, flagsPart, _ := strings.Cut(help, "\nFlags:\n")
		for _, l := range strings.Split(flagsPart, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), f+" ") {
				line = l
				break
			}
		}
		switch {
		case line == "":
			t.Errorf("%s --help does not document %s", name, f)
		case f == "--json":
			if !strings.Contains(line, "keys") {
				t.Errorf("%s --help line for --json does not list the keys: %q", name, line)
			}
		case !strings.Contains(line, "e.g."):
			t.Errorf("%s --help line for %s has no example: %q", name, f, line)
		}
	}
	if !strings.Contains(help, "Examples:") {
		t.Errorf("%s --help has no examples section", name)
	}
}

// TestPlanOverhead checks plan --overhead: 200,000 calls a second at
// 1.5 us a call is a probe load of 0.3, so a 1% budget allows a duty of
// 0.01 / (0.3 * 1.01); 121391 executions at that duty take 18.4 s, less
// than the 30 windows of 50 ms the windowed estimate needs (45.45 s).
func TestPlanOverhead(t *testing.T) {
	out, _, err := runCommandInProcess(t, newPlanCmd(), "--resolution", "4ms", "--expect", "50us", "--precision", "5%",
		"--rate", "200000/s", "--overhead", "1%", "--cost", "1.5us", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Duty    float64 `json:"duty_cycle"`
		RunTime float64 `json:"budget_run_time_ns"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := 0.01 / (0.3 * 1.01); math.Abs(p.Duty-want) > 1e-9 {
		t.Errorf("duty %v, want %v", p.Duty, want)
	}
	if want := 30 * 50e6 / p.Duty; math.Abs(p.RunTime-want) > 1 {
		t.Errorf("run time %v ns, want %v (30 windows)", p.RunTime, want)
	}
	_, _, err = runCommandInProcess(t, newPlanCmd(), "--resolution", "4ms", "--expect", "50us", "--precision", "5%", "--overhead", "1%")
	checkUsageError(t, []string{"--overhead without --rate"}, err, "--overhead needs --rate")
}
