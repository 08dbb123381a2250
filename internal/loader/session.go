// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/ringwait"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/tick"
	"github.com/tickprof/tickprof/internal/unwind"
)

// attachFunc attaches the timing programs for every target of one Kind.
// See the package documentation for the contract.
type attachFunc func(s *Session, targets []*Target) error

// attacher is the attach method of kind k (nil for an unknown kind).
func attacher(k Kind) attachFunc {
	switch k {
	case KindUser:
		return attachUser
	case KindGoUser:
		return attachGo
	case KindSyscall:
		return attachSyscalls
	case KindKernelFunc:
		return attachKernelFuncs
	case KindUSDT:
		return attachUSDT
	}
	return nil
}

// Options configure a Session.
type Options struct {
	// Clock is the tick clock. For ClockJiffies a zero Tick is measured.
	Clock Clock
	// Exact also reads the ns clock on every call (ns mode, --validate).
	Exact bool
	// Quantiles keeps a log-geometric histogram of the exact durations per
	// target (package histogram; needs Exact). It costs one more map
	// update per call and 4232 bytes per target per CPU.
	Quantiles bool
	// NoRefine turns off the refinement of the buckets near the quantiles
	// (Session.Refine; on with Quantiles otherwise: 2048 bytes per target
	// per CPU more).
	NoRefine bool
	// PID restricts counting to one process (its threads); 0 counts all.
	PID int
	// NoRecords turns off the crossing records (and per-caller detail).
	NoRecords bool
	// RingSize is the ring buffer size in bytes (a power of two, >= 4096);
	// 0 means 1 MiB.
	RingSize int
	// RecordGrid is, for the ns clock, the grid whose lines decide which
	// calls get a crossing record (about ET/RecordGrid records per call);
	// 0 means DefaultRecordGrid.
	RecordGrid time.Duration
	// MaxInFlight sizes the in-flight map of hash-keyed entry state (Go
	// functions: one entry per goroutine and call depth; kernel
	// functions): calls in flight beyond it evict the least recently used
	// entries, whose calls are lost as orphans (RunStats.NoEntry). 0 means
	// DefaultMaxInFlight, or DefaultMaxInFlightGo when a Go function is
	// timed.
	MaxInFlight int
	// SingleLinks attaches user functions with one uprobe link per probe
	// even where the kernel has multi-uprobe links (the path of kernels
	// before 6.6; for tests and measurements).
	SingleLinks bool
	// Windowed counts only the calls entering while the window is open
	// (SetWindowOpen; closed at Open) and keeps the in-flight count
	// (WindowInFlight): timing under an overhead budget. Every kind of
	// target; AttachProbes and DetachProbes link and unlink them window
	// by window.
	Windowed bool
	// CheckEvery is, for the jiffies clock without Exact, how many calls
	// one checked call stands for at most: a random share of the calls is
	// also timed with the ns clock (Counters.Check), so that the jiffies
	// estimate can be compared with the exact mean of the same calls. The
	// first calls are checked 1 in 8 (or 1 in CheckEvery if fewer), to
	// learn how long they are; Poll then sets the rate per target so that
	// the check costs about 1% of the calls' time, between every call
	// (calls from 7.2 us) and 1 in CheckEvery. 0 means DefaultCheckEvery;
	// a negative value turns the check off; otherwise a power of two.
	// Unused with the other clocks: tick:DUR is asynchronous with the
	// program by construction, ns is exact.
	CheckEvery int
	// StackBytes is how much of the user stack a crossing record of a
	// user function copies, for its caller stack unwound with call frame
	// information (0: symbolize.MaxStackBytes, also the most); negative: none,
	// caller stacks are then the kernel's frame-pointer walks. Only with
	// PID set.
	StackBytes int
	// NoStacks counts crossing records without reading the process's
	// memory map or unwinding their caller stacks (CallerRecords counts as
	// ever; Callers then symbolizes nothing: a copied stack is left out, a
	// frame-pointer walk keeps its bare addresses): for a caller that shows
	// no caller stacks, since reading the map's files and unwinding every
	// record was a fifth of a one-function run's CPU.
	NoStacks bool
	// Echo, when set (one model per spec, in order), measures the probes'
	// own cost inside the timed calls with echo windows (EchoWindow), the
	// overhead of each echoed call computed with its target's model:
	// native user functions, with a clock read in ns (ns, tick:DUR), one
	// process (PID), not Windowed.
	Echo []EchoModel
}

// DefaultCheckEvery is the jiffies clock's default check rate: about 1 in
// 64 calls pays two ns-clock reads (72 ns here), about 1 ns per call on
// average, next to the one random draw every call pays.
const DefaultCheckEvery = 64

// In-flight map sizes (entries of about 300 bytes, preallocated: 16,384
// take 5 MB, 65,536 take 21 MB). A Go server with 16 connections recursing 2,000 deep holds
// 32,000 calls in flight.
const (
	DefaultMaxInFlight   = 16384
	DefaultMaxInFlightGo = 65536
)

// DefaultRecordGrid is the ns clock's record grid: per-caller attribution
// from one record per 131 us of timed code keeps the ring traffic of short
// functions small. 2^17 ns: a power of two, so that the program shifts
// instead of dividing (tp_record_shift).
const DefaultRecordGrid = (1 << 17) * time.Nanosecond

