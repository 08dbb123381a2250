// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/tickprof/tickprof/internal/symbolize"
)

// RunWindows is the continuous run: it samples like Run and, every window,
// symbolizes what was gathered since the previous window and hands it to
// emit, so that one session (its BPF programs, perf events and symbol
// tables) serves the whole run. Each window's profile covers [previous
// cut, this cut]; consecutive windows neither overlap nor leave a gap. It
// ends when ctx is done, after Config.Duration, or when the command Open
// started exits; processes given by PID may come and go meanwhile
// (Watch, Unwatch). Sampling then stops and the last (partial) window is
// emitted. emit runs on the calling goroutine; an error from it ends the
// run. Call counts (Config.Count) are cumulative and are not split by
// window.
func (s *Session) RunWindows(ctx context.Context, window time.Duration, emit func(*Profile) error) error {
	if window <= 0 {
		return fmt.Errorf("window %v is not positive", window)
	}
	var stop <-chan struct{}
	if s.held != nil {
		stop = s.held.Done()
	}
	// Downloads of debug files end when the caller's context does (an
	// interrupt), not at the end of the Duration: the last window is
	// symbolized after it.
	s.dlCtx = ctx
	ctx, cancel := s.limit(ctx)
	defer cancel()
	if err := s.begin(); err != nil {
		return err
	}
	defer context.AfterFunc(ctx, s.pause)()
	next := s.start.Add(window)
	for {
		c0 := selfCPU()
		deadline := time.Now().Add(50 * time.Millisecond)
		if deadline.After(next) {
			deadline = next
		}
		err := s.drain(deadline, deadline)
		s.drainCPU += selfCPU() - c0
		if err != nil {
			return err
		}
		done := false
		select {
		case <-ctx.Done():
			done = true
		case <-stop:
			done = true
		default:
		}
		if done {
			return s.lastWindow(emit)
		}
		if now := time.Now(); !now.Before(next) {
			d, err := s.cut(now)
			if err != nil {
				return err
			}
			if err := emit(d); err != nil {
				return err
			}
			for !next.After(now) {
				next = next.Add(window)
			}
		}
	}
}

// lastWindow stops sampling, reads what is left and emits the last
// (partial) window.
func (s *Session) lastWindow(emit func(*Profile) error) error {
	c0 := selfCPU()
	err := s.finish()
	s.drainCPU += selfCPU() - c0
	if err != nil {
		return err
	}
	d, err := s.cut(s.end)
	if err != nil {
		return err
	}
	return emit(d)
}

// cut symbolizes the stacks gathered up to end into a window, then starts
// the next window at end with no stacks, and forgets the memory maps of
// processes that are gone.
func (s *Session) cut(end time.Time) (*Profile, error) {
	saved := s.end
	s.end = end
	d, err := s.profile(false)
	s.end = saved
	// Result labels samples with their PID only when it saw several
	// processes; a window always says whose samples it holds.
	if err == nil {
		pid := 0
		for _, st := range s.stacks {
			pid = st.proc.Pid()
			break
		}
		for i := range d.Samples {
			if d.Samples[i].Pid == 0 {
				d.Samples[i].Pid = int64(pid)
			}
		}
	}
	s.noteWindowProcs()
	s.stacks = map[string]*rawStack{}
	if s.off != nil {
		s.off.idle = nil
	}
	s.start = end
	s.periodBase = s.clockLog.sofar()
	s.procs.Prune()
	s.procs.PruneForks(time.Minute)
	for pid := range s.goNoted {
		if _, ok := s.procs.Current(pid); !ok {
			delete(s.goNoted, pid)
		}
	}
	s.prunePython()
	return d, err
}

// ProcessImage is what a session saw of a process whose samples a window
// holds, when it read the process's memory map: its executable (as
// /proc/PID/exe named it) and that file's build ID (the GNU build ID, else
// the Go build ID; "" when it has none).
type ProcessImage struct {
	Exe, BuildID string
}

// WindowProcess returns what the session saw of process pid, if the last
// window cut holds samples of it: its last image in the window. A process
// that forked, ran and exited within the window is known only here.
func (s *Session) WindowProcess(pid int) (ProcessImage, bool) {
	p, ok := s.windowProcs[pid]
	return p, ok
}

// noteWindowProcs records the image of each process with samples in the
// window being cut (its latest, should it have exec'd), for
// WindowProcess.
func (s *Session) noteWindowProcs() {
	latest := map[int]*symbolize.Image{}
	for _, st := range s.stacks {
		img := st.proc
		if img.Exe() == "" {
			continue
		}
		if l := latest[img.Pid()]; l == nil || img.ID() > l.ID() {
			latest[img.Pid()] = img
		}
	}
	s.windowProcs = make(map[int]ProcessImage, len(latest))
	for pid, img := range latest {
		s.windowProcs[pid] = ProcessImage{Exe: img.Exe(), BuildID: img.ExeBuildID()}
	}
}

// Watch adds a process to the running session's targets (its children are
// followed from then on); Unwatch removes one.
func (s *Session) Watch(pid int) error {
	if s.cfg.All {
		return nil
	}
	if pid <= 0 {
		return errors.New("PID is not positive")
	}
	if err := s.objs.Targets.Put(uint32(pid), uint8(1)); err != nil {
		return fmt.Errorf("mark process %d as target: %w", pid, err)
	}
	return nil
}

// Unwatch stops sampling a process (a no-op when it is not a target).
func (s *Session) Unwatch(pid int) error {
	if s.cfg.All {
		return nil
	}
	if err := s.objs.Targets.Delete(uint32(pid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unmark process %d: %w", pid, err)
	}
	return nil
}

// kallsymsMaxAge is how long a session reuses /proc/kallsyms: parsing it
// cost about 0.1 s of CPU here, 1% of a core if done every 10 s window; it
// changes only when modules load (their functions may then go unnamed for
// up to this long).
const kallsymsMaxAge = 10 * time.Minute

// windowKernelSyms returns the session's growing table of kernel
// symbols, grown to hold those of the stacks gathered: after the first
// windows, a window's kernel frames are mostly in functions met before,
// and kallsyms is read only for the others (and afresh every
// kallsymsMaxAge, for the symbols met since and the window's).
func (s *Session) windowKernelSyms() (kernelTable, error) {
	if s.kgrow == nil {
		s.kgrow = symbolize.NewGrowingKallsyms()
	}
	if err := s.kgrow.Place(s.kernelLooks(), kallsymsMaxAge); err != nil {
		return nil, err
	}
	return s.kgrow, nil
}

// kernelSyms returns the kernel's symbols, read at most every
// kallsymsMaxAge.
func (s *Session) kernelSyms() (*symbolize.Kallsyms, error) {
	if s.ksyms != nil && time.Since(s.ksymsAt) < kallsymsMaxAge {
		return s.ksyms, nil
	}
	s.ksyms = nil // not live while the new table is read
	ks, err := symbolize.ReadKallsyms()
	if err != nil {
		return nil, err
	}
	s.ksyms, s.ksymsAt = ks, time.Now()
	return ks, nil
}
