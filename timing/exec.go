// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"context"
	"time"

	"github.com/tickprof/tickprof/internal/proc"
)

// Following the timed process across exec. A process that execs keeps its
// PID, and the run goes on: the system calls are still timed (their
// probes filter by PID); the user functions' probes are bound to the
// process's main thread, which an exec by another thread replaces, so they
// are attached again then (loader.Session.RelinkUprobes). An exec may also
// make the process one the caller may not observe (a set-user-ID program
// run by a user with CAP_BPF and CAP_PERFMON only): the caller's access is
// checked at every exec, and at every poll when it lacks CAP_SYS_PTRACE
// (credentials change without an exec too); the run stops there, saying
// why, with what was timed before.

// watchExecs starts following the timed process's execs (none under every
// process) on its own goroutine, while the probes are loaded and attached:
// the perf event it opens on a running process took up to 15 ms of the
// start. The returned function waits for it; a process that cannot be
// watched is then timed as before, with a warning.
func (s *Session) watchExecs() (wait func()) {
	if s.pid == 0 {
		return func() {}
	}
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.recheck = !proc.Self().Ptrace
		s.execs, err = proc.WatchExec(s.pid)
	}()
	return func() {
		<-done
		if err != nil {
			s.cfg.warn("%v: an exec by one of its threads would end the timing of its functions unseen", err)
		}
	}
}

// followExecs attaches the function probes again as soon as a thread other
// than the main one exec'd (the calls in between are not counted: a few
// milliseconds'), until stop is closed; the returned channel is closed when
// it returned.
func (s *Session) followExecs(stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	if s.execs == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		for {
			s.execMu.Lock()
			hup := s.execs.HungUp()
			s.execMu.Unlock()
			select {
			case <-stop:
				return
			case <-hup:
			}
			if s.checkExec() {
				s.lost.Store(true)
			}
			if proc.CheckProcess(s.pid) != nil {
				return
			}
		}
	}()
	return done
}

// accessLost checks for an exec since the last poll and the caller's
// access to the process; true when the run must stop.
func (s *Session) accessLost() bool {
	if s.checkExec() || s.lost.Load() {
		return true
	}
	if s.recheck && s.pid != 0 {
		if err := proc.CheckAccess(s.pid); err != nil && proc.CheckProcess(s.pid) == nil {
			s.cfg.warn("timing stopped: process %d may no longer be observed (its credentials changed): %v", s.pid, err)
			return true
		}
	}
	return false
}

// checkExec handles an exec since the last check; true when the caller
// may not observe what the process runs now.
func (s *Session) checkExec() bool {
	if s.execs == nil {
		return false
	}
	s.execMu.Lock()
	defer s.execMu.Unlock()
	ev, err := s.execs.Check()
	if err != nil || !ev.Exec {
		return false
	}
	return s.onExec(ev)
}

// onExec handles an exec of the timed process (s.execMu held); true when
// the caller may not observe what it runs now.
func (s *Session) onExec(ev proc.ExecEvent) bool {
	if err := proc.CheckAccess(s.pid); err != nil {
		if proc.CheckProcess(s.pid) != nil {
			return false // gone: the exit is seen by Run
		}
		s.cfg.warn("timing stopped: process %d exec'd a program it may not be observed in: %v", s.pid, err)
		return true
	}
	if s.held != nil && !s.started {
		// The command started held has just exec'd its program.
		s.started = true
		return false
	}
	if ev.ByThread {
		t0 := time.Now()
		if err := s.ls.RelinkUprobes(context.Background(), s.cfg.DetachHelper); err != nil {
			s.cfg.warn("process %d exec'd from a thread, and its functions could not be probed again: %v", s.pid, err)
		} else {
			s.cfg.warn("process %d exec'd from a thread, which takes the probes bound to its main thread away: they were attached again in %v; the calls in between are not counted", s.pid, time.Since(t0).Round(time.Millisecond))
		}
	}
	if ev.ExeChanged {
		s.cfg.warn("process %d exec'd another program: the functions timed in its former executable are called no more (system calls and shared libraries are still timed)", s.pid)
	}
	return false
}
