// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/budget"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/proc"
)

var sprintf = fmt.Sprintf

// Session is one timing run: opened (probes attached, a started command
// still held), then run once.
type Session struct {
	cfg     Config
	pid     int
	held    *proc.Held
	exited  <-chan struct{} // closed when the timed process exits
	specs   []loader.Spec
	kinds   []string // per spec, its calibrated probe kind ("": none)
	ls      *loader.Session
	watch   *loader.NoCallsWatch
	inlined map[string][]string
	start   time.Time
	pollErr error           // the read that stopped the run
	cost    estimate.Result // probe cost per call, under an overhead budget
	// qrules are the quantile stop rules, one per target.
	qrules []quantileRule
	// refineOff: refining the quantiles' buckets failed (quantiles.go).
	refineOff bool
	// echo runs the echo windows (echo.go).
	echo echoRunner
	// ran is set when Run starts.
	ran bool
	// execs follows the process's execs (exec.go); nil for every process.
	execs *proc.ExecWatch
	// recheck: the caller cannot observe every process, so its access to
	// this one is checked again at every poll (credentials change).
	recheck bool
	// started: the command started held exec'd its program (exec.go).
	started bool
	// execMu serializes the exec checks of the run loop and followExecs;
	// lost is set when followExecs found access lost.
	execMu sync.Mutex
	lost   atomic.Bool
	// othersSeen are the functions another tracer was seen probing.
	othersSeen map[string]bool
}

// Open starts the command held before exec (or checks the process),
// resolves the targets and attaches the probes; ctx ending meanwhile stops
// attaching. Functions the kernel cannot probe are named in a warning
// (from a glob: skipped) or fail the open (named on their own). The
// caller must Close the session.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	cfg = cfg.withDefaults()
	if err := checkAttachMode(cfg.Targets.KernelAttach); err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, pid: cfg.PID}
	if len(cfg.Command) > 0 {
		h, err := proc.StartHeld(cfg.Command, proc.Stdio{In: cfg.Stdin, Out: cfg.Stdout, Err: cfg.Stderr})
		if err != nil {
			return nil, err
		}
		s.held, s.pid, s.exited = h, h.Pid, h.Done()
	} else if s.pid != 0 {
		var err error
		if s.exited, err = proc.ExitNotify(s.pid); err != nil {
			return nil, err
		}
	}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) open(ctx context.Context) error {
	specs, err := s.cfg.Targets.resolve(s.pid)
	if err != nil {
		return err
	}
	s.specs = specs
	s.overheadKinds()
	windowed := s.cfg.Overhead > 0
	if err := filteredUnderBudget(specs, windowed); err != nil {
		return err
	}
	if windowed {
		if s.cost, err = s.budgetCost(); err != nil {
			return err
		}
	}
	watched := s.watchExecs()
	ls, err := loader.OpenContext(ctx, loader.Options{Clock: s.cfg.Clock.loader(), Exact: s.cfg.Exact, PID: s.pid, NoRecords: s.cfg.NoRecords, Windowed: windowed,
		Quantiles: len(s.cfg.Quantiles) > 0, StackBytes: s.cfg.StackBytes, NoStacks: s.cfg.SkipCallers, NoRefine: s.cfg.NoRefine || s.cfg.Overhead > 0,
		Echo: s.echoModels()}, specs)
	if err != nil {
		watched()
		return err
	}
	s.ls = ls
	if _, err := ls.StackCopy(); err != nil {
		s.cfg.warn("caller stacks by frame pointers: the kernel refused the programs that copy the user stack (%v)", err)
	}
	if sk := ls.Skipped(); len(sk) > 0 {
		s.cfg.warn("%d function(s) skipped, not timed: %s", len(sk), loader.FormatSkipped(sk, 8))
	}
	if windowed {
		ls.DetachProbes() // the windows attach them
	} else if s.cfg.DetachHelper != nil {
		// Windows attach and detach in this process; a whole run's probes
		// go to the helper.
		if err := ls.HandOff(s.cfg.DetachHelper()); err != nil {
			s.cfg.warn("%v; the probes are detached by this process", err)
		}
	}
	s.watch = loader.NewNoCallsWatch(s.pid)
	s.inlined = s.goInlined()
	watched()
	s.warnOthers()
	return nil
}

