// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/sampler"
)

// The JIT tests run a program whose two functions, a and b, have identical
// bodies and are called 3:1 (testdata/jit), under a JIT that writes a perf
// map file: the two functions must be named from it, in stacks unwound
// through the JIT code to the program's start, and the share of a in a+b
// must agree with the one the program measures with its own clock.
//
// The share's interval is at 99.9% (a correct sampler fails one run in
// about 330 by chance) and widened by jitSlack on each side: the program's
// clock reads around each call count the JIT's own stubs and the call into
// the function, which the samples put in the caller.
const jitSlack = 0.03

// checkJITShare checks the profile p of a testdata/jit program that wrote
// its measured times to truth: functions a and b named, their cumulative
// share in the program's, and few stacks truncated.
func checkJITShare(t *testing.T, p *profile.Profile, truth, a, b string) {
	t.Helper()
	m := testtarget.ReadKV(t, truth)
	o := estimate.Options{Confidence: 0.999}
	tab, err := export.CPUReport(p, o)
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := findRow(t, tab, a), findRow(t, tab, b)
	share, err := estimate.Share(ra.Cum.Hits, ra.Cum.Hits+rb.Cum.Hits, o)
	if err != nil {
		t.Fatal(err)
	}
	want := m["ns_a"] / (m["ns_a"] + m["ns_b"])
	t.Logf("%s share of %s+%s: %.4f [%.4f, %.4f], measured %.4f (%d+%d samples of %d; %d truncated)",
		a, a, b, share.Share, share.Low, share.High, want, ra.Cum.Hits, rb.Cum.Hits, tab.Samples, tab.Truncated)
	if want < share.Low-jitSlack || want > share.High+jitSlack {
		t.Errorf("measured share %.4f outside [%.4f, %.4f] ± %.2f", want, share.Low, share.High, jitSlack)
	}
	if ra.Cum.Hits+rb.Cum.Hits < tab.Samples/2 {
		t.Errorf("only %d of %d samples in %s or %s", ra.Cum.Hits+rb.Cum.Hits, tab.Samples, a, b)
	}
	if tab.Truncated > tab.Samples/20 {
		t.Errorf("%d of %d stacks truncated: the walk did not get through the JIT code", tab.Truncated, tab.Samples)
	}
}

// TestNodePerfMap samples a Node.js program run with --perf-basic-prof.
func TestNodePerfMap(t *testing.T) {
	bpftest.Require(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found (apt-get install nodejs)")
	}
	dir := t.TempDir()
	truth := filepath.Join(dir, "truth.txt")
	script := filepath.Join(testtarget.Testdata(), "jit", "burn.js")
	// --perf-basic-prof also writes V8's log, by default in the working
	// directory.
	_, p, _ := sampleWith(t, sampler.Config{Frequency: 499}, node, "--perf-basic-prof",
		"--logfile="+filepath.Join(dir, "v8.log"), "--no-logfile-per-isolate", script, "2", truth)
	checkJITShare(t, p, truth, "burnA", "burnB")
	checkJITFile(t, p, "burnA", "burn.js")
}

// TestPythonPerfMap samples CPython 3.12+ run with -X perf: its perf
// trampolines keep no frame pointer and have no unwind information, and
// are unwound from their epilogue.
func TestPythonPerfMap(t *testing.T) {
	bpftest.Require(t)
	pys := perfPythons()
	if len(pys) == 0 {
		t.Skip("no CPython 3.12 or later found (python3.12, python3.13 in PATH or under ~/.pyenv/versions)")
	}
	script := filepath.Join(testtarget.Testdata(), "jit", "burn.py")
	for _, py := range pys {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(py)))+"-"+filepath.Base(py), func(t *testing.T) {
			truth := filepath.Join(t.TempDir(), "truth.txt")
			_, p, _ := sampleWith(t, sampler.Config{Frequency: 499}, py, "-X", "perf", script, "2", truth)
			checkJITShare(t, p, truth, "burn_a", "burn_b")
			checkJITFile(t, p, "burn_a", "burn.py")
		})
	}
}

// TestJavaPerfMap samples a Java program with its perf map written at exit
// and frame pointers kept in compiled code. It needs a JDK (javac) and runs
// only when TICKPROF_JAVA_TEST=1 (make bench-jit): a JDK costs CI more than
// a minute to install.
func TestJavaPerfMap(t *testing.T) {
	if os.Getenv("TICKPROF_JAVA_TEST") != "1" {
		t.Skip("runs with TICKPROF_JAVA_TEST=1 (make bench-jit)")
	}
	bpftest.Require(t)
	java, err1 := exec.LookPath("java")
	javac, err2 := exec.LookPath("javac")
	if err1 != nil || err2 != nil {
		t.Fatal("java and javac are needed (apt-get install openjdk-17-jdk-headless)")
	}
	dir := t.TempDir()
	src := filepath.Join(testtarget.Testdata(), "jit", "Burn.java")
	if out, err := exec.Command(javac, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	truth := filepath.Join(dir, "truth.txt")
	_, p, _ := sampleWith(t, sampler.Config{Frequency: 499}, java, "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit",
		"-XX:+PreserveFramePointer", "-cp", dir, "Burn", "2", truth)
	checkJITShare(t, p, truth, "double Burn.burnA(int)", "double Burn.burnB(int)")
}

// checkJITFile checks that function fn of the profile has the source file
// base name file (the perf map's names say where the function is).
func checkJITFile(t *testing.T, p *profile.Profile, fn, file string) {
	t.Helper()
	for _, f := range p.Function {
		if f.Name == fn {
			if filepath.Base(f.Filename) != file {
				t.Errorf("%s: file %q, want %s", fn, f.Filename, file)
			}
			return
		}
	}
	t.Errorf("no function %s in the profile", fn)
}

// perfPythons are the CPython 3.12+ interpreters of this machine (they
// write perf maps with -X perf).
func perfPythons() []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if strings.Contains(p, "/shims/") {
			return // pyenv's shims run a version only when selected
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && !seen[r] {
			seen[r] = true
			out = append(out, p)
		}
	}
	for _, v := range []string{"python3.12", "python3.13"} {
		if p, err := exec.LookPath(v); err == nil {
			add(p)
		}
	}
	home, _ := os.UserHomeDir()
	for _, v := range []string{"3.12", "3.13"} {
		ms, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", v+".*", "bin", "python"+v))
		sort.Strings(ms)
		for _, p := range ms {
			add(p)
		}
	}
	return out
}
