// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/loader"
)

// Off-CPU time (Config.OffCPU): the off-CPU program (bpf/offcpu.bpf.c, on
// sched_switch) samples each interval a target's thread spends off CPU
// with probability p and sends a start record, with the stacks at the
// moment the thread left the CPU in the sampling program's record layout,
// and an end record when the thread runs again. The start record's stacks
// go through handle like a CPU sample's; the end gives the interval's
// length d, which adds d/p to its stack's estimate (estimate.HTSums).
// Intervals still open when sampling stops end then; an interval that
// spans a window's cut counts in the window where it ends.

// OffCPUConfig turns on off-CPU sampling beside the CPU samples.
type OffCPUConfig struct {
	// Enabled samples the targets' time off CPU.
	Enabled bool
	// Prob is the probability of sampling each interval off CPU, in
	// (0, 1]; 0 chooses it from the switch rate and Budget.
	Prob float64
	// Budget is the share of one CPU the off-CPU program may take at the
	// measured switch rate (0: DefaultOffCPUBudget).
	Budget float64
}

// DefaultOffCPUBudget is the off-CPU program's default cost budget: 1% of
// one CPU.
const DefaultOffCPUBudget = 0.01

// The off-CPU program's cost, measured on the 2-thread pipe ping-pong
// (docs/performance.md, "Off-CPU sampling"): about 480 ns per run of the
// program, that is per context switch of any thread (kernel BPF
// statistics at p = 0.001: the target and map lookups every switch makes),
// and about 13 us of the ping-pong's elapsed time per sampled interval
// (stacks, an 8 KiB stack copy, two records, and their reading and
// unwinding on the same 2 CPUs; 6.3 us of it in the program).
// ChooseOffCPUProb uses them with the targets' switch rate.
const (
	offCPUBaseNs    = 480
	offCPUSampledNs = 13000
	// offCPUMinProb is the least probability chosen: below it the
	// intervals are too sparse to say anything in a short run.
	offCPUMinProb = 0.001
	// offCPUStartProb bounds the first probability chosen: a command
	// started at 100,000 switches a second overran the ring buffer in the
	// first tuning period at the 0.07-0.23 the machine's rate allowed.
	offCPUStartProb = 0.01
	// offCPUStackBytes bounds the user stack copy of a start record.
	offCPUStackBytes = 8192
)

// Record kinds and size of the off-CPU program's header (struct off_hdr).
const (
	recOffStart = 4
	recOffEnd   = 5
	recGoStart  = 6
	recGoEnd    = 7
	offHdrSize  = 56
)

// OffCPUStats are the off-CPU counters of a run.
type OffCPUStats struct {
	loader.OffCPUStats
	// Prob is the sampling probability in effect at the end, MinProb and
	// MaxProb the range it took (chosen from the targets' switch rate
	// unless given); SwitchRate the machine's context switches per second
	// measured to choose the first (0 when Prob was given).
	Prob, MinProb, MaxProb float64
	SwitchRate             float64
	// Unmatched counts end records without their start (the start record
	// was lost); Stale, starts whose end was never seen (the thread began
	// another interval first: lost); Open, intervals still open when
	// sampling stopped (counted up to the stop).
	Unmatched, Stale, Open uint64
	// Misses counts the runs of the program the kernel skipped
	// (recursion), each a switch unseen.
	Misses uint64
	// Runs and Runtime are the program's runs and their total time, as
	// the kernel's BPF statistics count them (Runtime is zero unless they
	// are enabled: kernel.bpf_stats_enabled).
	Runs    uint64
	Runtime time.Duration
	// GoExes are the Go executables whose goroutines were traced
	// (gopark.go); GoRuns and GoRuntime the goroutine probes' runs and
	// their total time, as Runs and Runtime.
	GoExes    []string
	GoRuns    uint64
	GoRuntime time.Duration
	// GoNoPreempt says, for each executable whose preempted goroutines
	// are not traced, why (its g.sched offsets unknown: no DWARF).
	GoNoPreempt []string
	// GoRefused says, for each Go executable the goroutine probes could
	// not be attached to, why: its off-CPU time is by thread.
	GoRefused []string
	// GoDetached says why and when the goroutine probes were detached
	// for their cost ("" when they were not); GoDropped counts the
	// goroutine intervals open then, dropped.
	GoDetached string
	GoDropped  uint64
	// MeanSampledNs is the mean length of the sampled intervals (a
	// goroutine's blocked and runnable parts apart) that ended: at tens
	// of microseconds the sampling lengthens what it samples, and the
	// estimates are biased upward (docs/statistics.md, "Observer
	// effect"; ObserverBiasBelowNs).
	MeanSampledNs float64
}

