// SPDX-License-Identifier: Apache-2.0

// Package sampler samples the program counters and stacks of processes with
// a BPF program on per-CPU cpu-clock perf events, counts calls of chosen
// functions with entry-only uprobes, and turns what it gathered into a
// Profile, its own model (package export encodes it as pprof).
//
//	s, err := sampler.Open(ctx, cfg) // held command, programs attached
//	defer s.Close()
//	res, err := s.Run(ctx)           // release, sample, stop, profile
//
// Package timing has the same shape; RunWindows is the continuous run
// that cuts a profile every window instead. Layering (checked by
// internal/layers): sampler may import the layers below it (push, the
// engine, the leaves); not timing, export or anything above.
//
// User stacks are unwound from a copy of the user stack and registers the
// BPF program takes per sample (unwind.go here), falling back to the
// kernel's frame-pointer walk. Everything that turns addresses into frames
// is internal/symbolize's, shared with the caller stacks of timed calls:
// the processes' memory maps, read when a process's first sample arrives
// (the BPF program wakes the reader for it), again after exec (the BPF
// program reports it), and again when a sample taken after the last read
// meets an address outside it; the vDSO; separate debug files; inlined
// calls; the kernel's symbols.
//
// In CPython processes the BPF program also copies the Python stack
// (bpf/python.h); python.go names its frames (internal/python) and puts
// them in place of the eval-loop frames.
//
// sampler may import bpf, internal/features, internal/proc,
// internal/python, internal/symbolize, internal/symtab,
// internal/debuginfo and internal/unwind; it must not import export or
// cmd.
package sampler

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	tpbpf "github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/symtab"
)

// Config says what to sample, and for how long. Its zero fields take the
// defaults their comments give, filled in by Open.
type Config struct {
	// Frequency is the sampling rate per CPU in Hz (0: DefaultFrequency;
	// at most MaxFrequency).
	Frequency int
	// PIDs are the processes to sample (their children are followed);
	// Run ends when they have all exited.
	PIDs []int
	// Command, when given instead, is started held before exec with
	// Stdin, Stdout and Stderr (nil: this process's), released by Run so
	// that its first instructions are sampled, and killed when sampling
	// stops before it exits.
	Command []string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// All samples every process (the idle task excepted) instead.
	All bool
	// Exe is the main executable of the target when it cannot be read from
	// /proc/PID/exe yet (a process held before exec that is not Command's);
	// optional.
	Exe string
	// Count lists functions whose calls are counted: "SYMBOL" in the main
	// executable or "BINARY:SYMBOL".
	Count []string
	// StackBytes is how much of the user stack is copied per sample for
	// unwinding by call frame information (0: DefaultStackBytes; at most
	// MaxStackBytes).
	StackBytes int
	// FramePointersOnly turns the stack copy off: user stacks are then
	// the kernel's frame-pointer walks.
	FramePointersOnly bool
	// FixedPeriod keeps the sampling clocks on one grid of their nominal
	// period, as perf does, instead of restarting them with random
	// periods (dither.go), which a program periodic at the sampling rate
	// can lock to; it exists to compare with perf and to measure what the
	// restarts change.
	FixedPeriod bool
	// Duration stops Run after this long (0: at the targets' exit or when
	// its context is done).
	Duration time.Duration
	// OffCPU samples time off CPU too (offcpu.go).
	OffCPU OffCPUConfig
}

// DefaultFrequency is the sampling rate when Config.Frequency is 0: 99 Hz,
// as perf's default, off the 100 Hz of timers that would otherwise keep
// step with it.
const DefaultFrequency = 99

// withDefaults is cfg with every zero field that has a default filled in:
// the one place the defaults are set.
func (cfg Config) withDefaults() Config {
	if cfg.Frequency == 0 {
		cfg.Frequency = DefaultFrequency
	}
	if !cfg.FramePointersOnly {
		cfg.StackBytes = cfg.stackBytes()
	}
	return cfg
}

