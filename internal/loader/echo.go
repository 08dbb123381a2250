// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/symtab"
)

// Echo windows measure the probe's own cost inside the timed calls, in the
// run itself (bpf/echo.h; docs/overhead.md). A window attaches, for every
// native user function, a second uprobe (the echo) on the instruction
// after the entry probe's; calls entering in the window are not timed, and
// each gives the gap between its entry's clock reading and its echo's.
// Calls that overlap an attach or a detach of the echoes are not timed
// either: patching a function's text stalls a call that runs into it.

// EchoModel is the calibrated model of a probe pair's overhead inside a
// timed call: O = A + B G_on + P, from the echo's gap G_on on CPU and the
// time P the thread waited for a CPU in between.
type EchoModel struct {
	// A is in ns; B is dimensionless.
	A, B float64
}

// EchoSettle is how long after an attach or detach of the echoes calls are
// still left out: the stalls a text patch causes were seen to end within
// 20 ms of it.
const EchoSettle = 25 * time.Millisecond

// EchoCounts are what the echoes of one target measured, summed over CPUs.
type EchoCounts struct {
	// N is the number of echoed calls; GSum and GSq the sums of their
	// gaps on CPU (ns), PSum and PSq of their waits for a CPU, OSum and
	// OSq of the model's overhead for each, OMax the largest.
	N          uint64
	GSum, PSum uint64
	OSum, OMax uint64
	GSq, PSq   U128
	OSq        U128
	// GPSum is the sum of the products G_on P.
	GPSum uint64
	// Missed counts echoes that found no entry of theirs; Window the calls
	// that entered in a window (not timed); Excluded the calls that
	// overlapped an attach or detach (not timed).
	Missed, Window, Excluded uint64
	// Hist is the overhead values in the quantile histogram's layout
	// (package histogram).
	Hist [529]uint64
}

// echoSite is where one target's echo goes, and the programs that echo
// there (native functions': timing.bpf.c's; Go functions': those loaded for
// their binary).
type echoSite struct {
	t             *Target
	binary        string
	offset        uint64
	cookie        uint64
	single, multi *ebpf.Program
}

// echoState is the session's echo machinery.
type echoState struct {
	mu    sync.Mutex
	sites []echoSite
	links []link.Link
	// skipped says, per target name, why it has no echo.
	skipped map[string]string
}

// echoOn reports whether the session measures its overhead with echoes:
// asked for, native user functions, a clock read in ns at every call, one
// process, not under an overhead budget.
func (s *Session) echoOn() bool {
	if len(s.opts.Echo) != len(s.targets) || s.opts.Clock.Kind == ClockJiffies || s.opts.PID == 0 || s.opts.Windowed {
		return false
	}
	for _, t := range s.targets {
		if t.Spec.Kind == KindUser || t.Spec.Kind == KindGoUser || t.Spec.Kind == KindUSDT {
			return true
		}
	}
	return false
}

// echoConstants are echo.h's load-time constants.
func (s *Session) echoConstants(c map[string]any) {
	c["tp_echo_on"] = boolU32(s.echoOn())
}

// setEchoModels writes every target's model (Options.Echo) for the echo
// programs.
func (s *Session) setEchoModels() error {
	if !s.echoOn() {
		return nil
	}
	for i, t := range s.targets {
		m := s.opts.Echo[i]
		v := bpf.TimingTpEchoModel{A: int64(m.A), B: uint64(max(0, m.B)*1024 + 0.5)}
		if err := s.objs.TpEchoModels.Put(t.Index, &v); err != nil {
			return fmt.Errorf("set the echo model of %s: %w", t.Name, err)
		}
	}
	return nil
}

// findEchoSites finds the echo of every native user function's entry probe;
// a function whose probed instruction has none is timed without (its
// correction then rests on the calibration alone).
func (s *Session) findEchoSites() {
	s.echo.skipped = map[string]string{}
	if !s.echoOn() {
		return
	}
	for _, t := range s.targets {
		if t.Spec.Kind == KindUser {
			s.addEchoSite(t, t.Spec.Binary, t.Spec.Offset, nil, nil)
		}
	}
}