// offState is a session's off-CPU state.
type offState struct {
	prog *loader.OffCPU
	// prob is the probability in effect; minProb and maxProb the range
	// it took; rate the machine's switch rate measured at start.
	prob, minProb, maxProb float64
	rate                   float64
	// auto: prob follows the targets' rate of intervals begun (tune),
	// within budget; tunedAt and tunedSwitches are the last tuning's time
	// and counter.
	auto          bool
	budget        float64
	tunedAt       time.Time
	tunedSwitches uint64
	// pending holds each thread's and goroutine's sampled interval whose
	// end was not read yet (each has at most one open).
	pending map[pendKey]*offPending
	// goExes are the Go executables the goroutine probes are attached
	// to (gopark.go); tunedParks the goroutine parks at the last tuning.
	goExes     []string
	tunedParks uint64
	// goNoPreempt says why the preemption probe is missing; idle
	// remembers schedIdle's answer by stack (gopark.go).
	goNoPreempt []string
	// goRefused says why the goroutine probes could not be attached to
	// an executable (its off-CPU time is then by thread).
	goRefused []string
	// goDetached says why and when the goroutine probes were detached
	// (goOverBudget; "" while attached or never), goDropped counts the
	// goroutine intervals open then, dropped.
	goDetached string
	goDropped  uint64
	// endedNs and endedN sum the sampled intervals (or parts) that
	// ended, for MeanSampledNs.
	endedNs, endedN uint64
	idle            map[*rawStack]bool
	// sched caches isSchedule by kernel address; tid is the thread of
	// the record being handled (offKey).
	sched map[uint64]bool
	tid   uint32
	// cur is the start record being handled; endNs the monotonic clock
	// when the program was detached.
	cur                      *offPending
	endNs                    uint64
	unmatched, opened, stale uint64
}

type offID struct {
	tid   uint32
	start uint64
}

// pendKey names whose interval is open: a thread (g 0, id its thread ID)
// or a goroutine (g its address, id its process).
type pendKey struct {
	g  uint64
	id uint32
}

// offPending is a sampled interval whose end has not been read yet.
type offPending struct {
	id    offID
	state uint32
	prob  float64 // the probability it was drawn with
	key   string
	stack *rawStack
	// goroutine: the interval of a parked goroutine (gopark.go), not of
	// a thread.
	goroutine bool
}

// OffCPU is the off-CPU time estimated for one stack: the number of sampled
// intervals and their Horvitz-Thompson sums (estimate.HTSums: sum d/p ns
// and sum d^2 (1-p)/p^2 ns^2), and why the thread was off CPU.
type OffCPU struct {
	State string // OffBlocked or OffRunnable
	estimate.HTSums
}

// Why a thread was off CPU.
const (
	// OffBlocked: it slept (waited for I/O, a lock, a timer...); the kernel
	// stack is the blocking path.
	OffBlocked = "blocked"
	// OffRunnable: it was preempted or yielded while runnable, and waited
	// for a CPU.
	OffRunnable = "runnable"
)