// Target is one attached target.
type Target struct {
	// Index is the target's element in tp_counters (the BPF cookie).
	Index uint32
	// Spec is what was asked for.
	Spec Spec
	// Name is the display name.
	Name string
}

// Session holds the loaded timing objects and the attached probes.
type Session struct {
	opts Options
	objs bpf.TimingObjects
	// timingSpec is timing.bpf.c's spec, for the programs loaded on
	// first use (timingPrograms).
	timingSpec *ebpf.CollectionSpec
	targets    []*Target
	echo       echoState

	links   []link.Link
	closers []io.Closer
	stopped bool
	// entryLinks and exitLinks are detached first, in parallel, entries
	// before exits; links are the rest (AddLink), in reverse order.
	entryLinks, exitLinks []link.Link
	detached              bool
	// helper holds the links after HandOff; closing helperRelease lets
	// it detach them; helperDone reports its end.
	helper        *exec.Cmd
	helperRelease *os.File
	helperDone    chan error
	// ctx ends attaching early (Open's context).
	ctx      context.Context
	umulti   *bpf.UmultiObjects
	noMulti  bool
	linkKind string
	skipped  []Skipped

	// umultiSpec is umulti.bpf.c's object, read once for the probe-site
	// screen and the programs.
	umultiSpec *umultiSpec
	// singleLinks counts the single uprobe links planned (MaxSingleLinks).
	singleLinks int
	// relinks attach each kind's probes again from the programs already
	// loaded (windowed sessions: linkProbes, AttachProbes).
	relinks []func() error
	// uprobeRelinks attach the probes bound to the process again
	// (RelinkUprobes).
	uprobeRelinks []func() error
	// ownLinks are the IDs of this session's uprobe links (others.go).
	ownLinks map[link.ID]bool
	// finalInFlight and finalGo are read by Stop with the final counters.
	finalInFlight []uint64
	finalGo       *GoStats

	reader *ringbuf.Reader
	// wake waits for the crossing records in Go's poller (nil: the
	// drain loop waits in reader; see internal/ringwait).
	wake  *ringwait.Waiter
	drain sync.WaitGroup

	mu      sync.Mutex
	callers map[callerKey]*callerAgg
	records uint64

	start    time.Time
	last     []Counters
	final    *Poll // the counters read by Stop
	finalErr error
	// attachOrphans are the orphans counted while attaching (per target);
	// attachNoEntry the exits without entry among them.
	attachOrphans []uint64
	attachNoEntry uint64
	// merging makes Poll add its increment to the last batch (Stop).
	merging bool
	batches [][]Counters
	// finalHists are the duration histograms read by Stop (nil without
	// quantiles).
	finalHists []*histogram.Hist
	// refine is the refinement's state (qhist.go; nil until Refine).
	refine *refineState
	// procs symbolizes the timed process's caller stacks (nil when every
	// process is timed); procMu guards it and its images, used by the
	// drain and by Callers.
	procs  *symbolize.Procs
	procMu sync.Mutex
	// checkEvery is the clock check's rate per target (tp_check).
	checkEvery []uint32
	// stackRefused is why the kernel refused the programs with the stack
	// copy (they were loaded without it), or nil.
	stackRefused error
}

type callerKey struct {
	target  uint32
	stackID int32
	// img is the memory map of the process the stack is symbolized in
	// (nil without a stack, or when every process is timed).
	img *symbolize.Image
	// pcs and stop are a stack unwound from a copy (stackID -1): its
	// addresses (packPCs) and where it ended early.
	pcs  string
	stop unwind.Where
}

type callerAgg struct {
	records, ticks, ns uint64
}

// Open is OpenContext without a context.
func Open(opts Options, specs []Spec) (*Session, error) {
	return OpenContext(context.Background(), opts, specs)
}

// OpenContext loads the timing programs, attaches every spec and starts
// draining the crossing records. The caller must Close the session.
//
// User functions whose first instruction the kernel cannot probe are found
// before anything is attached (screenUprobes): those from a glob are left
// out (Skipped lists them), one named by itself fails Open. When ctx ends
// while probes are being attached, what was attached is detached and Open
// returns ctx's error.
func OpenContext(ctx context.Context, opts Options, specs []Spec) (*Session, error) {
	if err := checkOpen(opts, specs); err != nil {
		return nil, err
	}
	opts, err := settleClock(opts)
	if err != nil {
		return nil, err
	}
	um := &umultiSpec{}
	kept, skipped, err := screenUprobes(ctx, specs, !opts.SingleLinks && HaveUprobeMulti() == nil, um)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted while checking the probe sites, before timing: %w", ctx.Err())
		}
		return nil, err
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("none of the %d functions can be probed: %s", len(skipped), FormatSkipped(skipped, 5))
	}
	specs = kept
	if err := checkSingleLinkCap(opts, specs); err != nil {
		return nil, err
	}
	s := &Session{opts: opts, callers: map[callerKey]*callerAgg{}, ctx: ctx, skipped: skipped, umultiSpec: um}
	for i, sp := range specs {
		name := sp.Name
		if name == "" {
			name = sp.Symbol
		}
		s.targets = append(s.targets, &Target{Index: uint32(i), Spec: sp, Name: name})
	}
	s.findEchoSites()
	if err := s.load(); err != nil {
		return nil, err
	}
	if opts.PID != 0 && !opts.NoStacks && !opts.NoRecords {
		// The map is read now, while the process lives; records that
		// meet a library mapped since reread it (callerStack).
		s.procs = symbolize.NewProcs(debuginfo.FromEnv())
		s.procs.Image(opts.PID)
	}
	if err := s.attachAll(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.startReading(); err != nil {
		s.Close()
		return nil, err
	}
	// The objects' specs are read again should more be loaded: a session
	// that runs for days (an agent's, one per timed process) held about
	// 1 MB of parsed ELF and BTF each.
	s.umultiSpec.release()
	s.timingSpec = nil
	return s, nil
}

