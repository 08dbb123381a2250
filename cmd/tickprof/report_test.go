// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// runTickprof runs the root command with args and returns stdout, stderr
// and the exit status main would use.
func runTickprof(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		errb.WriteString("tickprof: " + err.Error() + "\n")
		return out.String(), errb.String(), cli.ExitCode(err)
	}
	return out.String(), errb.String(), 0
}

func writeRuntimeProfile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	testtarget.CPUProfile(t, f, 300*time.Millisecond)
}

func TestReportRuntimePprofFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	writeRuntimeProfile(t, file)
	out, errs, code := runTickprof(t, "report", "--top", "5", file)
	if code != 0 {
		if strings.Contains(errs, "holds no samples") {
			t.Skip("runtime/pprof took no samples (machine too busy)")
		}
		t.Fatalf("report exited %d: %s", code, errs)
	}
	for _, s := range []string{"samples of 10.0 ms CPU each", "95% confidence", "flat% [95%]"} {
		if !strings.Contains(out, s) {
			t.Errorf("report output lacks %q:\n%s", s, out)
		}
	}
	out, _, code = runTickprof(t, "report", "--json", "--confidence", "90%", file)
	var tab export.CPUTable
	if code != 0 || json.Unmarshal([]byte(out), &tab) != nil || tab.Confidence != 0.9 || len(tab.Rows) == 0 {
		t.Errorf("report --json: exit %d, %+v\n%s", code, tab, out)
	}
	out, _, code = runTickprof(t, "diff", file, file)
	if code != 0 || !strings.Contains(out, "no significant change") {
		t.Errorf("diff of a profile with itself: exit %d\n%s", code, out)
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("this is not a profile\n"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report", junk}, 1, "not a pprof profile"},
		{[]string{"report", empty}, 1, "is empty"},
		{[]string{"report", filepath.Join(dir, "missing")}, 1, "no such file"},
		{[]string{"report"}, 2, "one profile FILE"},
		{[]string{"report", "--confidence", "150%", junk}, 2, "confidence"},
		{[]string{"diff", junk}, 2, "two profiles"},
		{[]string{"diff", junk, junk}, 1, "not a pprof profile"},
		{[]string{"sample"}, 2, "exactly one target"},
		{[]string{"sample", "-p", "1", "--all"}, 2, "exactly one target"},
		{[]string{"sample", "-F", "0", "--all"}, 2, "-F 0"},
		{[]string{"sample", "--all", "--count", "main.f"}, 2, "name the file"},
		{[]string{"sample", "--all", "--duration", "-1s"}, 2, "--duration"},
	} {
		_, errs, code := runTickprof(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("tickprof %v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}

// TestSampleCommand runs `tickprof sample` on a C target and reads the file
// back with `tickprof report`.
func TestSampleCommand(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	burn := testtarget.Burn(t)
	file := filepath.Join(dir, "cpu.pb.gz")
	out, errs, code := runTickprof(t, "sample", "-F", "999", "-o", file, "--count", "burn_a", "--top", "3",
		"--", burn, "1", filepath.Join(dir, "truth"))
	if code != 0 {
		t.Fatalf("sample exited %d: %s", code, errs)
	}
	for _, s := range []string{"burn_a", "time per call", "calls,"} {
		if !strings.Contains(out, s) {
			t.Errorf("sample output lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(errs, "profile written to "+file) {
		t.Errorf("stderr: %s", errs)
	}
	out, errs, code = runTickprof(t, "report", "--top", "3", file)
	if code != 0 || !strings.Contains(out, "burn_a") || !strings.Contains(out, "time per call") {
		t.Errorf("report of the sampled file: exit %d %s\n%s", code, errs, out)
	}
	// --duration stops a longer run and still writes the file.
	file2 := filepath.Join(dir, "cut.pb.gz")
	start := time.Now()
	_, errs, code = runTickprof(t, "sample", "-F", "499", "--duration", "500ms", "-o", file2, "--", burn, "30", filepath.Join(dir, "truth2"))
	if code != 0 || time.Since(start) > 20*time.Second {
		t.Fatalf("sample --duration: exit %d after %v: %s", code, time.Since(start), errs)
	}
	if _, err := os.Stat(file2); err != nil {
		t.Errorf("no profile after --duration: %v", err)
	}
}

// TestSampleCountLibrary counts a function of a shared library named as
// -u names it (LIB:SYMBOL): the one target parser serves both commands.
func TestSampleCountLibrary(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	burn := testtarget.Burn(t)
	out, errs, code := runTickprof(t, "sample", "-F", "99", "-o", "", "--count", "libc:clock_gettime", "--",
		burn, "1", filepath.Join(dir, "truth"))
	if code != 0 {
		t.Fatalf("sample --count libc:clock_gettime exited %d: %s", code, errs)
	}
	m := regexp.MustCompile(`clock_gettime .*\((\d+) calls`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Errorf("no calls of libc's clock_gettime counted:\n%s", out)
	}
}
