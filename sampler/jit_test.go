// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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
// must agree with the one the program measures with its own CPU clock.
//
// The share's interval is at 99.9% (a correct sampler fails one run in
// about 330 by chance) and widened by jitSlack on each side: the program's
// clock reads around each call count the JIT's own stubs and the call into
// the function, which the samples put in the caller, and Node.js's CPU
// clock is the process's (V8's background compiler and collector threads
// included).
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
	_, p, _ := sampleWith(t, sampler.Config{Frequency: 499}, node, "--perf-basic-prof", "--no-turbo-inlining",
		"--logfile="+filepath.Join(dir, "v8.log"), "--no-logfile-per-isolate", script, "2", truth)
	checkJITShare(t, p, truth, "burnA", "burnB")
	checkJITFile(t, p, "burnA", "burn.js")
}

// TestNodePerfMapNamespaces samples Node.js in its own pid and mount
// namespaces with a private /tmp, as in a container: its perf map is
// /tmp/perf-1.map there, found through the process's root under its pid in
// its namespace. The process is attached to by its pid once it runs. No
// truth file leaves the private /tmp: the shares are checked against the
// 3:1 the program's calls make, within 0.1.
func TestNodePerfMapNamespaces(t *testing.T) {
	bpftest.Require(t)
	node, err1 := exec.LookPath("node")
	unshare, err2 := exec.LookPath("unshare")
	if err1 != nil || err2 != nil {
		t.Skip("node or unshare not found (apt-get install nodejs util-linux)")
	}
	script := filepath.Join(testtarget.Testdata(), "jit", "burn.js")
	cmd := exec.Command(unshare, "--pid", "--fork", "--mount", "--mount-proc", "--", "sh", "-c",
		`mount -t tmpfs tmpfs /tmp && exec "$0" --perf-basic-prof --no-turbo-inlining --logfile=/tmp/v8.log --no-logfile-per-isolate "$1" 4`, node, script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := nodeChild(t, cmd.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := sampler.Open(ctx, sampler.Config{Frequency: 499, PIDs: []int{pid}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := export.EncodeCPU(res.Profile)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := export.CPUReport(p, estimate.Options{Confidence: 0.999})
	if err != nil {
		t.Fatal(err)
	}
	a, b := findRow(t, tab, "burnA"), findRow(t, tab, "burnB")
	share := float64(a.Cum.Hits) / float64(a.Cum.Hits+b.Cum.Hits)
	t.Logf("burnA share %.3f (%d+%d samples of %d)", share, a.Cum.Hits, b.Cum.Hits, tab.Samples)
	if share < 0.65 || share > 0.85 || a.Cum.Hits+b.Cum.Hits < tab.Samples/2 {
		t.Errorf("burnA share %.3f of %d+%d samples (of %d), want 0.75 ± 0.1 of most samples", share, a.Cum.Hits, b.Cum.Hits, tab.Samples)
	}
}

// nodeChild waits for the node process under unshare (pid) to run and
// write its perf map, and returns its pid.
func nodeChild(t *testing.T, pid int) int {
	t.Helper()
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		for _, f := range strings.Fields(string(kids)) {
			c, _ := strconv.Atoi(f)
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c))
			if err != nil || filepath.Base(exe) != "node" {
				continue
			}
			// Its perf map written (its code space mapped), in its /tmp.
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/tmp/perf-1.map", c)); err == nil {
				return c
			}
		}
	}
	t.Fatal("node did not start under unshare")
	return 0
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
