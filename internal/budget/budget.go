// SPDX-License-Identifier: Apache-2.0

// Package budget runs a windowed timing session under an overhead budget:
// it attaches the probes only in time windows placed at random, at the duty
// cycle that holds the target's projected slowdown within the budget, and
// estimates each target's mean per call, call rate and the slowdown with
// windows as clusters (estimate.WindowedTime).
//
// It owns the windows' timing and placement and the per-window counts; the
// loader owns the probes (loader.Options.Windowed), the estimate package
// the statistics. It is part of the engine (the layering is checked by
// internal/layers): it imports loader and the leaves, and nothing that
// prints.
package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/loader"
)

// Config is what a budgeted run needs.
type Config struct {
	// Budget is the slowdown allowed, a fraction (0.01 for 1%).
	Budget float64
	// Window is the length of a window (default DefaultWindow).
	Window time.Duration
	// Cost is a probe pair's cost per call in ns with its interval (the
	// calibrated T_ovhd of the target's probe kind).
	Cost estimate.Result
	// Threads is the number of busy threads the calls are spread over (0:
	// 1, the safe choice: see estimate.ProbeLoad).
	Threads int
	// MaxDrain bounds how long the probes stay attached after a window for
	// its calls to return (default DefaultMaxDrain); calls still running
	// then are counted as censored.
	MaxDrain time.Duration
	// Estimate are the estimator options (confidence).
	Estimate estimate.Options
	// Seed seeds the window placement (0: from the clock).
	Seed uint64
}

// Defaults.
const (
	DefaultWindow   = 50 * time.Millisecond
	DefaultMaxDrain = 2 * time.Second
)

// Status is the state of a budgeted run after a window.
type Status struct {
	// Windows is the number of windows so far; Elapsed the run's length.
	Windows int
	Elapsed time.Duration
	// Duty is the fraction of the run the probes were attached so far;
	// NextDuty the duty cycle the next window is placed for: the largest
	// that keeps the slowdown's upper bound within the budget (1: the
	// budget does not bind, and the probes stay attached).
	Duty, NextDuty float64
	// Slowdown is the projected slowdown over all targets at the duty
	// cycle the run had (estimate.ProjectSlowdown), with its interval.
	Slowdown estimate.Slowdown
	// CPUShare is the share of one CPU the target process has had since
	// the run started (0: unknown). Below 1 the load is projected per
	// second of the target's CPU time, not of wall-clock time (see
	// status).
	CPUShare float64
	// Targets are the per-target estimates (Index order); Err says why a
	// target has none yet.
	Targets []Target
}

// Target is one target's windowed estimate.
type Target struct {
	Name     string
	Windowed estimate.Windowed
	Err      error
}

// Runner runs windows on a windowed loader session.
type Runner struct {
	ls       *loader.Session
	cfg      Config
	rng      *rand.Rand
	start    time.Time
	stats    []estimate.WindowStats // per target: every window so far, in constant memory
	pilot    []estimate.Window      // per target: the first window
	err      error                  // a window the statistics refused
	res      float64                // clock resolution (ns) for quantized clocks, 0 for ns
	duty     float64
	attach   time.Duration // mean time attaching and draining, around a window
	nAround  int
	attached bool          // probing continuously (the budget does not bind)
	carry    time.Duration // what is left of the pilot's slot, added to the next
	cpu0     time.Duration // the target's CPU time at the start (-1: unknown)
	cpuClock cpuClock      // how cpu0 was read
}