// startOffCPU chooses the sampling probability and attaches the off-CPU
// program, when the configuration asks for it.
func (s *Session) startOffCPU() error {
	oc := s.cfg.OffCPU
	if !oc.Enabled {
		return nil
	}
	st := &offState{prob: oc.Prob, pending: map[pendKey]*offPending{}, sched: map[uint64]bool{}, budget: oc.Budget}
	if st.budget == 0 {
		st.budget = DefaultOffCPUBudget
	}
	if st.prob == 0 {
		st.auto = true
		rate, err := SwitchRate(200 * time.Millisecond)
		if err != nil {
			return err
		}
		st.rate = rate
		// The targets' own rate is not known yet (a command has not
		// started): start low, and let tuneOffCPU raise it.
		st.prob = math.Min(offCPUStartProb, estimate.ChooseOffCPUProb(rate, offCPUBaseNs, offCPUSampledNs, st.budget, offCPUMinProb))
	}
	_, st.prob = loader.Threshold(st.prob) // the probability the program applies
	st.minProb, st.maxProb, st.tunedAt = st.prob, st.prob, time.Now()
	sb := s.cfg.stackBytes()
	if sb > offCPUStackBytes {
		sb = offCPUStackBytes
	}
	goExes, allGo := s.goTargets()
	if allGo {
		// Go keeps frame pointers, and they cross the runtime's switches
		// to the system stack (runtime.systemstack), which unwinding by
		// call frame information stops at: a goroutine waking another
		// thread in a system call from there would lose its frames.
		sb = 0
	}
	prog, err := loader.StartOffCPU(loader.OffCPUOptions{Prob: st.prob, StackBytes: sb, All: s.cfg.All,
		Targets: s.objs.Targets, Ring: s.objs.Samples})
	if err != nil {
		return err
	}
	st.prog = prog
	s.off = st
	s.attachGoroutines(goExes)
	return nil
}

// ObserverBiasBelowNs is the mean sampled interval below which off-CPU
// estimates are reported as biased upward: on a pipe ping-pong of 10 µs
// waits the sampled intervals averaged 16.8 µs, while waits of
// milliseconds showed no bias (docs/statistics.md, "Observer effect").
const ObserverBiasBelowNs = 100e3

// offTuneEvery is how often tuneOffCPU follows the targets' switch rate.
const offTuneEvery = 100 * time.Millisecond

// tuneOffCPU sets the sampling probability from the rate at which the
// targets' threads began intervals off CPU since the last tuning, so that
// the program keeps within its budget (ChooseOffCPUProb) as the rate
// changes. Intervals already begun keep the probability they were drawn
// with (their start records carry it), so every estimate stays unbiased.
func (s *Session) tuneOffCPU() {
	st := s.off
	if st == nil || st.prog == nil || time.Since(st.tunedAt) < offTuneEvery {
		return
	}
	c, err := st.prog.Stats()
	if err != nil {
		return
	}
	now := time.Now()
	secs := now.Sub(st.tunedAt).Seconds()
	rate := float64(c.Switches-st.tunedSwitches) / secs
	parks := float64(c.GoParks-st.tunedParks) / secs
	st.tunedAt, st.tunedSwitches, st.tunedParks = now, c.Switches, c.GoParks
	if !st.auto {
		return // a probability given is the caller's choice, probes included
	}
	s.goOverBudget(parks)
	// Both kinds of interval share the probability and the budget: per
	// second, rate (base + p cost) + parks (goBase + p goCost) ns.
	p := estimate.ChooseOffCPUProb(1, rate*offCPUBaseNs+parks*goParkBaseNs, rate*offCPUSampledNs+parks*goParkSampledNs, st.budget, offCPUMinProb)
	if math.Abs(p-st.prob) <= 0.1*st.prob {
		return // within a tenth: leave it
	}
	if set, err := st.prog.SetProb(p); err == nil {
		st.prob = set
		st.minProb, st.maxProb = math.Min(st.minProb, set), math.Max(st.maxProb, set)
	}
}

// SwitchRate measures the machine's context switches per second over d
// (/proc/stat's ctxt).
func SwitchRate(d time.Duration) (float64, error) {
	a, err := contextSwitches()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	time.Sleep(d)
	b, err := contextSwitches()
	if err != nil {
		return 0, err
	}
	return float64(b-a) / time.Since(t0).Seconds(), nil
}

func contextSwitches() (uint64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read the context switch count: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ctxt "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no context switch count (ctxt) in /proc/stat")
}

// stopOffCPU detaches the off-CPU program and notes when, so that the
// intervals still open end there.
func (s *Session) stopOffCPU() {
	if s.off == nil || s.off.prog == nil {
		return
	}
	s.off.prog.Detach()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		s.off.endNs = uint64(ts.Nano())
	}
}