// checkOpen checks what a session needs before anything is loaded: targets
// of known kinds, the privileges, the caller's access to the process, and
// a memlock limit that BPF maps fit in.
func checkOpen(opts Options, specs []Spec) error {
	if len(specs) == 0 {
		return errors.New("no targets to time")
	}
	if err := CheckPrivileges(); err != nil {
		return err
	}
	if opts.PID != 0 {
		// The access check perf applies: CAP_BPF and CAP_PERFMON alone do
		// not let a user time another user's process.
		if err := proc.CheckAccess(opts.PID); err != nil {
			return err
		}
	}
	for _, sp := range specs {
		if attacher(sp.Kind) == nil {
			return fmt.Errorf("%s: unknown target kind %v", sp.Name, sp.Kind)
		}
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise the memlock limit: %w", err)
	}
	return nil
}

// settleClock fills in the clock's resolution (the measured tick for
// jiffies, 1 ns for the ns clock), the record grid (ns clock only) and
// how often jiffies calls are checked against the ns clock.
func settleClock(opts Options) (Options, error) {
	if opts.Clock.Kind == ClockJiffies && opts.Clock.Tick == 0 {
		d, err := tick.Period(200 * time.Millisecond)
		if err != nil {
			return opts, err
		}
		opts.Clock.Tick = d
	}
	if opts.Clock.Kind == ClockNS {
		opts.Clock.Tick = time.Nanosecond
		opts.Exact = true
		if opts.RecordGrid <= 0 {
			opts.RecordGrid = DefaultRecordGrid
		}
	} else {
		opts.RecordGrid = 0
	}
	if opts.Clock.Tick <= 0 {
		return opts, fmt.Errorf("clock %s has no resolution", opts.Clock)
	}
	switch {
	case opts.Clock.Kind != ClockJiffies || opts.CheckEvery < 0:
		opts.CheckEvery = 0
	case opts.CheckEvery == 0:
		opts.CheckEvery = DefaultCheckEvery
	case opts.CheckEvery&(opts.CheckEvery-1) != 0 || opts.CheckEvery > 1<<30:
		return opts, fmt.Errorf("check every %d calls: want a power of two", opts.CheckEvery)
	}
	return opts, nil
}

// attachAll attaches the targets' probes, kind by kind.
func (s *Session) attachAll(ctx context.Context) error {
	kinds, byKind := groupByKind(s.targets)
	for _, k := range kinds {
		err := ctx.Err()
		if err == nil {
			err = attacher(k)(s, byKind[k])
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while attaching, before timing: %w", ctx.Err())
			}
			return err
		}
	}
	return nil
}

// startReading starts draining the crossing records and takes the
// counters at the start, whose orphans are the calls in flight while the
// probes were attached.
func (s *Session) startReading() error {
	rd, err := ringbuf.NewReader(s.objs.TpRecords)
	if err != nil {
		return fmt.Errorf("open the crossing-record ring buffer: %w", err)
	}
	s.reader = rd
	if w, err := ringwait.New(s.objs.TpRecords.FD()); err == nil {
		s.wake = w
	}
	s.drain.Add(1)
	go s.drainLoop()
	s.start = time.Now()
	s.last = make([]Counters, len(s.targets))
	s.batches = make([][]Counters, len(s.targets))
	// Exits are attached before entries, so calls that began while the
	// entries were being attached end as orphans by construction: not a
	// sign of trouble, and left out of what Poll reports.
	s.attachOrphans = make([]uint64, len(s.targets))
	if p, err := s.read(); err == nil {
		for i, c := range p.Totals {
			s.attachOrphans[i] = c.Orphans
		}
		s.attachNoEntry = p.Stats.NoEntry
	}
	return nil
}

// constants returns the load-time constants of timing.h.
func (s *Session) constants() map[string]any {
	exact, records := uint32(0), uint32(1)
	if s.opts.Exact {
		exact = 1
	}
	if s.opts.NoRecords {
		records = 0
	}
	tick := uint64(1)
	if s.opts.Clock.Kind == ClockTick {
		tick = uint64(s.opts.Clock.Tick)
	}
	c := map[string]any{
		"tp_clock":        uint32(s.opts.Clock.Kind),
		"tp_exact":        exact,
		"tp_tick_ns":      tick,
		"tp_filter_tgid":  uint32(s.opts.PID),
		"tp_want_records": records,
		"tp_record_ns":    uint64(s.opts.RecordGrid),
		"tp_quantiles":    s.quantilesOn(),
		"tp_qrefine":      s.refineOn(),
		"tp_windowed":     boolU32(s.opts.Windowed),
		"tp_check_every":  uint32(s.opts.CheckEvery),
		"tp_one_target":   s.oneUserTarget(),
		"tp_record_shift": recordShift(s.opts.RecordGrid),
		"tp_stack_bytes":  s.opts.stackBytes(),
	}
	s.echoConstants(c)
	return c
}

