// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// usdtTarget is testdata/c/usdt.c (USDT probes with semaphores).
func usdtTarget(t *testing.T) string {
	t.Helper()
	testtarget.NeedSDT(t)
	return testtarget.C(t, "c/usdt.c", "usdt", "-fno-omit-frame-pointer")
}

// runUSDT times target in the usdt test program run with args, raw means
// (no calibration), and returns the run, the target's own result and its
// standard output.
func runUSDT(t *testing.T, target string, args ...string) (jsonRun, int, float64, string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TIMED_OUT", filepath.Join(dir, "target.txt"))
	js := filepath.Join(dir, "run.json")
	f := timeFlags{users: []string{target}, clock: "ns", confidence: "99.9%", maxProbes: 256,
		interval: 100 * time.Millisecond, jsonOut: js, calDir: dir, noCorrect: true}
	var out bytes.Buffer
	errOut := newNoticeWriter()
	stdout := filepath.Join(dir, "stdout")
	sf, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	old := os.Stdout
	os.Stdout = sf // the command's standard output (the target's semaphores)
	err = runTime(context.Background(), &out, errOut, f, append([]string{usdtTarget(t)}, args...))
	os.Stdout = old
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	t.Logf("\n%s", out.String())
	calls, inner := readTarget(t, filepath.Join(dir, "target.txt"))
	b, _ := os.ReadFile(stdout)
	return readRun(t, js), calls, inner, string(b)
}

// TestTimeUSDTPair times a USDT pair whose probes have semaphores: every
// call counted, none orphaned, the semaphores set while the probes are
// attached, and the raw interval (which holds the probes' own cost inside
// the call, 0.3-11 µs here) above the call's own time by less than that.
func TestTimeUSDTPair(t *testing.T) {
	bpftest.Require(t)
	r, calls, inner, stdout := runUSDT(t, "usdt:tpusdt:work", "pair", "3000")
	if len(r.Targets) != 1 {
		t.Fatalf("targets: %+v", r.Targets)
	}
	tg := r.Targets[0]
	if tg.Target != "usdt:tpusdt:work__entry,work__return" || tg.Calls != 3000 || calls != 3000 || tg.Orphans != 0 {
		t.Errorf("%s: %d calls (%d orphans), the target made %d", tg.Target, tg.Calls, tg.Orphans, calls)
	}
	if !strings.Contains(stdout, "semaphores=1,1") {
		t.Errorf("semaphores not set while attached: %q", stdout)
	}
	checkRawCovers(t, tg, inner)
}

// TestTimeUSDTPython times a function through probes shaped as CPython's:
// the calls of target in mod.py at every level of its recursion, not the
// function it calls (other) nor its namesake in another file.
func TestTimeUSDTPython(t *testing.T) {
	bpftest.Require(t)
	r, calls, inner, _ := runUSDT(t, "py:pkg.mod.target", "py", "1000")
	tg := r.Targets[0]
	if tg.Calls != 3000 || calls != 3000 || tg.Orphans != 0 {
		t.Errorf("%s: %d calls (%d orphans), the target made %d (1000 calls, 3 levels each)", tg.Target, tg.Calls, tg.Orphans, calls)
	}
	checkRawCovers(t, tg, inner)
}

// checkRawCovers checks the raw interval of tg against the calls' own
// mean inner (each call timed by the target from right after its entry
// probe to right before its return probe): the raw interval holds the
// probes' own cost inside the call besides (0.3-11 µs here, the
// calibrated patterns' range), so it must reach up to inner and not start
// above it by more than that cost. The corrected interval's coverage is
// measured by make bench-usdt (docs/coverage.md).
func checkRawCovers(t *testing.T, tg jsonTarget, inner float64) {
	t.Helper()
	const probeCost = 15000 // ns: the calibrated range's top, with margin
	if tg.LowNs == nil || tg.HighNs == nil {
		t.Fatalf("no interval: %+v", tg)
	}
	lo, hi := *tg.LowNs, *tg.HighNs
	t.Logf("raw interval [%.0f, %.0f] ns, the calls' own mean %.0f ns", lo, hi, inner)
	if inner > hi || inner < lo-probeCost {
		t.Errorf("the calls' own mean %.0f ns is not in [%.0f - %d, %.0f]", inner, lo, probeCost, hi)
	}
}

