// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/bpf"
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
}

// OffCPU is the off-CPU program attached to sched_switch.
type OffCPU struct {
	objs bpf.OffCPUObjects
	l    link.Link
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
	for i, dst := range []*uint64{&st.Switches, &st.Sampled, &st.Ended, &st.MapFull, &st.RingStart, &st.RingEnd, &st.Unseen} {
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

// Detach detaches the program; no record is written after it returns.
func (c *OffCPU) Detach() error {
	if c.l == nil {
		return nil
	}
	err := c.l.Close()
	c.l = nil
	return err
}

// Close detaches the program and releases its objects.
func (c *OffCPU) Close() error {
	c.Detach()
	return c.objs.Close()
}