// oneUserTarget is tp_one_target: the index + 1 of the only native user
// function timed, 0 when there are none or several.
func (s *Session) oneUserTarget() uint32 {
	var one uint32
	for _, t := range s.targets {
		if t.Spec.Kind != KindUser {
			continue
		}
		if one != 0 {
			return 0
		}
		one = t.Index + 1
	}
	return one
}

// recordShift is tp_record_shift: log2 of the record grid in ns when it is
// a power of two above 1, else 0.
func recordShift(grid time.Duration) uint32 {
	if grid <= 1 || grid&(grid-1) != 0 {
		return 0
	}
	return uint32(bits.TrailingZeros64(uint64(grid)))
}

// quantilesOn is tp_quantiles: 1 when the histograms are kept.
func (s *Session) quantilesOn() uint32 {
	if s.opts.Exact && s.opts.Quantiles {
		return 1
	}
	return 0
}

func (s *Session) load() error {
	err := s.loadTiming()
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) && s.opts.stackBytes() > 0 {
		// Without the stack copy the verifier prunes its code: caller
		// stacks fall back to the kernel's frame-pointer walk.
		s.stackRefused = err
		s.opts.StackBytes = -1
		err = s.loadTiming()
	}
	if errors.As(err, &ve) {
		return loadError(err)
	}
	if err != nil {
		return err
	}
	if err := s.setEchoModels(); err != nil {
		return err
	}
	// The first calls are checked 1 in 8 (at most), so that a few checked
	// calls soon tell how long the calls are; adaptCheck then sets the rate.
	s.checkEvery = make([]uint32, len(s.targets))
	for i := range s.targets {
		if err := s.setCheckEvery(i, uint32(min(s.opts.CheckEvery, 8))); err != nil {
			return err
		}
	}
	return nil
}

// loadTiming loads timing.bpf.c's maps with the session's constants and
// sizes; a load error is returned as the kernel gave it. Its programs are
// loaded when a run needs them (singlePrograms, echoProgram): the
// single-link user programs are unused where the kernel has multi-uprobe
// links, and verifying them was most of a one-function run's start (1 s
// of a 1.7 s start on a loaded 2-CPU machine).
func (s *Session) loadTiming() error {
	spec, timing, err := s.timingMapsSpec()
	if err != nil {
		return fmt.Errorf("read the timing BPF object: %w", err)
	}
	if err := setConstants(spec, s.constants()); err != nil {
		return err
	}
	spec.Maps["tp_counters"].MaxEntries = uint32(len(s.targets))
	if s.quantilesOn() == 1 {
		spec.Maps["tp_qhist"].MaxEntries = uint32(len(s.targets))
	}
	if s.refineOn() == 1 {
		spec.Maps["tp_qr_cfg"].MaxEntries = uint32(len(s.targets))
		spec.Maps["tp_qr_pool"].MaxEntries = uint32(2 * len(s.targets))
	}
	spec.Maps["tp_entries"].MaxEntries = uint32(s.maxInFlight())
	spec.Maps["tp_inflight"].MaxEntries = uint32(len(s.targets))
	spec.Maps["tp_check"].MaxEntries = uint32(len(s.targets))
	if s.echoOn() {
		spec.Maps["tp_echoes"].MaxEntries = uint32(len(s.targets))
		spec.Maps["tp_echo_models"].MaxEntries = uint32(len(s.targets))
	}
	if s.opts.RingSize > 0 {
		spec.Maps["tp_records"].MaxEntries = uint32(s.opts.RingSize)
	} else if s.opts.NoRecords {
		// Nothing is written to it: the least ring, one page. Its pages
		// are resident for the session's life, and the 1 MiB default
		// (mapped twice) was 2 MiB of an agent's RSS per timed process.
		spec.Maps["tp_records"].MaxEntries = uint32(os.Getpagesize())
	} else if s.opts.stackBytes() > 0 {
		spec.Maps["tp_records"].MaxEntries = stackRingBytes
	}
	bpf.SetKernelVersion(spec)
	if err := spec.LoadAndAssign(&s.objs.TimingMaps, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return err
		}
		return loadError(err)
	}
	if timing {
		s.timingSpec = spec
	}
	return nil
}

// timingMapsSpec returns the object whose maps loadTiming creates, and
// whether it is timing.bpf.c's. Every object that includes timing.h
// declares them: where the probe-site screen read umulti.bpf.c's object
// (user functions on multi-uprobe links, whose programs come from it), a
// copy of it serves, and timing.bpf.c's object is read only if its
// single-link programs are wanted after all (reading it was about 14 ms
// of a one-function run's start).
func (s *Session) timingMapsSpec() (*ebpf.CollectionSpec, bool, error) {
	if u := s.umultiSpec; u != nil && u.read && u.err == nil {
		return u.spec.Copy(), false, nil
	}
	spec, err := bpf.LoadTiming()
	return spec, true, err
}