// Stats are the sampler's own counters.
type Stats struct {
	Seen    uint64 // perf events handled by the BPF program
	Kept    uint64 // samples of a target
	Idle    uint64 // samples of the idle task
	Dropped uint64 // samples lost because the ring buffer was full
	// Unread counts samples left in the ring buffer when sampling stopped
	// and not read: at the highest rates the reader falls behind, and the
	// run must end all the same.
	Unread  uint64
	Records uint64 // records read from the ring buffer
	Exited  int    // processes sampled that were gone at the end
	// Python counts the samples of Python processes (CPython 3.8-3.13
	// found in them); PythonNoThread, PythonReadFailed and PythonTooDeep
	// those whose Python stack is missing or cut: no thread state was the
	// sampled thread's (a thread that never ran Python), a read of the
	// interpreter's memory failed, or it was deeper than the walk goes
	// (64 frames).
	Python, PythonNoThread, PythonReadFailed, PythonTooDeep uint64
	// DrainCPU is the CPU time (user+system, ns) this process spent while
	// sampling: draining the ring buffer and reading process maps.
	DrainCPU float64
	// SymbolizeCPU is the CPU time (ns) spent symbolizing the profile.
	SymbolizeCPU float64
	// BPFRuntime is the time the sampling program ran, in the context of
	// whatever each CPU was running, and BPFRuns its runs, as the
	// kernel's BPF statistics count them; BPFStats says they were on (the
	// session turns them on where the kernel can: 5.8+).
	BPFRuntime time.Duration
	BPFRuns    uint64
	BPFStats   bool
	// Period is the mean sampling period of the session so far, in ns:
	// the CPU time one sample stands for (a window's own is its
	// Profile's). Dithered says the periods were drawn at random, not
	// fixed (Config.FixedPeriod).
	Period   float64
	Dithered bool
	// OffCPU are the off-CPU counters (Config.OffCPU).
	OffCPU OffCPUStats
}

// counted is one --count function.
type counted struct {
	spec   string
	name   string // the function as the profile names it
	binary string
	link   link.Link
}

// Session is one sampling run: opened (programs loaded and attached, a
// started command still held), then run once, with Run or RunWindows.
type Session struct {
	cfg Config
	// held is the command started (nil for PIDs and All); ran is set when
	// a run starts.
	held   *proc.Held
	ran    bool
	objs   tpbpf.SampleObjects
	clocks []cpuClock
	// clockMu guards clocks against pause, which may run on another
	// goroutine.
	clockMu sync.Mutex
	// clockLog records the clocks' periods and restarts, dither restarts
	// them (nil with FixedPeriod), and periodBase is the log's totals
	// when the current window started.
	clockLog   *clockLog
	dither     *ditherer
	periodBase clockTotals
	links      []link.Link
	counted    []*counted
	reader     *ringbuf.Reader
	pump       *pump
	start      time.Time
	end        time.Time
	procs      *symbolize.Procs
	// goNoted is the image of each Go process whose g the BPF program
	// was told of (noteGo), by PID.
	goNoted map[int]uint64
	// py is the Python processes and their frames (python.go).
	py      pyState
	stacks  map[string]*rawStack
	records uint64
	// copied and copies are the user stack bytes received and the
	// samples that carried a copy.
	copied, copies uint64
	// CPU time of this process spent in Run and in Result (ns).
	drainCPU, symCPU float64
	// ksyms is /proc/kallsyms as read at ksymsAt (see kernelSyms).
	ksyms   *symbolize.Kallsyms
	ksymsAt time.Time
	// kgrow holds the kernel symbols the windows met (windowKernelSyms).
	kgrow *symbolize.GrowingKallsyms
	// windowProcs are the processes of the last window cut (window.go).
	windowProcs map[int]ProcessImage
	// unread counts the samples discard threw away.
	unread uint64
	// dlCtx cancels downloads of debug files (symbolize.go); nil: none.
	dlCtx context.Context
	// bpfStats holds the kernel's BPF run-time statistics on (nil: off).
	bpfStats io.Closer
	// off is the off-CPU sampling (offcpu.go); nil when off.
	off *offState
}

