// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestMain(m *testing.M) { testtarget.Main(m) }

// fixedCost is a Corrector with one probe cost for every kind; like the
// calibration's, it does not correct system calls (kind "").
type fixedCost struct{ cost estimate.Result }

func (fixedCost) OverheadKind(tg Target) (string, error) {
	if tg.Kind == KindSyscall {
		return "", nil
	}
	return "user", nil
}
func (f fixedCost) Overhead(string, float64) (estimate.Result, bool) {
	return f.cost, true
}
func (fixedCost) Correct(_ string, r estimate.Result) (estimate.Result, error) { return r, nil }

func (fixedCost) Calibration(string) (OverheadCalibration, bool) {
	return OverheadCalibration{}, false
}

// runBudgeted times targets of the gated process p with the clock clk
// under a 5% budget in 20 ms windows, charging the probe cost cost
// (fixedCost), and returns the result, which must hold budget figures. It
// runs for d, or, with until, until it holds after a window (a progress
// call), d then bounding a hang: how many windows fit in a time depends on
// how long attaching and draining take, 10x longer on a loaded machine.
func runBudgeted(t *testing.T, p *testtarget.Proc, targets Targets, clk ClockKind, cost estimate.Result, d time.Duration, until func(Progress) bool) *Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Open(ctx, Config{PID: p.Pid(), Targets: targets,
		Clock: Clock{Kind: clk}, Duration: d, Overhead: 0.05,
		Window: 20 * time.Millisecond, Corrector: fixedCost{cost}, Correction: CorrectionOn,
		OnProgress: func(pr Progress) {
			if until != nil && until(pr) {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.Release(t)
	run, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.Budget == nil {
		t.Fatal("no budget figures in the result")
	}
	return run
}

// spinCost is T_ovhd for the spin1us tests: the budget charges twice that
// per call (see budgetCost).
var spinCost = estimate.Result{Mean: 750, Low: 500, High: 1000, Confidence: 0.95}

// TestBudgetedSession times a function called back to back under a 5%
// budget through a timing session: the result holds the windowed mean, the
// duty cycle, the windows and the projected slowdown. It runs to its second
// window, the fewest a mean with windows as clusters needs (in 4 s, 3 of
// 15 runs under a load of 6-8 on 2 CPUs fitted one; at that load a slot
// took up to 30 s), and the context's cancelling names the stop.
func TestBudgetedSession(t *testing.T) {
	bpftest.Require(t)
	g := testtarget.StartGated(t, testtarget.Timed(t), "spin1us", "0") // calls forever
	cost := spinCost
	windows := 0
	run := runBudgeted(t, g, Targets{Users: []string{"tp_spin1us"}, MaxProbes: 1}, ClockNS, cost, 2*time.Minute, func(Progress) bool {
		windows++
		return windows >= 2
	})
	b, tr := run.Budget, run.Targets[0]
	t.Logf("%d windows, duty %.3f, slowdown %.2f%% [%.2f, %.2f]; mean %.0f ns [%.0f, %.0f] over %d windows with calls; stop: %s",
		b.Windows, b.Duty, 100*b.Slowdown.Mean, 100*b.Slowdown.Low, 100*b.Slowdown.High,
		tr.Estimate.Mean, tr.Estimate.Low, tr.Estimate.High, tr.Estimate.Batches, run.StopReason)
	if b.Windows < 2 || !b.Binding || b.Cost.Mean != uprobePairFactor*cost.Mean { // the whole pair: see budgetCost
		t.Errorf("budget figures %+v", b)
	}
	if tr.Err != "" || tr.Estimate.Method != "batch-means" || !(tr.Estimate.Mean > 1000) {
		t.Errorf("target %s: estimate %+v, err %q: want the windowed batch-means mean", tr.Name, tr.Estimate, tr.Err)
	}
	if run.StopReason != StopInterrupted {
		t.Errorf("stop reason %q, want %q", run.StopReason, StopInterrupted)
	}
}

// TestBudgetedDuration: a budgeted run stops when its duration is reached,
// says so, and still reports its budget figures, however few windows fit.
func TestBudgetedDuration(t *testing.T) {
	bpftest.Require(t)
	g := testtarget.StartGated(t, testtarget.Timed(t), "spin1us", "0") // calls forever
	run := runBudgeted(t, g, Targets{Users: []string{"tp_spin1us"}, MaxProbes: 1}, ClockNS, spinCost, 300*time.Millisecond, nil)
	if run.StopReason != StopDuration || run.Duration < 300*time.Millisecond {
		t.Errorf("stop %q after %v, want %q after 300ms", run.StopReason, run.Duration, StopDuration)
	}
}

// TestBudgetedSyscall times getppid called back to back (well over a
// million calls a second) under a 5% budget: the raw tracepoints are linked
// window by window, the budget binds, and the probe cost is the calibrated
// syscall pair as it is (not doubled like a uprobe pair's). It runs until
// two windows hold tick events (getppid's calls are far shorter than a
// tick: a starved target's window may hold none), not for 4 s: a loaded
// machine fitted as few as 2 windows in 4 s.
func TestBudgetedSyscall(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "kernels/targets/sysloop.c", "sysloop")
	p := testtarget.Start(t, exec.Command(bin, "getppid", "1000000000"), testtarget.ReadyPrefix, nil)
	cost := estimate.Result{Mean: 300, Low: 200, High: 400, Confidence: 0.95}
	run := runBudgeted(t, p, Targets{Syscalls: []string{"getppid"}}, ClockJiffies, cost, 2*time.Minute, func(pr Progress) bool {
		return pr.Rows[0].Batches >= 2
	})
	b, tr := run.Budget, run.Targets[0]
	t.Logf("%d windows, duty %.3f (next %.3f), slowdown %.2f%% [%.2f, %.2f], rate %.0f/s; mean %.0f ns [%.0f, %.0f], %d calls, %d orphans",
		b.Windows, b.Duty, b.NextDuty, 100*b.Slowdown.Mean, 100*b.Slowdown.Low, 100*b.Slowdown.High, b.Rates[0].Mean,
		tr.Estimate.Mean, tr.Estimate.Low, tr.Estimate.High, tr.Calls, tr.Orphans)
	if b.Windows < 2 || !b.Binding || b.Cost.Mean != cost.Mean {
		t.Errorf("budget figures %+v: want at least 2 windows, binding, the syscall pair's cost", b)
	}
	if tr.Err != "" || tr.Estimate.Batches < 2 {
		t.Errorf("getppid: estimate %+v, err %q: want the windowed mean, windows as clusters", tr.Estimate, tr.Err)
	}
	if tr.Orphans != 0 {
		t.Errorf("%d orphans: calls entering between windows must pair without counting", tr.Orphans)
	}
}

// TestBudgetedKernelFunc times a kernel function under a budget: the
// nanosleep handler, called by sysloop back to back with sleeps of 2 ms (a
// rate the sleep bounds, not the probes), with a made-up probe cost of
// 150 µs a call so that a 2% budget binds. The kprobes (or fentry/fexit)
// are linked window by window; the result must report a duty cycle below 1
// and a windowed mean of at least the sleep, and no window may count more
// calls than can enter it (one per 2 ms, plus one). The windowed rate is
// only logged beside the target's own (N calls over its run): in the
// matrix's one-CPU guests the windows' own attaching takes CPU from the
// target (calls in windows ran 2x longer on 6.12), so the two differ by
// more than any interval. TestWindowedKernelFunc (loader) checks the
// counts exactly. Only kernels with kprobes or fentry run it (the kernel
// matrix).
func TestBudgetedKernelFunc(t *testing.T) {
	bpftest.Require(t)
	// The functions are resolved in Open; resolving them first tells a
	// kernel that cannot probe them from a failure.
	if _, err := loader.ResolveKernelFuncs([]string{"__x64_sys_nanosleep"}, features.AttachAuto); err != nil {
		var ke *loader.KernelFuncError
		if os.Getenv("TICKPROF_IN_MATRIX") == "1" || errors.As(err, &ke) {
			t.Fatal(err)
		}
		t.Skipf("skipping: this kernel cannot probe kernel functions (the kernel matrix runs this): %v", err)
	}
	// The target calls until the run has two windows (the fewest a mean
	// with windows as clusters needs), 2 minutes at most: in the
	// matrix's guests a window's attach, drain and detach took 0.3 s, and
	// slots of 35 s fitted one window in a run of 2,000 calls (6.5 s).
	const n = 60000
	bin := testtarget.C(t, "kernels/targets/sysloop.c", "sysloop")
	p := testtarget.Start(t, exec.Command(bin, "nanosleep", strconv.Itoa(n), "2000"), testtarget.ReadyPrefix, nil)
	cost := estimate.Result{Mean: 75000, Low: 70000, High: 80000, Confidence: 0.95} // doubled: see budgetCost
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	windows := 0
	s, err := Open(ctx, Config{PID: p.Pid(), Targets: Targets{Kernel: []string{"__x64_sys_nanosleep"}}, Clock: Clock{Kind: ClockNS}, Overhead: 0.02,
		Window: 20 * time.Millisecond, Corrector: fixedCost{cost}, Correction: CorrectionOn,
		OnProgress: func(Progress) {
			if windows++; windows >= 2 {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	p.Release(t)
	run, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	made := float64(min(n, int(elapsed/(2*time.Millisecond)))) // calls made so far, about
	b, tr := run.Budget, run.Targets[0]
	if b == nil {
		t.Fatal("no budget figures in the result")
	}
	w := b.Windowed[0]
	own := made / elapsed.Seconds()
	t.Logf("%d windows, duty %.3f (next %.3f), slowdown %.2f%% [%.2f, %.2f]; %d calls counted in %.0f ms of windows, rate %.0f/s [%.0f, %.0f] (95%%), the target's own %.0f/s over %v; mean %.0f ns [%.0f, %.0f]; stop %s",
		b.Windows, b.Duty, b.NextDuty, 100*b.Slowdown.Mean, 100*b.Slowdown.Low, 100*b.Slowdown.High,
		tr.Calls, w.Probed/1e6, w.Rate.Mean, w.Rate.Low, w.Rate.High, own, elapsed, tr.Estimate.Mean, tr.Estimate.Low, tr.Estimate.High, run.StopReason)
	if b.Windows < 2 || !b.Binding || !(b.Duty > 0 && b.Duty < 1) || b.Cost.Mean != uprobePairFactor*cost.Mean {
		t.Errorf("budget figures %+v: want at least 2 windows, binding, a duty cycle in (0, 1), the kernel pair doubled", b)
	}
	if most := w.Probed/2e6 + float64(b.Windows); float64(tr.Calls) > most {
		t.Errorf("%d calls counted in %.1f ms of %d windows: at most %.0f can enter them", tr.Calls, w.Probed/1e6, b.Windows, most)
	}
	if tr.Err != "" || tr.Orphans != 0 || !(tr.Estimate.Mean >= 2e6) {
		t.Errorf("estimate %+v, %d orphans, err %q: want a windowed mean of at least the 2 ms sleep, no orphans", tr.Estimate, tr.Orphans, tr.Err)
	}
}