// timingPrograms returns timing.bpf.c's object for its single-link
// programs, read on first use when loadTiming did not (LoadShared sets its
// constants and sizes its maps like the session's).
func (s *Session) timingPrograms() (*ebpf.CollectionSpec, error) {
	if s.timingSpec == nil {
		spec, err := bpf.LoadTiming()
		if err != nil {
			return nil, fmt.Errorf("read the timing BPF object: %w", err)
		}
		s.timingSpec = spec
	}
	return s.timingSpec.Copy(), nil
}

// singlePrograms loads the single-link user entry and exit programs into
// s.objs on first use, sharing the session's maps.
func (s *Session) singlePrograms() error {
	if s.objs.TpUentry != nil {
		return nil
	}
	var p struct {
		Entry *ebpf.Program `ebpf:"tp_uentry"`
		Exit  *ebpf.Program `ebpf:"tp_uexit"`
	}
	spec, err := s.timingPrograms()
	if err != nil {
		return err
	}
	if err := s.LoadShared(spec, &p); err != nil {
		return err
	}
	s.objs.TpUentry, s.objs.TpUexit = p.Entry, p.Exit
	return nil
}

// echoProgram loads the single-link echo program into s.objs on first
// use, sharing the session's maps.
func (s *Session) echoProgram() (*ebpf.Program, error) {
	if s.objs.TpUecho == nil {
		var p struct {
			Echo *ebpf.Program `ebpf:"tp_uecho"`
		}
		spec, err := s.timingPrograms()
		if err != nil {
			return nil, err
		}
		if err := s.LoadShared(spec, &p); err != nil {
			return nil, err
		}
		s.objs.TpUecho = p.Echo
	}
	return s.objs.TpUecho, nil
}

// checkCostNs is what a checked call costs more: two ns-clock reads
// (36 ns each on the machine of docs/performance.md).
const checkCostNs = 72

// setCheckEvery makes one call in every of target i a checked one.
func (s *Session) setCheckEvery(i int, every uint32) error {
	if err := s.objs.TpCheck.Put(s.targets[i].Index, every); err != nil {
		return fmt.Errorf("set the clock check of %s: %w", s.targets[i].Name, err)
	}
	s.checkEvery[i] = every
	return nil
}

// adaptCheck sets, from the checked calls so far, how many calls of each
// target one checked call stands for: the fewest (a power of two, at most
// Options.CheckEvery) for which the check's two ns reads cost at most
// about 1% of the target's mean (changed only by a factor of 4 or more), so that long calls, where the check
// costs nothing next to the call, are all checked and the check is as
// sharp as the estimate itself. Only the rate of later draws changes: the
// checked calls stay a sample drawn independently of the calls.
func (s *Session) adaptCheck(p Poll) {
	if s.opts.CheckEvery == 0 {
		return
	}
	for i := range s.targets {
		ck := p.Totals[i].Check
		if ck.Calls < 8 || ck.Ns == 0 {
			continue
		}
		mean := float64(ck.Ns) / float64(ck.Calls)
		every := uint32(1)
		for every < uint32(s.opts.CheckEvery) && float64(every)*mean < 100*checkCostNs {
			every *= 2
		}
		// Only a change of 4 times or more: every change costs the
		// sampled mean the batch it happens in (its calls in flight were
		// drawn at the old rate, loader.sampledMean), and rates that
		// followed the running mean back and forth across a threshold
		// left out the batches where the calls' length had changed,
		// which biased the mean (2 misses in 8 runs of read at 95%).
		if cur := s.checkEvery[i]; every*4 <= cur || every >= 4*cur {
			s.setCheckEvery(i, every) // best effort: the old rate stays valid
		}
	}
}

// CheckEvery returns, per target, how many calls one checked call stands
// for at present (0: no check).
func (s *Session) CheckEvery() []uint32 { return append([]uint32(nil), s.checkEvery...) }

// maxInFlight is the in-flight map size (Options.MaxInFlight).
func (s *Session) maxInFlight() int {
	if s.opts.MaxInFlight > 0 {
		return s.opts.MaxInFlight
	}
	for _, t := range s.targets {
		if t.Spec.Kind == KindGoUser {
			return DefaultMaxInFlightGo
		}
	}
	return DefaultMaxInFlight
}

func setConstants(spec *ebpf.CollectionSpec, consts map[string]any) error {
	for name, v := range consts {
		vs, ok := spec.Variables[name]
		if !ok {
			continue // an object that does not use this constant
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("set BPF constant %s: %w", name, err)
		}
	}
	return nil
}

// loadError turns a load failure into a one-line error with a next step.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("the kernel verifier rejected tickprof's BPF program (report this with `tickprof doctor` output): %v", ve)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("load BPF programs: %w (%v)", ErrNotRoot, err)
	}
	return fmt.Errorf("load BPF programs: %w", err)
}