// New returns a runner for ls, which must have been opened with
// Options.Windowed and have its probes detached (loader.Session.DetachProbes).
func New(ls *loader.Session, cfg Config) (*Runner, error) {
	if !ls.Options().Windowed {
		return nil, errors.New("the timing session is not windowed")
	}
	if !(cfg.Budget > 0) || cfg.Budget >= 1 {
		return nil, fmt.Errorf("overhead budget %v: want a fraction between 0 and 1, such as 0.01 for 1%%", cfg.Budget)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxDrain <= 0 {
		cfg.MaxDrain = DefaultMaxDrain
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	r := &Runner{ls: ls, cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		stats: make([]estimate.WindowStats, len(ls.Targets())),
		// Until a rate is measured, plan for the worst: every moment of a
		// probed thread spent in the probes (load u = 1).
		duty: math.Min(1, cfg.Budget/(1+cfg.Budget))}
	if c := ls.Clock(); c.Kind != loader.ClockNS {
		r.res = float64(c.Tick)
	}
	return r, nil
}

// Run places windows at random until ctx is done, calling onWindow (nil:
// none) after each with the estimates so far, and returns the last status.
// Each slot of length (window + time attached around it) / duty holds one
// window at a uniformly random offset (estimate/window.go says why that
// makes every call's chance of being counted the duty cycle).
func (r *Runner) Run(ctx context.Context, onWindow func(Status)) (Status, error) {
	r.start = time.Now()
	r.cpu0 = -1
	if pid := r.ls.Options().PID; pid != 0 {
		if clk, c, err := processCPU(pid); err == nil {
			r.cpuClock, r.cpu0 = clk, c
		}
	}
	prev, err := r.ls.Poll()
	if err != nil {
		return Status{}, err
	}
	var st Status
	defer func() {
		if r.attached {
			r.ls.SetWindowOpen(false)
			r.ls.DetachProbes()
			r.attached = false
		}
	}()
	for {
		step := r.slot
		if r.duty >= 1 {
			// The budget does not bind: probe all the time, one
			// window per Window of time, back to back.
			step = r.continuous
		} else if r.attached {
			// Leaving continuous probing: drain, then windows.
			r.ls.SetWindowOpen(false)
			r.drain()
			r.ls.DetachProbes()
			r.attached = false
			if p, err := r.ls.Poll(); err == nil {
				prev = p
			}
		}
		p, more, err := step(ctx, prev, func(w []estimate.Window) {
			if r.err = r.add(w); r.err != nil {
				return
			}
			st = r.status()
			if onWindow != nil {
				onWindow(st)
			}
			r.duty = st.NextDuty
		})
		if err == nil {
			err = r.err
		}
		if err != nil || !more {
			if r.windows() > 0 {
				st = r.status() // over the whole run
			}
			return st, err
		}
		prev = p
	}
}

// slot runs one slot of windowed probing: a window at a random offset in
// it, then the rest of the slot detached. done is called with the window
// (it updates the duty). It returns the poll after the window and whether
// ctx still lets the run go on.
//
// The first two windows are short (pilotWindow) and the pilot's slot is
// paid back in the second one's (carry): the pilot runs at once and
// measures the call rate, and the first estimate, which needs two windows,
// comes after about (pilot + second window, each with its attach and
// drain) / 2 duty on average, not pilot / duty + half a full slot. At a 1%
// budget on a loaded machine the latter was 10-50 s.
func (r *Runner) slot(ctx context.Context, prev loader.Poll, done func([]estimate.Window)) (loader.Poll, bool, error) {
	around := r.attach
	if around == 0 {
		around = 20 * time.Millisecond // a first guess: attach and drain
	}
	pilot := r.windows() == 0
	length := r.cfg.Window
	if r.windows() < 2 {
		length = pilotWindow(r.cfg.Window)
	}
	busy := length + around
	slot := time.Duration(float64(busy)/r.duty) + r.carry
	r.carry = 0
	offset := time.Duration(r.rng.Float64() * float64(slot-busy))
	if pilot {
		// The first window is the pilot that measures the call
		// rate: at once, so that a short run learns its duty. Its
		// start is fixed by tickprof's clock, not the target's,
		// so it is still independent of the calls; only calls
		// near the start of the run are a little more likely to
		// be counted (a warm-up would weigh more).
		offset = 0
	}
	slotStart := time.Now()
	slotEnd := slotStart.Add(slot)
	if !sleep(ctx, offset) {
		return prev, false, nil
	}
	p, w, err := r.window(ctx, prev, length)
	if err != nil {
		return prev, false, err
	}
	r.nAround++
	r.attach += time.Duration((w[0].Drain - float64(r.attach)) / float64(r.nAround))
	done(w)
	if pilot && r.duty > 0 && r.duty < 1 {
		// The pilot's slot was sized for the worst load: at the
		// measured load's duty it is as long as the pilot and the
		// time attached around it over the duty; what is left of it
		// is added to the next slot, whose window may then come
		// sooner (at once when the budget does not bind).
		r.carry = max(0, time.Duration((w[0].Length+w[0].Drain)/r.duty)-time.Since(slotStart))
		return p, ctx.Err() == nil, nil
	}
	if pilot {
		return p, ctx.Err() == nil, nil
	}
	return p, sleep(ctx, time.Until(slotEnd)), nil
}

// pilotWindow is the length of the first window, which measures the call
// rate before anything is known of it, and of the second: a fifth of a
// window, at most 10 ms.
// It is probed whatever the load, so it is kept short: at 200,000 calls a
// second 10 ms hold 2,000 calls, plenty for the rate's upper bound, and a
// run of a few seconds under a 1% budget has only tens of milliseconds of
// probing to spend.
func pilotWindow(w time.Duration) time.Duration { return min(w/5, 10*time.Millisecond) }

// window runs one window: attach, open, wait length, close, drain, read,
// detach.
// It returns the poll after the window and each target's window.
func (r *Runner) window(ctx context.Context, prev loader.Poll, length time.Duration) (loader.Poll, []estimate.Window, error) {
	t0 := time.Now()
	if err := r.ls.AttachProbes(); err != nil {
		return prev, nil, err
	}
	if err := r.ls.SetWindowOpen(true); err != nil {
		r.ls.DetachProbes()
		return prev, nil, err
	}
	opened := time.Now()
	sleep(ctx, length)
	if err := r.ls.SetWindowOpen(false); err != nil {
		r.ls.DetachProbes()
		return prev, nil, err
	}
	closed := time.Now()
	in, err := r.drain()
	if err != nil {
		r.ls.DetachProbes()
		return prev, nil, err
	}
	p, err := r.ls.Poll()
	drained := time.Now()
	r.ls.DetachProbes()
	if err != nil {
		return prev, nil, err
	}
	ws := make([]estimate.Window, len(p.Totals))
	for i := range p.Totals {
		d := p.Totals[i].Sub(prev.Totals[i])
		w := estimate.Window{
			Length: float64(closed.Sub(opened)),
			Drain:  float64(opened.Sub(t0) + drained.Sub(closed)),
			Calls:  d.Calls,
			Ticks:  d.Ticks,
			Sum:    float64(d.NsSum),
		}
		if in[i] > 0 {
			w.Censored = uint64(in[i])
		}
		ws[i] = w
	}
	return p, ws, nil
}

// drain waits until every counted call has returned, or MaxDrain; it
// returns the calls still in flight.
func (r *Runner) drain() ([]int64, error) {
	start := time.Now()
	for {
		in, err := r.ls.WindowInFlight()
		if err != nil || allZero(in) || time.Since(start) > r.cfg.MaxDrain {
			return in, err
		}
		time.Sleep(time.Millisecond)
	}
}

// continuous runs one Window of continuous probing (attached and open
// throughout) and passes it to done as a window without drain.
func (r *Runner) continuous(ctx context.Context, prev loader.Poll, done func([]estimate.Window)) (loader.Poll, bool, error) {
	t0 := time.Now()
	if !r.attached {
		if err := r.ls.AttachProbes(); err != nil {
			return prev, false, err
		}
		if err := r.ls.SetWindowOpen(true); err != nil {
			return prev, false, err
		}
		r.attached = true
		if p, err := r.ls.Poll(); err == nil {
			prev = p
		}
		t0 = time.Now()
	}
	sleep(ctx, r.cfg.Window)
	p, err := r.ls.Poll()
	if err != nil {
		return prev, false, err
	}
	ws := make([]estimate.Window, len(p.Totals))
	for i := range p.Totals {
		d := p.Totals[i].Sub(prev.Totals[i])
		ws[i] = estimate.Window{Length: float64(time.Since(t0)), Calls: d.Calls, Ticks: d.Ticks, Sum: float64(d.NsSum)}
	}
	done(ws)
	return p, ctx.Err() == nil, nil
}

// add adds a window of every target to the statistics; the first is also
// kept as the pilot.
func (r *Runner) add(w []estimate.Window) error {
	if r.windows() == 0 {
		r.pilot = append([]estimate.Window(nil), w...)
	}
	for i := range w {
		if err := r.stats[i].Add(w[i]); err != nil {
			return fmt.Errorf("%s: %w", r.ls.Targets()[i].Name, err)
		}
	}
	return nil
}

// windows is the number of windows run so far.
func (r *Runner) windows() int { return r.stats[0].Windows() }

// status estimates every target and the slowdown, and the duty cycle for
// the next window.
func (r *Runner) status() Status {
	el := time.Since(r.start)
	st := Status{Windows: r.windows(), Elapsed: el, NextDuty: r.duty, CPUShare: r.cpuShare()}
	var u, lo, hi float64
	conf := r.cfg.Estimate.Confidence
	loadKnown := true
	for i, t := range r.ls.Targets() {
		// With no call counted yet the error says so, and the rate
		// (bounded from zero calls) and duty are still filled in.
		w, err := r.stats[i].Windowed(float64(el), r.res, r.cfg.Estimate)
		st.Targets = append(st.Targets, Target{Name: t.Name, Windowed: w, Err: err})
		if w.Windows == 0 {
			loadKnown = false
			continue
		}
		tu, tlo, thi, c, lerr := estimate.ProbeLoad(perCPU(w.Rate, st.CPUShare), r.cfg.Cost, r.cfg.Threads)
		if lerr != nil {
			loadKnown = false
			continue
		}
		u, lo, hi, conf = u+tu, lo+tlo, hi+thi, c
		st.Duty = w.Duty
	}
	if !loadKnown && r.windows() == 1 {
		// The pilot window alone: no spread between windows yet, so
		// the load's upper bound comes from each count's Poisson bound
		// (n + 3 sqrt(n) + 3, above the 99.8% Garwood bound for every
		// n), enough to place the next windows.
		u, lo, hi, loadKnown = 0, 0, 0, true
		for _, w := range r.pilot {
			n := float64(w.Calls)
			rate := estimate.Result{Mean: n / (w.Length / 1e9), Low: 0, High: (n + 3*math.Sqrt(n) + 3) / (w.Length / 1e9), Confidence: 0.998}
			tu, tlo, thi, c, err := estimate.ProbeLoad(perCPU(rate, st.CPUShare), r.cfg.Cost, r.cfg.Threads)
			if err != nil {
				loadKnown = false
				break
			}
			u, lo, hi, conf = u+tu, lo+tlo, hi+thi, c
		}
		st.Duty = math.Min(1, (r.pilot[0].Length+r.pilot[0].Drain)/float64(el))
	}
	if !loadKnown {
		return st
	}
	if sd, err := estimate.ProjectSlowdown(u, lo, hi, conf, math.Max(st.Duty, 1e-9)); err == nil {
		st.Slowdown = sd
	}
	if q, err := estimate.DutyForBudget(r.cfg.Budget, hi); err == nil {
		st.NextDuty = q
	}
	return st
}

// perCPU turns a call rate per second of wall-clock time into one per
// second of the target's CPU time when the target had less than a CPU
// (share in (0, 1)). The load u = rate x cost is the share of a thread's
// time spent in the probes if the thread runs all the time; a target
// preempted by other work, or waiting, runs less, and the probes' cost
// then weighs on the CPU time it gets: probed all the time, its
// throughput per CPU second falls by the same factor whatever its share
// of the machine. With a CPU or more the rate is left as it is: every
// call is then projected as if made on one thread (Config.Threads), which
// errs on the side of the budget.
func perCPU(rate estimate.Result, share float64) estimate.Result {
	if !(share > 0 && share < 1) {
		return rate
	}
	rate.Mean, rate.Low, rate.High, rate.StdErr = rate.Mean/share, rate.Low/share, rate.High/share, rate.StdErr/share
	return rate
}

func allZero(v []int64) bool {
	for _, x := range v {
		if x > 0 {
			return false
		}
	}
	return true
}

// sleep waits d or until ctx is done; false when ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
