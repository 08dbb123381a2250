// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// The short version's design: shortRuns runs of every case that has a
// short run length, each figure judged at nominal coverage 0.95.
const (
	shortRuns = 3
	nominal   = 0.95
	// pooledAlarm is the false-alarm rate of the pooled check.
	pooledAlarm = 0.01
)

// TestCoverageShort is the short version of the coverage suite (`make
// test`): every case but `--overhead 1%` (a useful run takes 30 s or more),
// shortRuns runs each at the short run length, tickprof's default clock
// and correction. The figures judged are the issue's: every case's mean,
// and the quantiles of the back-to-back calls. It fails when
//
//   - a figure's interval held the truth in none of its 3 runs: with 13
//     figures at true coverage 95% that happens with probability at most
//     13 × 0.05³ = 0.16%;
//   - over all 39 judged runs, fewer than k held the truth, where k is the
//     largest count with P(X < k) <= 1% for X binomial(39, 0.95)
//     (minHeld): k = 33, P(X < 33) = 0.29%, i.e. 7 or more misses
//     (P(X < 34) = 1.2% is above 1%);
//
// a false-alarm rate of at most 0.45% in all, if the runs were
// independent. They share the calibration, so a calibration that is off
// makes misses come together: that is a failure this test is for.
//
// It needs a calibration of this machine with the in-call model: the
// user's, else one made into a temporary directory (about 1.5 min).
func TestCoverageShort(t *testing.T) {
	bpftest.Require(t)
	testtarget.NeedGCC(t)
	r := testRunner(t)
	var cs []tcase
	for _, c := range cases() {
		if c.short > 0 {
			cs = append(cs, c)
		}
	}
	res := r.rounds(cs, shortRuns, func(c tcase) float64 { return c.short }, t.Logf)
	for _, cr := range res {
		for _, f := range cr.failures {
			t.Errorf("%s: %s", cr.c.name, f)
		}
	}
	ts := tallies(res)
	t.Logf("short coverage suite:\n%s", table(ts))
	for _, v := range verdicts(ts, cs) {
		t.Error(v)
	}
}

// verdicts applies the short version's thresholds to the judged figures
// and returns one line per failure.
func verdicts(ts []*tally, cs []tcase) []string {
	quant := map[string]bool{}
	for _, c := range cs {
		quant[c.name] = c.quantiles
	}
	var judged []*tally
	for _, t := range ts {
		if t.check == "mean" || quant[t.caseName] {
			judged = append(judged, t)
		}
	}
	var out []string
	held, runs := 0, 0
	for _, t := range judged {
		k, fa := minHeld(t.runs, nominal, pooledAlarm/float64(len(judged)))
		if t.held < k {
			out = append(out, fmt.Sprintf("%s %s: the interval held the truth in %d of %d runs (fewer than %d: P = %.2g at %.0f%% coverage); misses above/below the truth %d/%d, %d without an estimate",
				t.caseName, t.check, t.held, t.runs, k, fa, 100*nominal, t.above, t.below, t.noInterval))
		}
		held, runs = held+t.held, runs+t.runs
	}
	if k, fa := minHeld(runs, nominal, pooledAlarm); held < k {
		out = append(out, fmt.Sprintf("over all judged figures the interval held the truth in %d of %d runs (fewer than %d: P = %.2g at %.0f%% coverage)",
			held, runs, k, fa, 100*nominal))
	}
	return out
}

// testRunner builds tickprof and the targets, and finds a calibration.
func testRunner(t *testing.T) *runner {
	t.Helper()
	repo := repoRoot()
	dir := t.TempDir()
	tp := filepath.Join(dir, "tickprof")
	cmd := exec.Command(testtarget.GoTool(), "build", "-o", tp, "./cmd/tickprof")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build tickprof: %v\n%s", err, out)
	}
	bins, err := buildTargets(repo, dir, testtarget.GoTool())
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{tickprof: tp, bins: bins, dir: dir}
	if err := usableCalibration(); err != nil {
		t.Logf("%v: calibrating into a temporary directory", err)
		if r.env, err = calibrateInto(tp, dir); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// usableCalibration returns nil when this machine's calibration exists and
// has the in-call model of native user functions.
func usableCalibration() error {
	c, err := calibrate.Load()
	if err != nil {
		return err
	}
	if o, ok := c.Overhead(calibrate.KindUser); !ok || o.InCall == nil {
		return errors.New("the calibration predates the in-call overhead model")
	}
	return nil
}

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestMinHeld checks the thresholds the short version states.
func TestMinHeld(t *testing.T) {
	for _, c := range []struct {
		n     int
		alpha float64
		k     int
	}{
		{3, pooledAlarm / 13, 1}, // fail when none of 3 held: P = 0.05^3
		{39, pooledAlarm, 33},    // fail when 7 or more of 39 missed: P = 0.29%
		{20, 0.01, 16},           // 20 runs: P(X < 16) = 0.26%, P(X < 17) = 1.6%
	} {
		k, fa := minHeld(c.n, nominal, c.alpha)
		if k != c.k || !(fa <= c.alpha) {
			t.Errorf("minHeld(%d, %.2f, %.3g) = %d (P %.3g), want %d", c.n, nominal, c.alpha, k, fa, c.k)
		}
	}
	if k, fa := minHeld(3, nominal, 0.01); k != 2 || math.Abs(fa-0.00725) > 1e-9 {
		t.Errorf("minHeld(3, 0.95, 0.01) = %d (P %.6g), want 2 (P = 0.05^3 + 3 0.05^2 0.95 = 0.00725)", k, fa)
	}
}