// LoadShared loads another object that includes timing.h (the syscall,
// kernel-function or Go programs) into to, with the session's constants
// and its shared maps in place of the object's own copies. The object's
// specs of the shared maps are first sized like the session's (tp_counters
// holds one element per target, tp_records is sized by Options.RingSize),
// since a replacement must match its spec; an attacher need not size them
// itself. The caller registers the loaded objects with AddCloser.
func (s *Session) LoadShared(spec *ebpf.CollectionSpec, to any) error {
	if err := setConstants(spec, s.constants()); err != nil {
		return err
	}
	shared := map[string]*ebpf.Map{
		"tp_counters":    s.objs.TpCounters,
		"tp_entries":     s.objs.TpEntries,
		"tp_records":     s.objs.TpRecords,
		"tp_runstats":    s.objs.TpRunstats,
		"tp_stacks":      s.objs.TpStacks,
		"tp_zero":        s.objs.TpZero,
		"tp_tasks":       s.objs.TpTasks,
		"tp_qhist":       s.objs.TpQhist,
		"tp_qr_cfg":      s.objs.TpQrCfg,
		"tp_qr_pool":     s.objs.TpQrPool,
		"tp_inflight":    s.objs.TpInflight,
		"tp_window":      s.objs.TpWindow,
		"tp_check":       s.objs.TpCheck,
		"tp_frames":      s.objs.TpFrames,
		"tp_ustack":      s.objs.TpUstack,
		"tp_echo":        s.objs.TpEcho,
		"tp_echoes":      s.objs.TpEchoes,
		"tp_echo_models": s.objs.TpEchoModels,
	}
	repl := map[string]*ebpf.Map{}
	for name, m := range shared {
		if ms, ok := spec.Maps[name]; ok && m != nil {
			ms.MaxEntries = m.MaxEntries()
			repl[name] = m
		}
	}
	bpf.SetKernelVersion(spec)
	if err := loadKernelTypes(spec, to, &ebpf.CollectionOptions{MapReplacements: repl}); err != nil {
		return loadError(err)
	}
	return nil
}

// AddLink keeps a link until Detach or Close, which close the links of
// AddLink in the reverse order of AddLink, after the entry and exit links
// (AddEntryLink, AddExitLink): attach exits before entries, so that
// entries are detached first and calls in flight still complete.
func (s *Session) AddLink(l link.Link) { s.links = append(s.links, l) }

// AddCloser keeps an object (loaded programs, maps) until Close.
func (s *Session) AddCloser(c io.Closer) { s.closers = append(s.closers, c) }

// Options returns the session's options, with the clock's resolution
// filled in.
func (s *Session) Options() Options { return s.opts }

// Clock returns the clock with its resolution.
func (s *Session) Clock() Clock { return s.opts.Clock }

// Skipped returns the functions left out because the kernel cannot probe
// them (from globs; see OpenContext).
func (s *Session) Skipped() []Skipped { return s.skipped }

// Targets returns the attached targets, in Index order.
func (s *Session) Targets() []*Target { return s.targets }

// Programs returns the user-function entry and exit programs, single-link
// and multi-link versions (for statistics such as ebpf.EnableStats run
// time).
func (s *Session) Programs() []*ebpf.Program {
	var ps []*ebpf.Program
	if s.objs.TpUentry != nil {
		ps = append(ps, s.objs.TpUentry, s.objs.TpUexit)
	}
	if s.umulti != nil {
		ps = append(ps, s.umulti.TpUentryMulti, s.umulti.TpUexitMulti)
	}
	return ps
}

// Poll is the state of every target at one moment.
type Poll struct {
	// At is when the counters were read; Elapsed is since Open.
	At      time.Time
	Elapsed time.Duration
	// Totals are the cumulative counters per target (Index order).
	Totals []Counters
	// Stats are the run statistics.
	Stats RunStats
	// Records is the number of crossing records received so far.
	Records uint64
}

// Poll reads every target's counters and appends one batch per target
// (the increment since the previous Poll). Call it periodically (every
// 200 ms by default): the batches feed the batch-means interval.
func (s *Session) Poll() (Poll, error) {
	if s.stopped && s.final != nil {
		p := *s.final
		s.mu.Lock()
		p.Records = s.records
		s.mu.Unlock()
		return p, s.finalErr
	}
	p, err := s.read()
	if err != nil {
		return p, err
	}
	for i := range p.Totals {
		p.Totals[i].Orphans = subFloor(p.Totals[i].Orphans, s.attachOrphans[i])
	}
	p.Stats.NoEntry = subFloor(p.Stats.NoEntry, s.attachNoEntry)
	for i := range s.targets {
		inc := p.Totals[i].Sub(s.last[i])
		if i < len(s.checkEvery) {
			inc.CheckEvery = s.checkEvery[i] // in effect since the last poll
		}
		if n := len(s.batches[i]); s.merging && n > 0 {
			s.batches[i][n-1] = addCounters(s.batches[i][n-1], inc)
		} else {
			s.batches[i] = append(s.batches[i], inc)
		}
		s.last[i] = p.Totals[i]
	}
	s.mu.Lock()
	p.Records = s.records
	s.mu.Unlock()
	if !s.stopped {
		s.adaptCheck(p)
	}
	return p, nil
}

// Read reads every target's cumulative counters and the run statistics
// without recording a batch (Poll's bookkeeping is left alone), so it may
// be called while another goroutine polls. Orphans are not adjusted.
func (s *Session) Read() (Poll, error) { return s.read() }