// addEchoSite finds the echo of target t's entry probe at offset of binary
// and keeps it, to be attached with the given programs (nil: the native
// functions'); a target whose probed instruction has no echo is timed
// without (its correction then rests on the calibration alone).
func (s *Session) addEchoSite(t *Target, binary string, offset uint64, single, multi *ebpf.Program) {
	if !s.echoOn() {
		return
	}
	e, err := echoOf(binary, offset)
	if err != nil {
		s.echo.skipped[t.Name] = err.Error()
		return
	}
	s.echo.sites = append(s.echo.sites, echoSite{t: t, binary: binary, offset: offset + e.Skip,
		cookie: uint64(t.Index) | e.SPDelta<<32, single: single, multi: multi})
}

// echoOf reads the instruction under an entry probe at offset of binary
// and finds its echo.
func echoOf(binary string, offset uint64) (symtab.Echo, error) {
	f, err := os.Open(binary)
	if err != nil {
		return symtab.Echo{}, fmt.Errorf("read the probed instruction: %w", err)
	}
	defer f.Close()
	// The probed instruction falls through to the next one of the same
	// function (EchoSite checks it), so 32 bytes hold both.
	code := make([]byte, 32)
	n, err := f.ReadAt(code, int64(offset))
	if n == 0 {
		return symtab.Echo{}, fmt.Errorf("read the probed instruction: %w", err)
	}
	return symtab.EchoSite(code[:n])
}

// EchoSkipped returns, per target name, why it has no echo (targets of an
// echo session that are native user functions only).
func (s *Session) EchoSkipped() map[string]string { return s.echo.skipped }

// HasEchoes reports whether the session can run echo windows.
func (s *Session) HasEchoes() bool { return s.echoOn() && len(s.echo.sites) > 0 }

// monoNow is CLOCK_MONOTONIC in ns, the clock of bpf_ktime_get_ns.
func monoNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// setEcho writes the echo state the programs read.
func (s *Session) setEcho(phase uint32, lo, hi uint64) error {
	st := bpf.TimingTpEchoState{Phase: phase, ExclLo: lo, ExclHi: hi}
	if err := s.objs.TpEcho.Put(uint32(0), &st); err != nil {
		return fmt.Errorf("set the echo state: %w", err)
	}
	return nil
}

// Echo phases (TP_ECHO_* in bpf/echo.h).
const (
	echoNormal   = 0
	echoExcluded = 1
	echoWindow   = 2
)

// EchoWindow runs one echo window of length d: it attaches the echoes,
// lets calls enter tagged for d, and detaches them; calls overlapping the
// attach or the detach (and EchoSettle after each) are left out. It
// returns early when ctx ends, with the echoes detached.
func (s *Session) EchoWindow(ctx context.Context, d time.Duration) error {
	if !s.HasEchoes() {
		return errors.New("the session has no echoes")
	}
	lo := monoNow()
	if err := s.setEcho(echoExcluded, lo, 0); err != nil {
		return err
	}
	var attachErr error
	realtime(func() { attachErr = s.attachEchoes() })
	if attachErr == nil && sleepCtx(ctx, EchoSettle) {
		if err := s.setEcho(echoWindow, lo, monoNow()); err != nil {
			attachErr = err
		} else {
			sleepCtx(ctx, d)
		}
	}
	lo = monoNow()
	if err := s.setEcho(echoExcluded, lo, 0); err != nil && attachErr == nil {
		attachErr = err
	}
	realtime(s.detachEchoes)
	sleepCtx(context.Background(), EchoSettle)
	if err := s.setEcho(echoNormal, lo, monoNow()); err != nil && attachErr == nil {
		attachErr = err
	}
	return attachErr
}

// realtime runs f on a thread of its own at the lowest real-time priority
// (SCHED_FIFO 1), back to the thread's old policy after. Attaching and
// detaching a uprobe patches the function's text with the process's memory
// map locked for writing; a thread of the target that faults on the page
// meanwhile waits for the lock, and when the patching thread is preempted
// while it holds it (a loaded machine) the target stalls for the
// preemption's whole length: milliseconds were seen. A real-time thread
// is not preempted by ordinary tasks. Where the priority cannot be set f
// runs all the same.
func realtime(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := unix.SchedGetAttr(0, 0)
	if err == nil {
		if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0) != nil {
			err = errors.New("no real-time priority")
		}
	}
	f()
	if err == nil {
		unix.SchedSetAttr(0, old, 0)
	}
}