// rawStack is one distinct stack of one process image, with its count.
type rawStack struct {
	proc  *symbolize.Image
	flags uint32
	kern  []uint64
	user  []uint64
	count int64
	// unwound says the user stack came from call frame information;
	// stop says why it ended early (zero when it reached its root).
	unwound bool
	stop    walkStop
	// py is the Python stack (interned frames, leaf first) and pyLost
	// why it is missing or cut (python.go).
	py     []int32
	pyLost string
	// off is the off-CPU time of an off-CPU stack, tid its thread
	// (offcpu.go: with off-CPU sampling stacks are kept by thread).
	off *OffCPU
	tid int64
}

// Record kinds and flags, as in bpf/sample.bpf.c.
const (
	recSample = 1
	recExec   = 2
	recFork   = 3

	flagKernFull = 1
	flagUserFull = 2
	flagKernErr  = 4
	flagUserErr  = 8
	flagSPWord   = 16
	flagRegs     = 32
	flagGoCgo    = 64
	flagPy       = 128

	hdrSize = 96 // sizeof(struct sample_hdr)
)

// Open starts the command held before exec (or checks the processes),
// loads the BPF programs, marks the targets, attaches the call counters
// and starts the sampling clocks; Run or RunWindows then releases the
// command and drains the samples. ctx ending meanwhile stops the open.
// The caller must Close the session.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raise memlock rlimit: %w", err)
	}
	spec, err := cfg.spec()
	if err != nil {
		return nil, err
	}
	s := newSession(cfg)
	if len(cfg.Command) > 0 {
		h, err := proc.StartHeld(cfg.Command, proc.Stdio{In: cfg.Stdin, Out: cfg.Stdout, Err: cfg.Stderr})
		if err != nil {
			return nil, err
		}
		s.held = h
		s.cfg.PIDs, s.cfg.Exe = []int{h.Pid}, h.Exe
	}
	if err := s.load(ctx, spec); err != nil {
		s.Close()
		return nil, err
	}
	// The kernel's BPF run-time statistics, for the cost of the sampling
	// program (Stats.BPFRuntime): two clock reads per program run, a few
	// tens of ns beside a sample's microseconds. They are the kernel's
	// own switch for every program while the handle is held (5.8+); a
	// kernel without them leaves BPFStats false.
	if st, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME); err == nil {
		s.bpfStats = st
	}
	return s, nil
}

// newSession is a session of cfg before anything is loaded: its process
// table finds separate debug files as the debuginfod client does
// (debuginfo.FromEnv).
func newSession(cfg Config) *Session {
	return &Session{cfg: cfg, procs: symbolize.NewProcs(debuginfo.FromEnv()), goNoted: map[int]uint64{}, stacks: map[string]*rawStack{}}
}