// read reads every target's counters and the run statistics.
func (s *Session) read() (Poll, error) {
	p := Poll{At: time.Now(), Totals: make([]Counters, len(s.targets))}
	p.Elapsed = p.At.Sub(s.start)
	var per []bpf.TimingTpCounts
	for i, t := range s.targets {
		if err := s.objs.TpCounters.Lookup(t.Index, &per); err != nil {
			return p, fmt.Errorf("read counters of %s: %w", t.Name, err)
		}
		p.Totals[i] = sumCPUs(per)
		if s.opts.Clock.Kind == ClockNS {
			p.Totals[i].ticksFromNs()
		}
	}
	var st []bpf.TimingTpStats
	if err := s.objs.TpRunstats.Lookup(uint32(0), &st); err != nil {
		return p, fmt.Errorf("read run statistics: %w", err)
	}
	for _, c := range st {
		p.Stats.RingDrops += c.RingDrops
		p.Stats.StackFails += c.StackFails
		p.Stats.Filtered += c.Filtered
		p.Stats.Overwritten += c.Overwritten
		p.Stats.NoEntry += c.NoEntry
	}
	p.Stats.InFlightCap = s.objs.TpEntries.MaxEntries()
	return p, nil
}

// subFloor returns a-b, or 0 when b > a.
func subFloor(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// Batches returns the per-poll increments of target i (Index order).
func (s *Session) Batches(i int) []Counters { return s.batches[i] }

// InFlight returns, per target, the entries of the hash-keyed entry state
// (tp_entries: Go and kernel-function targets) still waiting for their
// exit: calls in progress when read, or whose exit will never come. After
// Stop they are orphans. Entries in task storage (user functions) cannot
// be listed from user space; they are freed with their threads.
func (s *Session) InFlight() ([]uint64, error) {
	if s.stopped && s.finalInFlight != nil {
		return s.finalInFlight, nil
	}
	out := make([]uint64, len(s.targets))
	var k bpf.TimingTpKey
	var v bpf.TimingTpEntry
	it := s.objs.TpEntries.Iterate()
	for it.Next(&k, &v) {
		if int(k.Target) < len(out) && v.Depth > v.Floor {
			out[k.Target] += uint64(v.Depth - v.Floor)
		}
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("read entry state: %w", err)
	}
	return out, nil
}

// Stop reads the counters one last time (a final Poll, with the entries
// in flight and the Go statistics) and drains the crossing records already
// in the ring buffer. The probes stay attached until Detach or Close, so
// that results can be written first (detaching a large probe set takes
// time, and a process killed meanwhile loses nothing). Detaching is not
// atomic either: between an entry probe's removal and its exit probe's,
// calls produce exits without entries; reading first keeps such artifacts
// out of the results. Poll, InFlight and GoStats after Stop return what
// Stop read.
func (s *Session) Stop() {
	if s.stopped {
		return
	}
	if s.last != nil {
		// The duration histograms first: every call they hold is then in
		// the final counters, whose minimum and maximum bound them.
		s.refineEnd()
		s.finalHists = s.readHists()
		s.merging = true // the short last increment joins the last batch
		p, err := s.Poll()
		s.merging = false
		s.final, s.finalErr = &p, err
		if in, err := s.InFlight(); err == nil {
			s.finalInFlight = in
		}
		if g, err := s.GoStats(); err == nil {
			s.finalGo = &g
		}
	}
	s.stopped = true
	if s.reader != nil {
		if s.wake != nil {
			s.wake.Wake()
		} else {
			s.reader.Flush()
		}
		s.drain.Wait()
	}
}

// Detach stops the session (Stop) and detaches every probe: entry links
// first, then exit links, each set closed in parallel, then the other
// links in the reverse order of AddLink. When ctx ends first, Detach
// waits for the closes under way and returns ctx's error; the links left
// are closed by Close, or by the kernel when the process exits. HandOff
// detaches in a helper process instead, which nothing can interrupt.
func (s *Session) Detach(ctx context.Context) error {
	s.Stop()
	if s.helper != nil {
		return s.detachHelper(ctx)
	}
	if s.detached {
		return nil
	}
	s.detachEchoes()
	var err error
	if s.entryLinks, err = closeParallel(ctx, s.entryLinks); err != nil {
		return err
	}
	if s.exitLinks, err = closeParallel(ctx, s.exitLinks); err != nil {
		return err
	}
	for len(s.links) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := len(s.links) - 1
		s.links[n].Close()
		s.links = s.links[:n]
	}
	s.detached = true
	return nil
}

// Close detaches every probe (Detach) and releases every BPF object.
// After HandOff it releases the helper without waiting for it.
func (s *Session) Close() error {
	if s.helper != nil {
		s.Stop()
		if s.helperRelease != nil {
			s.helperRelease.Close()
			s.helperRelease = nil
		}
		s.detached = true
	} else {
		s.Detach(context.Background())
	}
	if s.reader != nil {
		s.reader.Close()
	}
	if s.wake != nil {
		s.wake.Close()
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i].Close()
	}
	if s.procs != nil {
		s.procMu.Lock()
		s.procs.Close()
		s.procMu.Unlock()
	}
	return s.objs.Close()
}