// sleepCtx sleeps d or until ctx ends; it reports whether it slept d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// attachEchoes attaches every echo: one multi-uprobe link per binary where
// the kernel has them, else one link per echo.
func (s *Session) attachEchoes() error {
	s.echo.mu.Lock()
	defer s.echo.mu.Unlock()
	var nativeMulti *ebpf.Program
	if m := s.multiObjects(); m != nil {
		nativeMulti = m.TpUechoMulti
	}
	type group struct {
		bin           string
		single, multi *ebpf.Program
	}
	by := map[group][]echoSite{}
	var order []group
	for _, e := range s.echo.sites {
		g := group{e.binary, e.single, e.multi}
		if e.single == nil {
			g.multi = nativeMulti
			if nativeMulti == nil {
				p, err := s.echoProgram()
				if err != nil {
					return err
				}
				g.single = p
			}
		}
		if by[g] == nil {
			order = append(order, g)
		}
		by[g] = append(by[g], e)
	}
	for _, g := range order {
		ls, err := attachEchoLinks(g.bin, by[g], s.opts.PID, g.single, g.multi)
		s.echo.links = append(s.echo.links, ls...)
		if err != nil {
			return err
		}
	}
	return nil
}

// attachEchoLinks attaches the echoes es of binary bin.
func attachEchoLinks(bin string, es []echoSite, pid int, single, multi *ebpf.Program) ([]link.Link, error) {
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return nil, fmt.Errorf("open %s for the echoes: %w", bin, err)
	}
	if multi != nil {
		opts := &link.UprobeMultiOptions{PID: uint32(pid)}
		for _, e := range es {
			opts.Addresses = append(opts.Addresses, e.offset)
			opts.Cookies = append(opts.Cookies, e.cookie)
		}
		l, err := ex.UprobeMulti(nil, multi, opts)
		if err != nil {
			return nil, fmt.Errorf("attach the echoes in %s: %w", bin, linkErr(err))
		}
		return []link.Link{l}, nil
	}
	var ls []link.Link
	for _, e := range es {
		l, err := ex.Uprobe(e.t.Spec.Symbol, single, &link.UprobeOptions{Address: e.offset, PID: pid, Cookie: e.cookie})
		if err != nil {
			return ls, fmt.Errorf("attach the echo of %s: %w", e.t.Name, linkErr(err))
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// detachEchoes detaches every echo attached.
func (s *Session) detachEchoes() {
	s.echo.mu.Lock()
	defer s.echo.mu.Unlock()
	for _, l := range s.echo.links {
		l.Close()
	}
	s.echo.links = nil
}

// Echoes reads what the echoes measured, per target (Index order); nil when
// the session has no echoes.
func (s *Session) Echoes() ([]EchoCounts, error) {
	if !s.echoOn() {
		return nil, nil
	}
	out := make([]EchoCounts, len(s.targets))
	var per []bpf.TimingTpEchoCounts
	for i, t := range s.targets {
		if err := s.objs.TpEchoes.Lookup(t.Index, &per); err != nil {
			return nil, fmt.Errorf("read the echoes of %s: %w", t.Name, err)
		}
		out[i] = sumEchoes(per)
	}
	return out, nil
}

// sumEchoes adds the per-CPU values of one tp_echoes element.
func sumEchoes(per []bpf.TimingTpEchoCounts) EchoCounts {
	var c EchoCounts
	for _, p := range per {
		c.N += p.N
		c.GSum += p.G_sum
		c.GSq = c.GSq.Add(U128{p.G_sqHi, p.G_sqLo})
		c.PSum += p.P_sum
		c.PSq = c.PSq.Add(U128{p.P_sqHi, p.P_sqLo})
		c.GPSum += p.GpSum
		c.OSum += p.O_sum
		c.OSq = c.OSq.Add(U128{p.O_sqHi, p.O_sqLo})
		c.OMax = max(c.OMax, p.O_max)
		c.Missed += p.Missed
		c.Window += p.Window
		c.Excluded += p.Excluded
		for i := range c.Hist {
			c.Hist[i] += p.Hist[i]
		}
	}
	return c
}