// load loads the programs and attaches them, unless ctx is done first.
func (s *Session) load(ctx context.Context, spec *ebpf.CollectionSpec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := tpbpf.Load(spec, &s.objs, "the sampling programs"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.attach()
}

// check validates the configuration and that the caller may observe the
// processes.
func (cfg Config) check() error {
	if cfg.Frequency <= 0 || cfg.Frequency > MaxFrequency {
		return fmt.Errorf("sampling rate %d Hz is out of range 1..%d", cfg.Frequency, MaxFrequency)
	}
	targets := 0
	for _, set := range []bool{len(cfg.PIDs) > 0, len(cfg.Command) > 0, cfg.All} {
		if set {
			targets++
		}
	}
	if targets != 1 {
		return errors.New("sample one of: processes by PID, a command, or every process")
	}
	// The access check perf applies to a process it samples: CAP_PERFMON
	// alone does not let a user sample another user's process.
	for _, pid := range cfg.PIDs {
		if err := proc.CheckAccess(pid); err != nil {
			return err
		}
	}
	return nil
}

// spec reads the sampling programs' spec with the configuration's
// load-time constants and ring size.
func (cfg Config) spec() (*ebpf.CollectionSpec, error) {
	spec, err := tpbpf.LoadSample()
	if err != nil {
		return nil, fmt.Errorf("load sampling BPF spec: %w", err)
	}
	if cfg.All {
		if err := spec.Variables["filter_all"].Set(uint8(1)); err != nil {
			return nil, fmt.Errorf("set filter_all: %w", err)
		}
	}
	if n := cfg.stackBytes(); n > 0 {
		if err := spec.Variables["stack_bytes"].Set(uint32(n)); err != nil {
			return nil, fmt.Errorf("set stack_bytes: %w", err)
		}
	}
	spec.Maps["samples"].MaxEntries = ringBytes(cfg.Frequency, runtime.NumCPU(), cfg.stackBytes())
	if err := spec.Variables["wake_bytes"].Set(ringWakeBytes(spec.Maps["samples"].MaxEntries)); err != nil {
		return nil, fmt.Errorf("set wake_bytes: %w", err)
	}
	return spec, nil
}

// attach marks the targets, attaches the tracepoints and call counters,
// opens the ring buffer and starts the clocks.
func (s *Session) attach() error {
	for _, pid := range s.cfg.PIDs {
		if err := s.objs.Targets.Put(uint32(pid), uint8(1)); err != nil {
			return fmt.Errorf("mark process %d as target: %w", pid, err)
		}
	}
	// A tracepoint is found through tracefs, which a machine fresh from
	// boot may not have mounted yet.
	if _, err := features.EnsureTracefs(); err != nil {
		return fmt.Errorf("attach the scheduler tracepoints: %w", err)
	}
	// Children are followed (and, with All, only noted: see
	// symbolize.Procs.Fork).
	l, err := link.Tracepoint("sched", "sched_process_fork", s.objs.FollowFork, nil)
	if err != nil {
		return fmt.Errorf("attach to sched_process_fork (needed to follow children): %w", proc.TracefsPermission(err))
	}
	s.links = append(s.links, l)
	l, err = link.Tracepoint("sched", "sched_process_exec", s.objs.NoteExec, nil)
	if err != nil {
		return fmt.Errorf("attach to sched_process_exec: %w", err)
	}
	s.links = append(s.links, l)
	for i, c := range s.cfg.Count {
		cc, err := s.attachCounter(i, c)
		if err != nil {
			return err
		}
		s.counted = append(s.counted, cc)
	}
	if s.reader, err = ringbuf.NewReader(s.objs.Samples); err != nil {
		return fmt.Errorf("open sample ring buffer: %w", err)
	}
	s.pump = newPump(s.reader, s.objs.Samples.FD())
	if err := s.startOffCPU(); err != nil {
		return err
	}
	s.start = time.Now()
	return s.startClocks()
}

// attachCounter resolves "[BINARY:]SYMBOL" and attaches the entry-only
// counting uprobe at the symbol's file offset, with counter slot idx.
func (s *Session) attachCounter(idx int, spec string) (*counted, error) {
	if idx >= 64 {
		return nil, fmt.Errorf("count %s: at most 64 functions can be counted", spec)
	}
	bin, sym, err := s.countBinary(spec)
	if err != nil {
		return nil, err
	}
	tab, err := symtab.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("count %s: %w", spec, err)
	}
	defer tab.Close()
	syms := tab.Lookup(sym)
	if len(syms) == 0 {
		hint := ""
		if c := tab.Closest(sym, 3); len(c) > 0 {
			hint = " (did you mean " + strings.Join(c, ", ") + "?)"
		}
		if sym == "" {
			return nil, fmt.Errorf("count %q names no function: give [BINARY:]SYMBOL, e.g. main.work", spec)
		}
		return nil, fmt.Errorf("count %s: no function %q in %s%s; list its functions with nm", spec, sym, bin, hint)
	}
	fs := syms[0]
	off, err := tab.FileOffset(fs.Value)
	if err != nil {
		return nil, fmt.Errorf("count %s: %w", spec, err)
	}
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return nil, fmt.Errorf("count %s: open %s for uprobes: %w", spec, bin, err)
	}
	opts := &link.UprobeOptions{Address: off, Cookie: uint64(idx)}
	if !s.cfg.All && len(s.cfg.PIDs) == 1 {
		opts.PID = s.cfg.PIDs[0]
	}
	up, err := ex.Uprobe(fs.Name, s.objs.CountCalls, opts)
	if err != nil {
		return nil, proc.UprobeAttachError(fmt.Sprintf("count %s (%s+%#x)", spec, bin, off), err)
	}
	return &counted{spec: spec, name: fs.Display, binary: bin, link: up}, nil
}

