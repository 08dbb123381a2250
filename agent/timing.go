// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/timing"
)

// timer times user functions and system calls continuously with one
// timing session (targets resolved and attached as `tickprof time` does),
// and turns the counters' increments over each window into an
// export.TimeWindow (n, sum c, sum c^2 per target: the counts report
// recomputes the intervals from; see export/merge.go) with the window's
// histogram increments. It does not run the session's poll loop (each
// window's read is one batch) except under an overhead budget, whose run
// places the probing windows while the agent only reads the counters.
type timer struct {
	ts      *timing.Session
	targets []timing.Target
	last    []timing.Counters
	clock   timing.Clock
	conf    float64
	// Under an overhead budget the timing session's own run places the
	// probing windows; stop ends it and done closes when it has.
	stop func()
	done chan struct{}
}

// timerConfig is what every timer of an agent shares.
type timerConfig struct {
	users, syscalls []string
	conf            float64
	// overhead is the slowdown budget (0: none); corrector gives the probe
	// cost it needs.
	overhead  float64
	corrector timing.Corrector
	// maxProbes is the most functions one of users may expand to.
	maxProbes int
}

// budgetWindow is the probing window under an overhead budget: longer than
// the budget package's default, so that an agent running for days keeps
// fewer windows in memory (the runner keeps every window's counts).
const budgetWindow = 500 * time.Millisecond

// startTimer resolves and attaches the targets for process pid (0: every
// process; user targets then need a path). Under an overhead budget it
// starts the timing session's run, which attaches the probes only in
// random windows.
func startTimer(c timerConfig, pid int, warn func(string)) (*timer, error) {
	if len(c.users)+len(c.syscalls) == 0 {
		return nil, errors.New("no timing targets")
	}
	tc := timing.Config{PID: pid, Targets: timing.Targets{Users: c.users, Syscalls: c.syscalls, MaxProbes: c.maxProbes},
		NoRecords: true, NoRefine: true, Warn: warn}
	tc.Clock = tc.DefaultClock()
	if tc.Clock.Kind == timing.ClockNS {
		// The exact clock keeps a histogram of durations per target: the
		// windows carry its counts (export.HistType).
		tc.Quantiles = export.DefaultWindowQuantiles
	}
	if c.overhead > 0 {
		tc.Overhead, tc.Window, tc.Corrector, tc.Correction = c.overhead, budgetWindow, c.corrector, timing.CorrectionOn
	}
	ts, err := timing.Open(context.Background(), tc)
	if err != nil {
		return nil, err
	}
	tgs := ts.Targets()
	t := &timer{ts: ts, targets: tgs, last: make([]timing.Counters, len(tgs)), clock: ts.Clock(), conf: c.conf}
	if c.overhead > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		t.stop, t.done = cancel, make(chan struct{})
		go func() {
			defer close(t.done)
			if _, err := ts.Run(ctx); err != nil {
				warn(fmt.Sprintf("probing windows: %v", err))
			}
		}()
	}
	return t, nil
}

// window reads the counters and returns their increments since the last
// call as a time window over [start, end]. Every target is carried, however
// long its calls: sums of squared durations past 63 bits are written in
// power-of-two units (export.TimeWindowTarget.TicksSqHi). The histograms
// (exact clock only) are read just after the counters, so a window's
// histogram may hold a few calls more or fewer than its counters; the next
// window's makes up for it.
func (t *timer) window(start, end time.Time) (*export.TimeWindow, error) {
	read := t.ts.Poll
	if t.stop != nil {
		read = t.ts.Read // the budget's run polls
	}
	cs, err := read()
	if err != nil {
		return nil, err
	}
	w := &export.TimeWindow{Clock: t.clock.String(), Resolution: t.clock.Resolution(), Confidence: t.conf,
		Start: start, Duration: end.Sub(start)}
	for i, tg := range t.targets {
		inc := cs[i].Sub(t.last[i])
		t.last[i] = cs[i]
		w.Targets = append(w.Targets, export.TimeWindowTarget{Name: tg.Name, Binary: tg.File,
			Calls: inc.Calls, Ticks: inc.Ticks, TicksSq: inc.TicksSq, TicksSqHi: inc.TicksSqHi, Hist: inc.Hist})
	}
	return w, nil
}

func (t *timer) close() {
	if t.stop != nil {
		t.stop()
		<-t.done
	}
	t.ts.Close()
}

// timers holds one timer per watched process (each its own timing session
// filtered to that process), or one for every process (key 0) when the
// agent samples all of them. New processes get a timer as the watch set
// picks them up; a process that leaves the set keeps its timer until its
// last window is read.
type timers struct {
	cfg  timerConfig
	logf func(format string, args ...any)

	mu     sync.Mutex
	byPID  map[int]*timer
	start  map[int]uint64 // the process's start time, to tell a reused PID apart
	ended  map[int]bool   // left the watch set: read once more, then closed
	failed map[int]uint64 // could not be timed (start time): not retried
}

func newTimers(cfg timerConfig, logf func(string, ...any)) *timers {
	return &timers{cfg: cfg, logf: logf,
		byPID: map[int]*timer{}, start: map[int]uint64{}, ended: map[int]bool{}, failed: map[int]uint64{}}
}

// add starts timing process pid (0: every process) unless it is timed
// already or could not be timed before (same start time).
func (ts *timers) add(pid int, start uint64) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old, ok := ts.byPID[pid]; ok {
		if ts.start[pid] == start && !ts.ended[pid] {
			return nil
		}
		old.close() // a reused PID: the old process's partial window is lost
		delete(ts.byPID, pid)
	}
	if s, ok := ts.failed[pid]; ok && s == start {
		return nil
	}
	t, err := startTimer(ts.cfg, pid, func(m string) { ts.logf("timing %d: %s", pid, m) })
	if err == nil {
		// The counters start now; the first window covers the rest.
		_, err = t.window(time.Now(), time.Now())
	}
	if err != nil {
		if t != nil {
			t.close()
		}
		ts.failed[pid] = start
		return fmt.Errorf("timing process %d: %w", pid, err)
	}
	ts.byPID[pid], ts.start[pid] = t, start
	delete(ts.ended, pid)
	return nil
}

// end marks pid as gone: its timer is read at the next window, then closed.
func (ts *timers) end(pid int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.byPID[pid]; ok {
		ts.ended[pid] = true
	}
	delete(ts.failed, pid)
}

// windows reads every timer's window over [start, end], in PID order, and
// closes the timers of processes that ended.
func (ts *timers) windows(start, end time.Time) (pids []int, ws []*export.TimeWindow, errs []error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for pid := range ts.byPID {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	ws = make([]*export.TimeWindow, len(pids))
	for i, pid := range pids {
		t := ts.byPID[pid]
		w, err := t.window(start, end)
		if err != nil {
			errs = append(errs, fmt.Errorf("timing process %d: %w", pid, err))
		}
		ws[i] = w
		if ts.ended[pid] {
			t.close()
			delete(ts.byPID, pid)
			delete(ts.ended, pid)
		}
	}
	return pids, ws, errs
}

// len is the number of timed processes.
func (ts *timers) len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.byPID)
}

// close closes every timer.
func (ts *timers) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for pid, t := range ts.byPID {
		t.close()
		delete(ts.byPID, pid)
	}
}