// closeOpen ends the intervals still open at the program's detach.
func (s *Session) closeOpen() {
	if s.off == nil || s.off.endNs == 0 {
		return
	}
	for k, p := range s.off.pending {
		if s.off.endNs > p.id.start {
			s.offEnd(p, s.off.endNs-p.id.start, p.state)
		}
		s.off.opened++
		delete(s.off.pending, k)
	}
}

// handleOff handles an off-CPU record; false for any other record.
func (s *Session) handleOff(b []byte) bool {
	if s.off == nil || len(b) < offHdrSize {
		return false
	}
	le := binary.LittleEndian
	kind := le.Uint32(b)
	if kind < recOffStart || kind > recGoEnd {
		return false
	}
	goroutine := kind == recGoStart || kind == recGoEnd
	id := offID{tid: le.Uint32(b[12:]), start: le.Uint64(b[16:])}
	pk := pendKey{id: id.tid}
	if goroutine {
		pk = pendKey{g: le.Uint64(b[40:]), id: le.Uint32(b[8:])}
	}
	if kind == recOffStart || kind == recGoStart {
		s.off.cur = &offPending{id: id, state: le.Uint32(b[4:]), prob: loader.ThresholdProb(le.Uint32(b[32:])), goroutine: goroutine}
		s.handle(s.trimSwitchFrames(b[offHdrSize:]))
		if s.off.cur.stack != nil {
			if _, ok := s.off.pending[pk]; ok {
				// The previous interval ended unseen (its end was not
				// recorded): it is lost.
				s.off.stale++
			}
			s.off.pending[pk] = s.off.cur
		}
		s.off.cur = nil
		return true
	}
	p, ok := s.off.pending[pk]
	// A goroutine's interval ends on whichever thread runs it again.
	if !ok || p.id.start != id.start || !goroutine && p.id != id {
		s.off.unmatched++
		return true
	}
	delete(s.off.pending, pk)
	if end := le.Uint64(b[24:]); end > id.start {
		s.endInterval(p, end, le.Uint64(b[48:]))
	}
	return true
}

// endInterval ends interval p at end (monotonic ns). A goroutine's
// interval made runnable at ready (0: not seen) is blocked up to ready and
// runnable after it, each part added to the stack under its state; the
// two parts of one sampled interval share its draw, so each state's sums
// stay unbiased.
func (s *Session) endInterval(p *offPending, end, ready uint64) {
	start := p.id.start

	if !p.goroutine || ready <= start || ready >= end {
		s.offEnd(p, end-start, p.state)
		return
	}
	s.offEnd(p, ready-start, offBlockedState)
	s.offEnd(p, end-ready, offRunnableState)
}

// trimSwitchFrames returns a start record's sample part without the
// kernel frames above __schedule (the off-CPU program itself and the
// tracepoint's machinery, whose frames depend on how many programs are
// attached to sched_switch), so that the leaf of every off-CPU stack is
// __schedule; the record as it is when there is no __schedule among its
// first frames or the kernel's symbols cannot be read.
func (s *Session) trimSwitchFrames(rec []byte) []byte {
	if len(rec) < hdrSize {
		return rec
	}
	le := binary.LittleEndian
	kn := int(le.Uint16(rec[24:]))
	if hdrSize+8*kn > len(rec) {
		return rec
	}
	cut := -1
	for i := 0; i < kn && i < 8; i++ {
		if s.isSchedule(le.Uint64(rec[hdrSize+8*i:])) {
			cut = i
			break
		}
	}
	if cut <= 0 {
		return rec
	}
	out := make([]byte, 0, len(rec)-8*cut)
	out = append(out, rec[:hdrSize]...)
	out = append(out, rec[hdrSize+8*cut:]...)
	le.PutUint16(out[24:], uint16(kn-cut))
	return out
}

// isSchedule says whether kernel address a is in __schedule (cached by
// address).
func (s *Session) isSchedule(a uint64) bool {
	if v, ok := s.off.sched[a]; ok {
		return v
	}
	ks, err := s.kernelSyms()
	if err != nil {
		return false
	}
	sym, ok := ks.Lookup(a)
	v := ok && sym.Name == "__schedule"
	s.off.sched[a] = v
	return v
}