// countBinary resolves a [LIB|PATH:]SYMBOL count spec (proc.SplitTarget,
// as timing's user functions are) to the file to probe and the symbol.
func (s *Session) countBinary(spec string) (bin, sym string, err error) {
	binPart, sym := proc.SplitTarget(spec)
	pid := 0
	if len(s.cfg.PIDs) > 0 {
		pid = s.cfg.PIDs[0]
	}
	switch {
	case binPart != "":
		bin, _, err = proc.ResolveBinary(pid, binPart)
		if err != nil {
			return "", "", fmt.Errorf("count %s: %w", spec, err)
		}
	case s.cfg.Exe != "":
		bin = s.cfg.Exe
	case pid != 0:
		bin = fmt.Sprintf("/proc/%d/exe", pid)
	default:
		return "", "", fmt.Errorf("count %s: sampling every process, name the file too: BINARY:SYMBOL", spec)
	}
	return bin, sym, nil
}

// sample drains samples until ctx is done or stop is closed (the targets
// exited), then stops the perf events and drains what is left.
func (s *Session) sample(ctx context.Context, stop <-chan struct{}) error {
	defer context.AfterFunc(ctx, s.pause)()
	c0 := selfCPU()
	defer func() { s.drainCPU += selfCPU() - c0 }()
	for {
		d := time.Now().Add(50 * time.Millisecond)
		if err := s.drain(d, d); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return s.finish()
		case <-stop:
			return s.finish()
		default:
		}
	}
}

// finish stops sampling and handles the records left, for at most
// finishDrain; what is left then is counted as unread (discard).
func (s *Session) finish() error {
	s.stopClocks()
	s.stopOffCPU()
	s.end = time.Now()
	s.pump.stop()
	budget := time.NewTimer(finishDrain)
	defer budget.Stop()
	for {
		select {
		case c, ok := <-s.pump.full:
			if !ok {
				s.closeOpen()
				return s.pump.err
			}
			s.handleChunk(c)
		case <-budget.C:
			s.discard()
			s.closeOpen()
			return s.pump.err
		}
	}
}

// discard takes the records left without handling them (the reader fell
// behind and finish ran out of time), counting the samples among them as
// unread. Nothing adds to the ring once the clocks are closed, so the
// pump ends; this parses nothing, so it ends soon.
func (s *Session) discard() {
	for c := range s.pump.full {
		records(c, func(b []byte) {
			if len(b) >= 4 && binary.LittleEndian.Uint32(b) == recSample {
				s.unread++
			}
		})
	}
}

