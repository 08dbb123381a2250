// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/symtab"
)

// OffCPUOptions configure the off-CPU program (bpf/offcpu.bpf.c).
type OffCPUOptions struct {
	// Prob is the probability with which each interval a target's thread
	// spends off CPU is sampled, in (0, 1]; 1 takes every interval.
	Prob float64
	// StackBytes is how much of the user stack a sampled interval's start
	// record copies (0: frame pointers only).
	StackBytes int
	// All makes every process a target; else Targets says which are.
	All bool
	// Targets and Ring are the sampling program's target map and ring
	// buffer, which the off-CPU program shares.
	Targets, Ring *ebpf.Map
}

// OffCPUStats are the off-CPU program's counters (bpf/offcpu.bpf.c
// OFF_STAT_*).
type OffCPUStats struct {
	Switches uint64 // target threads that left a CPU (intervals begun)
	Sampled  uint64 // intervals drawn into the sample
	Ended    uint64 // sampled intervals whose end record was written
	// The sampled intervals lost, by reason: no room in the map of open
	// intervals, no room in the ring buffer for the start or end record.
	MapFull, RingStart, RingEnd uint64
	// Unseen counts open intervals of threads found running: the
	// switch-in that ended them was not seen, and they were dropped.
	Unseen uint64
	// The same for goroutines (AttachGo): parks seen (intervals begun),
	// sampled, ended, lost by reason, and open intervals of goroutines
	// found parking again (their execute was not seen).
	GoParks, GoSampled, GoEnded       uint64
	GoMapFull, GoRingStart, GoRingEnd uint64
	GoUnseen                          uint64
}

// The Go runtime functions the goroutine probes attach to
// (bpf/offcpu.bpf.c: go_park, go_ready, go_execute).
const (
	GoParkSymbol    = "runtime.gopark"
	GoReadySymbol   = "runtime.ready"
	GoExecuteSymbol = "runtime.execute"
	GoPreemptSymbol = "runtime.goschedImpl"
)

// OffCPU is the off-CPU program attached to sched_switch.
type OffCPU struct {
	objs bpf.OffCPUObjects
	l    link.Link
	// goLinks are the goroutine probes (AttachGo); sched the g.sched
	// offsets the preemption probe was given (zero: none yet).
	goLinks []link.Link
	sched   symtab.GoSched
}

// Threshold is the 32-bit threshold the BPF program compares a random
// number with for sampling probability p (math.MaxUint32: every
// interval), and the probability it stands for exactly (ThresholdProb),
// which estimates must use.
func Threshold(p float64) (uint32, float64) {
	if p >= 1 {
		return math.MaxUint32, 1
	}
	t := math.Min(math.Max(math.Round(p*(1<<32)), 1), math.MaxUint32-1)
	return uint32(t), ThresholdProb(uint32(t))
}

// ThresholdProb is the sampling probability of threshold t.
func ThresholdProb(t uint32) float64 {
	if t == math.MaxUint32 {
		return 1
	}
	return float64(t) / (1 << 32)
}

// StartOffCPU loads the off-CPU program and attaches it to the raw
// tracepoint sched_switch.
func StartOffCPU(o OffCPUOptions) (*OffCPU, error) {
	if !(o.Prob > 0 && o.Prob <= 1) {
		return nil, fmt.Errorf("off-CPU sampling probability %g is not in (0, 1]", o.Prob)
	}
	spec, err := bpf.LoadOffCPU()
	if err != nil {
		return nil, fmt.Errorf("read the off-CPU BPF object: %w", err)
	}
	thr, _ := Threshold(o.Prob)
	consts := map[string]any{"off_threshold": thr, "off_stack_bytes": uint32(o.StackBytes), "off_all": b2u8(o.All)}
	if err := setConstants(spec, consts); err != nil {
		return nil, err
	}
	if o.Ring == nil || o.Targets == nil {
		return nil, fmt.Errorf("off-CPU program: the sampling program's ring buffer and target map are needed")
	}
	spec.Maps["samples"].MaxEntries = o.Ring.MaxEntries()
	c := &OffCPU{}
	repl := map[string]*ebpf.Map{"samples": o.Ring, "targets": o.Targets}
	bpf.SetKernelVersion(spec)
	if err := spec.LoadAndAssign(&c.objs, &ebpf.CollectionOptions{MapReplacements: repl}); err != nil {
		return nil, loadError(err)
	}
	c.l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: c.objs.OffSwitch})
	if err != nil {
		c.objs.Close()
		return nil, fmt.Errorf("attach the off-CPU program to sched:sched_switch: %w", err)
	}
	return c, nil
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Stats reads the program's counters, summed over CPUs.
func (c *OffCPU) Stats() (OffCPUStats, error) {
	var st OffCPUStats
	var per []uint64
	for i, dst := range []*uint64{&st.Switches, &st.Sampled, &st.Ended, &st.MapFull, &st.RingStart, &st.RingEnd, &st.Unseen,
		&st.GoParks, &st.GoSampled, &st.GoEnded, &st.GoMapFull, &st.GoRingStart, &st.GoRingEnd, &st.GoUnseen} {
		if err := c.objs.OffStats.Lookup(uint32(i), &per); err != nil {
			return st, fmt.Errorf("read the off-CPU counters: %w", err)
		}
		for _, v := range per {
			*dst += v
		}
	}
	return st, nil
}

// SetProb changes the sampling probability of the intervals that begin
// from now on, and returns the one it set (Threshold).
func (c *OffCPU) SetProb(p float64) (float64, error) {
	if !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("off-CPU sampling probability %g is not in (0, 1]", p)
	}
	thr, exact := Threshold(p)
	if err := c.objs.OffThreshold.Set(thr); err != nil {
		return 0, fmt.Errorf("set the off-CPU sampling threshold: %w", err)
	}
	return exact, nil
}