// offEnd adds an ended interval (or part of one) of d ns in state to its
// stack, in the current window's stacks (a stack of an earlier window is
// put back).
func (s *Session) offEnd(p *offPending, d uint64, state uint32) {
	key := p.key
	if state != p.state {
		// The stack's key ends with the state (offKey).
		key = key[:len(key)-1] + string(byte(state))
	}
	st, ok := s.stacks[key]
	if !ok {
		c := *p.stack
		c.count, c.off = 0, nil
		st = &c
		s.stacks[key] = st
	}
	if st.off == nil {
		st.off = &OffCPU{State: offStateName(state)}
	}
	st.off.Add(float64(d), p.prob)
	s.off.endedNs += d
	s.off.endedN++
}

// The states of bpf/offcpu.bpf.c (OFF_RUNNABLE, OFF_BLOCKED).
const (
	offRunnableState = 0
	offBlockedState  = 1
)

func offStateName(state uint32) string {
	if state == offRunnableState {
		return OffRunnable
	}
	return OffBlocked
}

// offKey extends the key of sample record rec's stack with off-CPU
// sampling on: stacks are kept by thread (tally notes it), and an off-CPU
// start's stacks apart from the CPU samples', by state.
func (s *Session) offKey(key, rec []byte) []byte {
	if s.off == nil {
		return key
	}
	s.off.tid = binary.LittleEndian.Uint32(rec[8:])
	if s.off.cur != nil && s.off.cur.goroutine {
		// A goroutine's time belongs to no thread: it moves between
		// them.
		s.off.tid = 0
		key = append(key, 0, 'g')
	}
	key = binary.LittleEndian.AppendUint32(append(key, 0, 't'), s.off.tid)
	if s.off.cur == nil {
		return key
	}
	return append(key, 0, 'o', 'f', 'f', byte(s.off.cur.state))
}

// tally counts a CPU sample on st, or, for an off-CPU start record, notes
// st as the stack of the interval that starts.
func (s *Session) tally(key string, st *rawStack) {
	if s.off != nil {
		st.tid = int64(s.off.tid)
	}
	if s.off != nil && s.off.cur != nil {
		s.off.cur.key, s.off.cur.stack = key, st
		return
	}
	st.count++
}

// offStats reads the off-CPU counters (zero when off-CPU sampling is off).
func (s *Session) offStats() OffCPUStats {
	if s.off == nil {
		return OffCPUStats{}
	}
	st := OffCPUStats{Prob: s.off.prob, MinProb: s.off.minProb, MaxProb: s.off.maxProb, SwitchRate: s.off.rate, Unmatched: s.off.unmatched, Stale: s.off.stale, Open: s.off.opened, GoExes: s.off.goExes, GoNoPreempt: s.off.goNoPreempt, GoRefused: s.off.goRefused,
		GoDetached: s.off.goDetached, GoDropped: s.off.goDropped}
	if s.off.endedN > 0 {
		st.MeanSampledNs = float64(s.off.endedNs) / float64(s.off.endedN)
	}
	if s.off.prog == nil {
		return st
	}
	if c, err := s.off.prog.Stats(); err == nil {
		st.OffCPUStats = c
	}
	if ps, err := s.off.prog.Program().Stats(); err == nil {
		st.Misses, st.Runs, st.Runtime = ps.RecursionMisses, ps.RunCount, ps.Runtime
	}
	if len(s.off.goExes) > 0 {
		for _, p := range s.off.prog.GoPrograms() {
			if ps, err := p.Stats(); err == nil {
				st.GoRuns, st.GoRuntime = st.GoRuns+ps.RunCount, st.GoRuntime+ps.Runtime
				st.Misses += ps.RecursionMisses
			}
		}
	}
	return st
}

// closeOffCPU releases the off-CPU program.
func (s *Session) closeOffCPU() {
	if s.off != nil && s.off.prog != nil {
		s.off.prog.Close()
		s.off.prog = nil
	}
}
