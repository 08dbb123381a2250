// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/budget"
	"github.com/tickprof/tickprof/internal/loader"
)

// BudgetResult is what a run under an overhead budget (Config.Overhead)
// adds to its result.
type BudgetResult struct {
	// Budget is the slowdown allowed (a fraction).
	Budget float64
	// Duty is the fraction of the run the probes were attached (windows,
	// attaching and draining); Windows the number of windows.
	Duty    float64
	Windows int
	// Slowdown is the projected slowdown at that duty, with its interval.
	Slowdown estimate.Slowdown
	// Binding says the budget binds at the call rates measured: the run
	// probes in windows (false: the projected slowdown of probing all the
	// time is within the budget, and after its first window, which
	// measures the call rate, the run probed all the time).
	Binding bool
	// Cost is the probe cost per call the projection used (ns).
	Cost estimate.Result
	// Rates are the targets' call rates while probed (calls per second),
	// in Targets order; Censored counts calls whose drain was cut short.
	Rates    []estimate.Result
	Censored uint64
	// NextDuty is the duty cycle the budget allows at the load measured
	// (1: it does not bind), and Windowed the targets' windowed estimates
	// (Targets order): with estimate.WindowsNeeded and WindowedRunTime
	// they say how long a precision takes under the budget.
	NextDuty float64
	Windowed []estimate.Windowed
}

// uprobePairFactor is a uprobe pair's whole cost to the target over its
// calibrated T_ovhd (see budgetCost).
const uprobePairFactor = 2

// PairCost is what a probe pair of the calibrated kind costs the target
// per call, from the kind's calibrated overhead o: twice T_ovhd for uprobe
// and kernel-function kinds, the syscall pair as calibrated (see
// budgetCost).
func PairCost(kind string, o estimate.Result) estimate.Result {
	if kind != "syscall" {
		o.Mean, o.Low, o.High, o.StdErr = uprobePairFactor*o.Mean, uprobePairFactor*o.Low, uprobePairFactor*o.High, uprobePairFactor*o.StdErr
	}
	return o
}

// budgetKind is the calibrated pair that stands for the probes of a
// target kind the calibration does not correct: the syscall pair
// (getppid's tracepoints) for system calls, the kernel pair (kprobe or
// fentry on getppid's handler) for kernel functions. Both include
// getppid's own kernel work, so they bound the probes' cost from above.
func budgetKind(k loader.Kind) string {
	switch k {
	case loader.KindSyscall:
		return "syscall"
	case loader.KindKernelFunc:
		return "kernel"
	}
	return ""
}

// budgetCost is the probe cost per call of a budgeted run, from the
// calibrated overhead of the targets' probe kind, the largest when they
// differ. T_ovhd is only what falls between a uprobe pair's two clock
// reads; the target also pays the entry's trap up to its clock read and
// the exit's program and return after it, the mirror image of that: so a
// uprobe pair costs the target about twice T_ovhd (uprobePairFactor; on
// the machine of bench/results/RESULTS.md 1.81 µs added per call against T_ovhd
// 0.93-0.98 µs). System calls, which the calibration does not correct, use
// its syscall pair as it is: that includes getppid's own kernel path and
// tracepoints take no trap, so it bounds the probes' cost from above.
// Kernel functions use the kernel pair doubled like a uprobe pair's: the
// kprobe (or trampoline) before the entry's clock read and the exit's tail
// after its own are the mirror image of what T_ovhd holds. All err on the
// side of the budget.
func (s *Session) budgetCost() (estimate.Result, error) {
	if s.cfg.Corrector == nil {
		return estimate.Result{}, errors.New("an overhead budget needs the probe cost of this machine: run `tickprof calibrate` first")
	}
	conf := s.cfg.Estimate.Confidence
	var cost estimate.Result
	for i, sp := range s.specs {
		kind := ""
		if i < len(s.kinds) {
			kind = s.kinds[i]
		}
		if kind == "" {
			kind = budgetKind(sp.Kind)
		}
		o, ok := s.cfg.Corrector.Overhead(kind, conf)
		if !ok {
			return estimate.Result{}, fmt.Errorf("%s: the calibration has no %q probe cost for the overhead budget: run `tickprof calibrate` again", sp.Name, kind)
		}
		o = PairCost(kind, o)
		if o.High > cost.High {
			cost = o
		}
	}
	return cost, nil
}