// Program is the attached program (for its run-time statistics).
func (c *OffCPU) Program() *ebpf.Program { return c.objs.OffSwitch }

// GoPrograms are the goroutine probes' programs, park, ready and execute
// (for their run-time statistics).
func (c *OffCPU) GoPrograms() []*ebpf.Program {
	return []*ebpf.Program{c.objs.GoPark, c.objs.GoReady, c.objs.GoExecute, c.objs.GoPreempt}
}

// AttachGo attaches the goroutine probes to the Go runtime of executable
// exe, for every process that runs it (the program keeps to the targets):
// entry uprobes on runtime.execute and runtime.ready first, then
// runtime.gopark, so that no sampled park misses its end. Each goes on
// the function's stack-check jump where it has one (symtab.EntrySite),
// which the kernel emulates, instead of its first instruction, which it
// would single-step (about 14 us a firing here); the cookie tells the
// program to ignore the firings where the jump to runtime.morestack is
// taken (the function runs again from its start). An executable without
// these functions (not Go, or stripped) is an error, and then none of
// the three is attached to it.
//
// The preemption probe (runtime.goschedImpl) needs the offsets of g.sched
// from the executable's DWARF, the same for every executable: preempt
// says whether it was attached, and why not when it was not.
func (c *OffCPU) AttachGo(exe string) (preempt error, err error) {
	tab, err := symtab.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("read the symbols of %s for the goroutine probes: %w", exe, err)
	}
	defer tab.Close()
	ex, err := link.OpenExecutable(exe)
	if err != nil {
		return nil, fmt.Errorf("open %s for the goroutine probes: %w", exe, err)
	}
	n := len(c.goLinks)
	for _, p := range []struct {
		sym  string
		prog *ebpf.Program
	}{{GoExecuteSymbol, c.objs.GoExecute}, {GoReadySymbol, c.objs.GoReady}, {GoParkSymbol, c.objs.GoPark}} {
		if err := c.attachGoEntry(ex, tab, p.sym, p.prog); err != nil {
			// All three or none: an execute probe without the park
			// probe would end intervals that never began.
			for _, l := range c.goLinks[n:] {
				l.Close()
			}
			c.goLinks = c.goLinks[:n]
			return nil, err
		}
	}
	return c.attachPreempt(ex, tab), nil
}

// attachPreempt attaches the preemption probe to tab's executable when
// its g.sched offsets are known and agree with those already given.
func (c *OffCPU) attachPreempt(ex *link.Executable, tab *symtab.Table) error {
	off, err := tab.GoSchedOffsets()
	if err != nil {
		return err
	}
	if c.sched != (symtab.GoSched{}) && c.sched != off {
		return fmt.Errorf("%s: g.sched offsets %+v differ from another executable's %+v", tab.Path, off, c.sched)
	}
	for _, v := range []struct {
		v   *ebpf.Variable
		off uint64
	}{{c.objs.GoSchedSp, off.SP}, {c.objs.GoSchedPc, off.PC}, {c.objs.GoSchedBp, off.BP}} {
		if err := v.v.Set(uint32(v.off)); err != nil {
			return fmt.Errorf("set the g.sched offsets: %w", err)
		}
	}
	c.sched = off
	return c.attachGoEntry(ex, tab, GoPreemptSymbol, c.objs.GoPreempt)
}

// attachGoEntry attaches prog on Go function sym's entry (goEntryProbe).
func (c *OffCPU) attachGoEntry(ex *link.Executable, tab *symtab.Table, sym string, prog *ebpf.Program) error {
	opts, err := goEntryProbe(tab, sym)
	if err != nil {
		return err
	}
	l, err := ex.Uprobe(sym, prog, opts)
	if err != nil {
		return fmt.Errorf("attach the goroutine probe to %s in %s: %w", sym, tab.Path, err)
	}
	c.goLinks = append(c.goLinks, l)
	return nil
}

// goEntryProbe is where to attach an entry probe on Go function sym whose
// arguments and g the program reads from the registers: the stack check's
// jump (cookie 1) or the first instruction, where every register holds its
// value at entry.
func goEntryProbe(tab *symtab.Table, sym string) (*link.UprobeOptions, error) {
	syms := tab.Lookup(sym)
	if len(syms) != 1 {
		return nil, fmt.Errorf("%s: %d functions named %s (want 1)", tab.Path, len(syms), sym)
	}
	addr, check, err := tab.EntrySite(syms[0])
	if err != nil {
		return nil, err
	}
	if !check {
		addr = syms[0].Value
	}
	off, err := tab.FileOffset(addr)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", sym, tab.Path, err)
	}
	opts := &link.UprobeOptions{Address: off}
	if check {
		opts.Cookie = 1
	}
	return opts, nil
}

// Detach detaches the programs; no record is written after it returns.
func (c *OffCPU) Detach() error {
	err := c.DetachGo()
	if c.l == nil {
		return err
	}
	if e := c.l.Close(); e != nil && err == nil {
		err = e
	}
	c.l = nil
	return err
}

// DetachGo detaches the goroutine probes (AttachGo), leaving the
// sched_switch program attached.
func (c *OffCPU) DetachGo() error {
	var err error
	for _, l := range c.goLinks {
		if e := l.Close(); e != nil && err == nil {
			err = e
		}
	}
	c.goLinks = nil
	return err
}

// Close detaches the program and releases its objects.
func (c *OffCPU) Close() error {
	c.Detach()
	return c.objs.Close()
}