// goInlined warns, one line per Go target, about the functions it was also
// inlined into (those calls run none of its own code and are not counted),
// and returns them by target name.
func (s *Session) goInlined() map[string][]string {
	g, err := s.ls.GoStats()
	if err != nil {
		s.cfg.warn("%v", err)
	}
	out := map[string][]string{}
	for _, site := range g.Sites {
		if len(site.InlinedInto) == 0 {
			continue
		}
		out[site.Target] = site.InlinedInto
		into := site.InlinedInto
		if len(into) > 3 {
			into = append(into[:3:3], fmt.Sprintf("%d more", len(site.InlinedInto)-3))
		}
		s.cfg.warn("%s is also inlined into %s: those calls run no probe and are not counted (mark it //go:noinline to count them)",
			site.Target, strings.Join(into, ", "))
	}
	return out
}

// PID is the timed process (the started command's), 0 for every process.
func (s *Session) PID() int { return s.pid }

// Clock is the clock in use (the jiffy period measured).
func (s *Session) Clock() Clock { return clockOf(s.ls.Clock()) }

// Targets are the attached targets, in the order of the result's.
func (s *Session) Targets() []Target {
	ts := s.ls.Targets()
	out := make([]Target, len(ts))
	for i, t := range ts {
		out[i] = targetOf(t.Spec, t.Name)
	}
	return out
}

// PollErr is the read error that stopped the run (nil when a stop rule
// did).
func (s *Session) PollErr() error { return s.pollErr }

// Detach removes the probes once the results are out (Run reads them
// first); ctx ending returns early, and a helper process (Config.
// DetachHelper) or Close finishes the job.
func (s *Session) Detach(ctx context.Context) error {
	if s.ls == nil {
		return nil
	}
	return s.ls.Detach(ctx)
}

// Close detaches every probe and, when the command started is still held
// (an error before Run), kills it.
func (s *Session) Close() error {
	var err error
	if s.execs != nil {
		s.execs.Close()
	}
	if s.ls != nil {
		err = s.ls.Close()
	}
	if s.held != nil && s.start.IsZero() {
		s.held.Kill()
		s.held.Wait()
	}
	return err
}

// StopReason says why a run stopped.
type StopReason string

// Stop reasons (Result.StopReason); a failed read stops a run with
// "error: " and the error (Session.PollErr).
const (
	StopInterrupted StopReason = "interrupted"
	StopDuration    StopReason = "duration reached"
	StopExited      StopReason = "target exited"
	StopPrecision   StopReason = "precision reached"
	// StopAccessLost: the process exec'd a program (or changed its
	// credentials) that the caller may not observe.
	StopAccessLost StopReason = "access lost"
)

// Run releases the held command, polls every Interval until a stop rule
// holds (Duration, Precision, the target's exit, or ctx done), reads the
// counters a last time, ends the command when it still runs, and returns
// the result. Config.OnProgress sees every batch's estimates. A failed
// read stops the run (PollErr), and the result holds the last good read.
// A session runs once.
func (s *Session) Run(ctx context.Context) (*Result, error) {
	if s.ran {
		return nil, errors.New("the timing session has run already")
	}
	s.ran = true
	s.start = time.Now()
	runtime0 := programRuntime(s.ls.Programs())
	if s.held != nil {
		s.held.Release()
	}
	var bst *budget.Status
	var reason StopReason
	var lastGood *loader.Poll
	if s.cfg.Overhead > 0 {
		r, st, p, err := s.runBudget(ctx)
		if err != nil {
			return nil, err
		}
		reason, lastGood, bst = r, p, &st
	} else {
		reason, lastGood = s.loop(ctx)
	}
	s.warnOthers()
	s.ls.Stop()
	p, err := s.ls.Poll()
	if err != nil {
		if lastGood == nil {
			return nil, fmt.Errorf("%w: nothing was read to report; check `tickprof doctor`", err)
		}
		// The batches end with the last good poll: report that.
		s.cfg.warn("the final read failed (%v): reporting the poll at %.1fs", err, lastGood.Elapsed.Seconds())
		p = *lastGood
	}
	if s.held != nil && reason != StopExited {
		s.endCommand()
	}
	run := s.buildRun(p, reason)
	run.BPFRuntime = programRuntime(s.ls.Programs()) - runtime0
	if bst != nil {
		s.applyBudget(run, *bst)
	}
	run.Notes = append(run.Notes, s.watch.Hints(s.ls, p)...)
	s.correct(run, s.echoResults(run))
	return run, nil
}