// drainLoop reads crossing records until Stop, or until the reader is
// closed. The BPF side submits the run's first record with a wakeup and
// the others without (bpf/timing.h, tp_record_wake), so the loop wakes
// at that first record and otherwise on a short deadline, reading
// whatever accumulated: every 50 ms, but every 2 ms in the first 200 ms. A command the session started maps its
// libraries after exec, so the maps read at the start lack them and a
// caller stack through them must reread the maps (callerStack) while the
// process lives: a command running for 20 ms would otherwise have exited
// before its first record was read, and every stack would stop at its
// first library frame.
func (s *Session) drainLoop() {
	defer s.drain.Done()
	if s.wake == nil {
		s.drainBlocking()
		return
	}
	var rec ringbuf.Record
	start := time.Now()
	for {
		stopping := s.wake.Woken()
		s.wake.Wait(drainWait(start))
		s.reader.SetDeadline(time.Now()) // read what is there
		for {
			err := s.reader.ReadInto(&rec)
			if err == nil {
				s.addRecord(rec.RawSample)
				continue
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return // closed
			}
			break
		}
		if stopping {
			return
		}
	}
}

// drainWait is how long the drain loop waits between reads.
func drainWait(start time.Time) time.Duration {
	if time.Since(start) < 200*time.Millisecond {
		return 2 * time.Millisecond
	}
	return 50 * time.Millisecond
}

// drainBlocking is drainLoop waiting in the reader's blocking poll, where
// the ring's descriptor cannot join Go's poller; Stop flushes the reader.
func (s *Session) drainBlocking() {
	var rec ringbuf.Record
	start := time.Now()
	for {
		s.reader.SetDeadline(time.Now().Add(drainWait(start)))
		err := s.reader.ReadInto(&rec)
		switch {
		case err == nil:
			s.addRecord(rec.RawSample)
		case errors.Is(err, os.ErrDeadlineExceeded):
		default: // flushed by Stop, or closed
			return
		}
	}
}

// recordSize is sizeof(struct tp_record).
const recordSize = 32

func (s *Session) addRecord(b []byte) {
	if len(b) < recordSize {
		return
	}
	k := callerKey{
		target:  binary.LittleEndian.Uint32(b[0:]),
		stackID: int32(binary.LittleEndian.Uint32(b[12:])),
	}
	if s.procs != nil && (k.stackID >= 0 || len(b) > urecordHdr) {
		s.callerStack(&k, b)
	}
	ticks := binary.LittleEndian.Uint64(b[16:])
	if s.opts.RecordGrid > 0 {
		// ns clock: the record counts grid lines; in units of d (1 ns)
		// that is an unbiased estimate of the call's share of time.
		ticks *= uint64(s.opts.RecordGrid)
	}
	ns := binary.LittleEndian.Uint64(b[24:])
	s.mu.Lock()
	a := s.callers[k]
	if a == nil {
		a = &callerAgg{}
		s.callers[k] = a
	}
	a.records++
	a.ticks += ticks
	a.ns += ns
	s.records++
	s.mu.Unlock()
}

// Caller is the crossing records of one target from one caller stack.
type Caller struct {
	// Target is the index of the target.
	Target int
	// Stack is the caller's stack, innermost first (the return address in
	// the caller comes first), each address with its frames (inlined
	// calls first); empty when it could not be captured.
	Stack []symbolize.Location
	// Cut says the stack ended before its outermost frame: a walk by
	// call frame information that stopped early, or a frame-pointer walk
	// cut at an address outside every executable mapping (code without
	// frame pointers). Stop says why and in which file.
	Cut  bool
	Stop unwind.Where
	// Unwound says the stack was unwound from a copy of the user stack
	// with call frame information, not walked by frame pointers.
	Unwound bool
	// Records is the number of calls from this stack that crossed at least
	// one tick; Ticks their crossings; Ns their exact ns (exact mode).
	Records, Ticks, Ns uint64
}

// CallerRecords is, per target (Index order), how many crossing records
// Callers would attribute to caller stacks, without symbolizing them.
func (s *Session) CallerRecords() []uint64 {
	out := make([]uint64, len(s.targets))
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, a := range s.callers {
		if int(k.target) < len(out) {
			out[k.target] += a.records
		}
	}
	return out
}

// Callers returns the per-caller attribution gathered from the crossing
// records, largest tick count first. Stacks are symbolized with the
// process's memory map each was taken in.
func (s *Session) Callers() []Caller {
	s.mu.Lock()
	keys := make([]callerKey, 0, len(s.callers))
	for k := range s.callers {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	out := make([]Caller, 0, len(keys))
	for _, k := range keys {
		s.mu.Lock()
		a := *s.callers[k]
		s.mu.Unlock()
		c := Caller{Target: int(k.target), Records: a.records, Ticks: a.ticks, Ns: a.ns}
		switch {
		case k.stackID >= 0:
			if pcs := s.fpStack(k.stackID); pcs != nil {
				s.symbolizeStack(&c, k.img, pcs)
				checkFPEnd(&c)
			}
		case k.pcs != "" || k.stop.Reason != "":
			c.Unwound = true
			s.symbolizeStack(&c, k.img, unpackPCs(k.pcs))
			if c.Stop == (unwind.Where{}) {
				c.Stop = k.stop
			}
			c.Cut = c.Stop.Reason != ""
		}
		out = append(out, c)
	}
	out = mergeCallers(out)
	sortCallers(out)
	return out
}