// pause disables the sampling clocks at once; it may run on any
// goroutine. Run and RunWindows call it as soon as their context ends: at
// the highest rates the sampling program can take most of every CPU, and
// this process then crawls until the clocks stop (a kallsyms read took
// 100 s at 100 kHz on two loaded CPUs).
func (s *Session) pause() {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	for _, c := range s.clocks {
		_ = unix.IoctlSetInt(c.fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
}

// finishDrain bounds the reading of what is left in the ring buffer once
// the clocks are stopped: at the highest rates the reader may be far
// behind, and the run must still end promptly.
const finishDrain = 250 * time.Millisecond

// drain handles the pump's chunks until the deadline, or until stop
// once a chunk is handled: at high sampling rates records may never stop
// coming, and the caller must get back to its context.
func (s *Session) drain(deadline, stop time.Time) error {
	s.tuneOffCPU()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	full := s.pump.full
	for {
		select {
		case c, ok := <-full:
			if !ok {
				if s.pump.err != nil {
					return s.pump.err
				}
				full = nil // the ring is closed: wait out the deadline
				continue
			}
			s.handleChunk(c)
			if !time.Now().Before(stop) {
				return nil
			}
		case <-timer.C:
			return nil
		}
	}
}

// handleChunk handles a chunk's records and hands the chunk back.
func (s *Session) handleChunk(c []byte) {
	records(c, func(b []byte) {
		s.records++
		s.handle(b)
	})
	s.pump.recycle(c)
}

// handle parses one ring-buffer record and adds it to the stack counts.
func (s *Session) handle(b []byte) {
	if s.handleOff(b) {
		return
	}
	if len(b) < hdrSize {
		return
	}
	le := binary.LittleEndian
	pid := int(le.Uint32(b[4:]))
	switch le.Uint32(b[0:]) { // the record's kind
	case recExec:
		s.procs.Exec(pid)
		return
	case recFork:
		s.procs.Fork(pid, int(le.Uint32(b[8:])))
		return
	case recSample:
	default:
		return
	}
	l, ok := layoutOf(b)
	if !ok {
		return
	}
	kn := l.kn
	flags := le.Uint32(b[28:])
	img := s.procs.Image(pid)
	s.noteGo(img)
	s.notePython(img)
	kern := b[hdrSize:l.stack]
	user, stop, copied, unwound := s.userStack(img, b, flags, l)
	// Re-read the map when the walk met a user address outside it (a
	// library mapped after the map was read) and walk again.
	if symbolize.StoppedOutside(stop) && img.Refresh(le.Uint64(b[16:])) {
		img = s.procs.Image(pid)
		s.noteGo(img)
		s.notePython(img)
		user, stop, copied, unwound = s.userStack(img, b, flags, l)
	}
	if unwound {
		s.copied += uint64(copied)
		s.copies++
	}
	py, pyLost := s.pythonStack(pid, b, flags, l)
	flags &^= flagSPWord | flagRegs | flagGoCgo | flagPy
	key := make([]byte, 0, 32+8*(kn+len(user)))
	key = le.AppendUint64(key, img.ID())
	key = le.AppendUint32(key, flags)
	key = le.AppendUint16(key, uint16(kn))
	key = append(key, kern...)
	for _, a := range user {
		key = le.AppendUint64(key, a)
	}
	key = append(key, stop.Reason...)
	key = append(key, 0)
	key = append(key, stop.File...)
	key = append(key, 0)
	key = append(key, pyLost...)
	for _, f := range py {
		key = le.AppendUint32(key, uint32(f))
	}
	key = s.offKey(key, b)
	if st, ok := s.stacks[string(key)]; ok {
		s.tally(string(key), st)
		return
	}
	st := &rawStack{proc: img, flags: flags, user: user, unwound: unwound, stop: stop, py: py, pyLost: pyLost}
	for i := 0; i < kn; i++ {
		st.kern = append(st.kern, le.Uint64(kern[8*i:]))
	}
	s.stacks[string(key)] = st
	s.tally(string(key), st)
}

// recordLayout gives where the parts of a sample record lie (bpf/sample.bpf.c
// struct sample_buf): kn kernel addresses at hdrSize, then the copy of the
// user stack at stack, the copy of a goroutine's stack at goStack, and un
// user addresses (the frame-pointer walk) at user, then pn Python frames
// (pyFrameSize bytes each) at py.
type recordLayout struct {
	kn, un, pn               int
	stack, goStack, user, py int
}

// layoutOf reads a sample record's layout; false if the record is shorter
// than its header says.
func layoutOf(b []byte) (recordLayout, bool) {
	le := binary.LittleEndian
	l := recordLayout{kn: int(le.Uint16(b[24:])), un: int(le.Uint16(b[26:]))}
	l.stack = hdrSize + 8*l.kn
	l.goStack = l.stack + int(le.Uint32(b[64:]))
	l.user = l.goStack + int(le.Uint32(b[68:]))
	l.py, l.pn = l.user+8*l.un, int(le.Uint16(b[88:]))
	return l, l.py+pyFrameSize*l.pn <= len(b)
}

// userStack is a sample record's user stack: unwound from its registers
// and stack copy when it has them (unwound; copied is the copy's length),
// else the frame-pointer walk (with the frameless leaf's caller restored)
// cut at its first address outside the process's executable mappings.
func (s *Session) userStack(img *symbolize.Image, b []byte, flags uint32, l recordLayout) (user []uint64, stop walkStop, copied int, unwound bool) {
	le := binary.LittleEndian
	un := l.un
	for i := 0; i < un; i++ {
		user = append(user, le.Uint64(b[l.user+8*i:]))
	}
	if regs, stack, ok := parseUserRegs(b, flags, l.stack); ok && len(img.Maps()) > 0 {
		sw := cgoSwitch(img, b, flags, l.goStack)
		user, stop = img.Unwind(regs, stack, user, sw)
		return user, stop, len(stack), true
	}
	// A frameless user leaf (or one in its prologue) hides its caller
	// from the frame-pointer walk; the word at the stack pointer is then
	// the return address into that caller, which is kept when the
	// instruction before it is a direct call of the leaf's function.
	if flags&flagSPWord != 0 && un > 0 {
		ra := le.Uint64(b[32:])
		if (un < 2 || user[1] != ra) && img.IsCallTo(ra, user[0]) {
			user = append(user[:1], append([]uint64{ra}, user[1:]...)...)
		}
	}
	user, stop = img.CutOutside(user)
	return user, stop, 0, false
}

// Stats reads the BPF counters.
func (s *Session) Stats() Stats {
	st := Stats{Records: s.records, Unread: s.unread}
	var vals []uint64
	for i, dst := range []*uint64{&st.Seen, &st.Kept, &st.Dropped, &st.Idle, &st.Python, &st.PythonNoThread, &st.PythonReadFailed, &st.PythonTooDeep} {
		if s.objs.Stats == nil {
			break
		}
		if err := s.objs.Stats.Lookup(uint32(i), &vals); err == nil {
			for _, v := range vals {
				*dst += v
			}
		}
	}
	st.Exited = s.procs.Exited()
	st.DrainCPU, st.SymbolizeCPU = s.drainCPU, s.symCPU
	st.Period = s.clockLog.meanPeriod(clockTotals{}, s.clockLog.sofar())
	st.Dithered = s.dither != nil
	st.OffCPU = s.offStats()
	if s.objs.SampleCpu != nil {
		if ps, err := s.objs.SampleCpu.Stats(); err == nil {
			st.BPFRuntime, st.BPFRuns = ps.Runtime, ps.RunCount
			st.BPFStats = s.bpfStats != nil || ps.RunCount > 0
		}
	}
	return st
}

// Calls returns the call count of every --count function.
func (s *Session) Calls() ([]CallCount, error) {
	var out []CallCount
	for i, c := range s.counted {
		var vals []uint64
		if err := s.objs.Calls.Lookup(uint32(i), &vals); err != nil {
			return nil, fmt.Errorf("read call count of %s: %w", c.spec, err)
		}
		var n uint64
		for _, v := range vals {
			n += v
		}
		out = append(out, CallCount{Function: c.name, Spec: c.spec, Calls: int64(n)})
	}
	return out, nil
}

// CallCount is the number of calls of a --count function.
type CallCount struct {
	Function string // as the profile names it
	Spec     string // as given to --count
	Calls    int64
}

// Span returns when sampling started and stopped (now if still running).
func (s *Session) Span() (time.Time, time.Duration) {
	end := s.end
	if end.IsZero() {
		end = time.Now()
	}
	return s.start, end.Sub(s.start)
}

// selfCPU returns the user+system CPU time of this process in ns.
func selfCPU() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano() + ru.Stime.Nano())
}

// Close detaches everything and releases the BPF objects and open files;
// a command started and still held (an error before a run) is killed.
func (s *Session) Close() error {
	if s.held != nil && !s.ran {
		s.held.Kill()
		s.held.Wait()
	}
	s.stopClocks()
	for _, c := range s.counted {
		c.link.Close()
	}
	s.counted = nil
	s.closeOffCPU()
	for _, l := range s.links {
		l.Close()
	}
	s.links = nil
	if s.reader != nil {
		s.reader.Close()
	}
	if s.pump != nil {
		s.pump.close()
		// The pump ends at the closed reader; a chunk it is handing on
		// when nothing reads any more is taken here.
		go func(full <-chan []byte) {
			for range full {
			}
		}(s.pump.full)
		s.pump = nil
	}
	s.procs.Close()
	s.py.close()
	if s.bpfStats != nil {
		s.bpfStats.Close()
		s.bpfStats = nil
	}
	return s.objs.Close()
}
