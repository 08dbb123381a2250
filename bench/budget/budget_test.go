// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/timing"
)

// testWorkload builds the target for a test.
func testWorkload(t *testing.T, work int, seconds float64) workload {
	t.Helper()
	bpftest.Require(t)
	testtarget.NeedGCC(t)
	bin, err := buildTarget(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return workload{bin: bin, threads: 2, seconds: seconds, work: work}
}

// validateConfig is `tickprof time --overhead 1% --validate`: the jiffies
// clock with the exact ns clock beside it, and T_ovhd 930 ns [651, 1209]
// (this machine's calibration when it has one).
func validateConfig() timing.Config {
	corr, _, _ := corrector(930, false, "")
	return timing.Config{Targets: budTarget(), Clock: timing.Clock{Kind: timing.ClockJiffies}, Exact: true, NoRecords: true,
		Corrector: corr, Correction: timing.CorrectionOn, Overhead: 0.01, Window: 20 * time.Millisecond}
}

// TestBudgetBindsAtHighRate runs the target at about 1,000,000 calls a
// second from 2 threads on an idle machine (1,500 work iterations a call)
// under a 1% budget, with --validate, 4 times for
// 12 s: the budget must bind (the run probes in windows, at a duty cycle
// well below 1, reported with the projected slowdown), and the windowed
// interval must hold the exact mean of the calls counted in its windows.
// At a 1% budget a window comes every few seconds, so a run may end with
// one window, too few for an interval: such runs are left out of the
// check, and at least 2 of the 4 must have one. At 95% an honest interval
// misses in a run with probability at most 0.05, so 3 or more misses of
// at most 4 happen with probability at most 4(0.05^3)(0.95) + 0.05^4 =
// 0.05%: the false-alarm rate of this check.
func TestBudgetBindsAtHighRate(t *testing.T) {
	w := testWorkload(t, 1500, 12)
	misses, checked := 0, 0
	for i := 0; i < 4; i++ {
		run, rate, err := w.timed(validateConfig())
		if err != nil {
			t.Fatal(err)
		}
		b, tg := run.Budget, run.Targets[0]
		if b == nil || tg.Exact == nil {
			t.Fatalf("run %d: budget %+v, exact figures %v", i, b, tg.Exact)
		}
		exact := float64(tg.Exact.Sum) / float64(max(tg.Calls, 1))
		t.Logf("run %d: target %.0f calls/s; %d windows, duty %.3f (next %.3f), projected slowdown %.2f%% [%.2f, %.2f]; raw mean %.0f ns [%.0f, %.0f], exact %.0f ns over %d calls",
			i, rate.wall, b.Windows, b.Duty, b.NextDuty, 100*b.Slowdown.Mean, 100*b.Slowdown.Low, 100*b.Slowdown.High,
			tg.Raw.Mean, tg.Raw.Low, tg.Raw.High, exact, tg.Calls)
		if !b.Binding || b.Windows < 1 || !(b.Duty > 0 && b.Duty < 0.25) || !(b.NextDuty < 0.25) || !(b.Slowdown.High > 0) {
			t.Errorf("run %d: at %.0f calls/s a 1%% budget must bind: binding %v, %d windows, duty %.3f, next %.3f, slowdown %+v",
				i, rate.wall, b.Binding, b.Windows, b.Duty, b.NextDuty, b.Slowdown)
		}
		if b.Windows < 2 {
			continue
		}
		if tg.Err != "" || tg.Covered == nil {
			t.Fatalf("run %d: %d windows: target error %q, verdict %v", i, b.Windows, tg.Err, tg.Covered)
		}
		checked++
		if !*tg.Covered {
			misses++
		}
	}
	t.Logf("the windowed interval held the exact mean of the counted calls in %d of %d runs with an interval", checked-misses, checked)
	if checked < 2 || misses >= 3 {
		t.Errorf("the windowed interval missed the exact mean of the counted calls in %d of %d runs with an interval (want at least 2 such runs)", misses, checked)
	}
}

// TestBudgetDoesNotBindAtLowRate runs the target at about 1,000 calls a
// second or fewer: a 1% budget does not bind (1,000 calls of ~2 µs probes
// are 0.2% of a thread), so after the first window, which measures the
// call rate, the run probes all the time, and the table and the JSON say
// so. The rate is set by the work per call, so it depends on the CPU: 1.5
// million iterations make about 1,000 calls a second on an idle 2-CPU
// machine here (300,000 made 4,800, where a 1% budget binds) and fewer
// under load, where the budget binds even less.
func TestBudgetDoesNotBindAtLowRate(t *testing.T) {
	w := testWorkload(t, 1500000, 4)
	run, rate, err := w.timed(validateConfig())
	if err != nil {
		t.Fatal(err)
	}
	b := run.Budget
	if b == nil {
		t.Fatal("no budget figures")
	}
	t.Logf("target %.0f calls/s; %d windows, duty %.3f, next %.3f, projected slowdown %.3f%%", rate.wall, b.Windows, b.Duty, b.NextDuty, 100*b.Slowdown.Mean)
	if b.Binding || b.NextDuty != 1 || b.Duty < 0.8 {
		t.Errorf("at %.0f calls/s a 1%% budget must not bind: binding %v, duty %.3f, next %.3f", rate.wall, b.Binding, b.Duty, b.NextDuty)
	}
	var js bytes.Buffer
	if err := export.WriteTimeJSON(&js, run); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Budget *struct {
			Binding bool    `json:"binding"`
			Duty    float64 `json:"duty_cycle"`
		} `json:"overhead_budget"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Budget == nil || doc.Budget.Binding || doc.Budget.Duty != b.Duty {
		t.Errorf("JSON overhead_budget %+v: want binding false and duty %.3f", doc.Budget, b.Duty)
	}
}