// loop polls until a stop rule holds; it returns the reason and the last
// poll that read every counter.
func (s *Session) loop(ctx context.Context) (StopReason, *loader.Poll) {
	var deadline <-chan time.Time
	if s.cfg.Duration > 0 {
		t := time.NewTimer(s.cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	defer s.startEchoes(ctx)()
	stopFollow := make(chan struct{})
	followed := s.followExecs(stopFollow)
	defer func() { close(stopFollow); <-followed }()
	early := newRefineSchedule(s.cfg.Interval)
	defer early.Stop()
	var lastGood *loader.Poll
	for {
		select {
		case <-ctx.Done():
			return StopInterrupted, lastGood
		case <-deadline:
			return StopDuration, lastGood
		case <-s.exited:
			return StopExited, lastGood
		case <-early.C:
			s.refine()
			early.next()
			continue
		case <-tick.C:
		}
		if s.accessLost() {
			return StopAccessLost, lastGood
		}
		p, err := s.ls.Poll()
		if err != nil {
			// Stop, and still report what the last good read holds.
			s.pollErr = err
			return StopReason("error: " + err.Error()), lastGood
		}
		lastGood = &p
		s.pollEchoes()
		s.refine()
		s.watch.Update(s.ls, p)
		rows := s.rows(p)
		if s.cfg.OnProgress != nil {
			s.cfg.OnProgress(s.progress(p, rows))
		}
		if s.cfg.Precision > 0 && s.cfg.PrecisionQuantile > 0 {
			if s.quantilesReached(p) {
				return StopPrecision, lastGood
			}
		} else if s.cfg.Precision > 0 && allReached(rows, s.cfg.Precision) {
			return StopPrecision, lastGood
		}
	}
}

// rows estimates every target from a poll.
func (s *Session) rows(p loader.Poll) []Row {
	rows := make([]Row, len(p.Totals))
	for i, c := range p.Totals {
		rows[i] = estimateTarget(s.ls.Clock(), c, s.ls.Batches(i), s.cfg.Estimate)
		rows[i].Name = s.ls.Targets()[i].Name
	}
	return rows
}

func (s *Session) progress(p loader.Poll, rows []Row) Progress {
	pr := Progress{Elapsed: p.Elapsed, Rows: rows, Precision: s.cfg.Precision}
	if s.cfg.Precision > 0 {
		pr.Remaining = make([]time.Duration, len(rows))
		pr.RemainingLow = make([]time.Duration, len(rows))
		pr.RemainingHigh = make([]time.Duration, len(rows))
		if s.cfg.PrecisionQuantile != 0 {
			pr.Quantiles = make([]*estimate.Quantile, len(rows))
			for i := range s.qrules {
				pr.Quantiles[i] = s.qrules[i].last
			}
		}
		for i, r := range rows {
			if s.cfg.PrecisionQuantile != 0 {
				need := s.quantileRemaining(i, r.Calls, p.Elapsed)
				pr.Remaining[i], pr.RemainingLow[i], pr.RemainingHigh[i] = need, need, need
				continue
			}
			pr.Remaining[i], pr.RemainingLow[i], pr.RemainingHigh[i] = r.RemainingRange(s.cfg.Precision, p.Elapsed, s.cfg.Interval, s.cfg.Estimate)
		}
	}
	return pr
}

// endCommand ends the command started: SIGTERM, then SIGKILL after 2s.
func (s *Session) endCommand() {
	syscall.Kill(s.held.Pid, syscall.SIGTERM)
	select {
	case <-s.held.Done():
	case <-time.After(2 * time.Second):
		s.held.Kill()
	}
}