// pyenvPythons are pyenv's CPython 3.12 and 3.13 of this machine.
func pyenvPythons() []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, v := range []string{"3.12", "3.13"} {
		ms, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", v+".*", "bin", "python"+v))
		if len(ms) > 0 {
			out = append(out, ms[0])
		}
	}
	return out
}

// TestTimePythonEval times a Python function of CPython 3.12 and 3.13 run
// with -X perf, in the eval loop: every call of work counted (those of
// its recursion's levels too), none orphaned, not the generator's nor any
// other function's, and the raw interval against the function's own time.
func TestTimePythonEval(t *testing.T) {
	bpftest.Require(t)
	pys := pyenvPythons()
	if len(pys) == 0 {
		t.Skip("no pyenv CPython 3.12 or 3.13 (~/.pyenv/versions)")
	}
	script := filepath.Join(testtarget.Testdata(), "py", "timed.py")
	for _, py := range pys {
		t.Run(filepath.Base(py), func(t *testing.T) {
			dir := t.TempDir()
			truth, js := filepath.Join(dir, "truth.txt"), filepath.Join(dir, "run.json")
			f := timeFlags{users: []string{"py:timed.work"}, clock: "ns", confidence: "99.9%", maxProbes: 256,
				interval: 100 * time.Millisecond, jsonOut: js, calDir: dir, noCorrect: true}
			var out bytes.Buffer
			errOut := newNoticeWriter()
			if err := runTime(context.Background(), &out, errOut, f, []string{py, "-X", "perf", script, "2", truth}); err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			calls, inner := readTarget(t, truth)
			tg := readRun(t, js).Targets[0]
			if int(tg.Calls) != calls || tg.Orphans != 0 {
				t.Errorf("%s: %d calls (%d orphans), the program made %d", tg.Target, tg.Calls, tg.Orphans, calls)
			}
			checkRawCovers(t, tg, inner)
		})
	}
	// Without its perf trampolines CPython runs calls between Python
	// functions inside one C frame: refused, saying so.
	err := runTime(context.Background(), &bytes.Buffer{}, newNoticeWriter(),
		timeFlags{users: []string{"py:timed.work"}, clock: "ns", confidence: "95%", maxProbes: 256, interval: 100 * time.Millisecond, calDir: t.TempDir()},
		[]string{pys[0], script, "0.1"})
	if !errors.Is(err, loader.ErrPythonPerfOff) {
		t.Errorf("without -X perf: %v, want ErrPythonPerfOff", err)
	}
}

// TestTimePythonRefused checks the one-line refusals for interpreters
// without working function probes: CPython 3.11 (Debian's, whose
// function__entry fires for calls from C only) and pyenv's 3.10 (none, and
// no eval-loop route before 3.12).
func TestTimePythonRefused(t *testing.T) {
	cases := map[string]error{"/usr/bin/python3.11": loader.ErrBrokenPythonProbes}
	home, _ := os.UserHomeDir()
	if ms, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", "3.10*", "bin", "python3")); len(ms) > 0 {
		cases[ms[0]] = loader.ErrNoPythonProbes
	}
	n := 0
	for py, want := range cases {
		if _, err := os.Stat(py); err != nil {
			continue
		}
		n++
		_, err := loader.ResolveUSDT(0, "py:"+py+":mod.work")
		if !errors.Is(err, want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line wrapping %v", py, err, want)
		}
	}
	if n == 0 {
		t.Skip("no CPython 3.11 (/usr/bin/python3.11) or pyenv 3.10")
	}
}