// budgetRunner returns a runner of the session's windows under its
// overhead budget (Config.Overhead, Window; the probe cost from the
// calibration, see budgetCost). The session must have been opened with an
// Overhead.
func (s *Session) budgetRunner() (*budget.Runner, error) {
	if s.cfg.Overhead <= 0 {
		return nil, errors.New("the timing session has no overhead budget")
	}
	if s.ls.LinkKind() == "single" {
		if why := loader.HaveUprobeMulti(); why != nil {
			s.cfg.warn("windows attach single uprobe links (%v): each window's detach takes about 0.2 s, so fewer windows fit", why)
		}
	}
	return budget.New(s.ls, budget.Config{Budget: s.cfg.Overhead, Window: s.cfg.Window, Cost: s.cost, Estimate: s.cfg.Estimate})
}

// runBudget runs windows until a stop rule holds, and returns the reason,
// the last status and the last good poll.
func (s *Session) runBudget(ctx context.Context) (StopReason, budget.Status, *loader.Poll, error) {
	r, err := s.budgetRunner()
	if err != nil {
		return StopReason(""), budget.Status{}, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The first stop rule to hold names the reason; the watcher below may
	// fire again as the run unwinds, so the reason is set once.
	var (
		reasonOnce sync.Once
		reasonMu   sync.Mutex
		reason     StopReason
	)
	stop := func(why StopReason) {
		reasonOnce.Do(func() {
			reasonMu.Lock()
			reason = why
			reasonMu.Unlock()
		})
		cancel()
	}
	go func() {
		var deadline <-chan time.Time
		if s.cfg.Duration > 0 {
			t := time.NewTimer(s.cfg.Duration)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-ctx.Done():
			stop(StopInterrupted)
		case <-deadline:
			stop(StopDuration)
		case <-s.exited:
			stop(StopExited)
		}
	}()
	st, err := r.Run(ctx, func(st budget.Status) {
		pr, reached := s.budgetProgress(st)
		if s.cfg.OnProgress != nil {
			s.cfg.OnProgress(pr)
		}
		if s.cfg.Precision > 0 && reached {
			stop(StopPrecision)
		}
	})
	stop(StopInterrupted) // no-op when a rule already stopped the run
	reasonMu.Lock()
	final := reason
	reasonMu.Unlock()
	if err != nil && final != StopExited {
		return StopReason("error: " + err.Error()), st, nil, nil
	}
	p, perr := s.ls.Poll()
	if perr != nil {
		return final, st, nil, nil
	}
	return final, st, &p, nil
}

// budgetProgress is the live progress after a window, and whether every
// target has reached the precision asked for.
func (s *Session) budgetProgress(st budget.Status) (Progress, bool) {
	rows := make([]Row, len(st.Targets))
	reached := true
	pr := Progress{Elapsed: st.Elapsed, Rows: rows, Precision: s.cfg.Precision}
	if s.cfg.Precision > 0 {
		pr.Remaining = make([]time.Duration, len(rows))
	}
	for i, t := range st.Targets {
		rows[i] = Row{Name: t.Name, Calls: t.Windowed.Mean.Calls, Result: t.Windowed.Mean, Err: t.Err, Batches: t.Windowed.Mean.Batches}
		if s.cfg.Precision <= 0 {
			continue
		}
		if t.Err == nil && estimate.ReachedWindowed(t.Windowed, s.cfg.Precision) {
			continue
		}
		reached = false
		pr.Remaining[i] = -1
		if m, err := estimate.WindowsNeeded(t.Windowed, s.cfg.Precision); err == nil && st.NextDuty > 0 {
			left := m - st.Windows
			pr.Remaining[i] = time.Duration(estimate.WindowedRunTime(max(left, 0), float64(s.cfg.Window), st.NextDuty))
		}
	}
	return pr, reached
}

// applyBudget puts the windowed estimates into run: each target's mean
// with windows as clusters, and the duty, windows and slowdown.
func (s *Session) applyBudget(run *Result, st budget.Status) {
	b := &BudgetResult{Budget: s.cfg.Overhead, Duty: st.Duty, Windows: st.Windows, Slowdown: st.Slowdown,
		Binding: st.NextDuty < 1, Cost: s.cost, NextDuty: st.NextDuty}
	for i, t := range st.Targets {
		b.Rates = append(b.Rates, t.Windowed.Rate)
		b.Windowed = append(b.Windowed, t.Windowed)
		b.Censored += t.Windowed.Censored
		if i >= len(run.Targets) {
			continue
		}
		rt := &run.Targets[i]
		if t.Err != nil {
			rt.Err = t.Err.Error()
			continue
		}
		rt.Estimate = t.Windowed.Mean
		rt.Err = ""
		if run.Validate && rt.Exact != nil && rt.Calls > 0 {
			// --validate: the windowed interval against the exact
			// mean of the calls counted in the windows.
			exact := float64(rt.Exact.Sum) / float64(rt.Calls)
			cov := rt.Estimate.Low <= exact && exact <= rt.Estimate.High
			rt.Covered = &cov
		}
	}
	run.Budget = b
}
