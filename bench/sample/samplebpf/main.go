// SPDX-License-Identifier: Apache-2.0

// Command samplebpf measures the BPF cost per sample of two stack designs
// on one target process: "ringbuf" (tickprof's sample_cpu of
// bpf/sample.bpf.c: one variable-size record per sample, drained here) and
// "stackid" (sample_stackid of stackid.bpf.c: stacks interned in a
// stack-trace map and counted in a hash). Both are loaded from
// stackid.bpf.c, which includes sample.bpf.c unchanged. It enables kernel.bpf_stats_enabled for the run and prints the
// program's mean run time and this process's CPU per sample.
//
// Usage: samplebpf -mode ringbuf|stackid -hz 999 -pid PID (runs until PID exits)
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/sampler"
)

func main() {
	mode := flag.String("mode", "ringbuf", "ringbuf or stackid")
	hz := flag.Int("hz", 999, "sampling rate per CPU")
	pid := flag.Int("pid", 0, "target process")
	flag.Parse()
	if err := run(*mode, *hz, *pid); err != nil {
		fmt.Fprintln(os.Stderr, "samplebpf:", err)
		os.Exit(1)
	}
}

func run(mode string, hz, pid int) error {
	if pid <= 0 {
		return errors.New("give -pid")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return fmt.Errorf("enable BPF stats: %w", err)
	}
	defer stats.Close()
	var objs StackidObjects
	if err := LoadStackidObjects(&objs, nil); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer objs.Close()
	prog, err := sampleProgram(&objs, mode, pid)
	if err != nil {
		return err
	}
	exited, err := proc.ExitNotify(pid)
	if err != nil {
		return err
	}
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	clocks, err := sampler.AttachCPUClocks(prog, hz)
	if err != nil {
		return err
	}
	var records uint64
	if mode == "ringbuf" {
		if records, err = drainUntil(objs.Samples, exited); err != nil {
			return err
		}
	} else {
		<-exited
	}
	clocks.Close()
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	ps, err := prog.Stats()
	if err != nil {
		return err
	}
	if mode == "stackid" {
		records += countStacks(&objs)
	}
	rt, cnt, kept := float64(ps.Runtime.Nanoseconds()), ps.RunCount, keptSamples(&objs)
	fmt.Printf("  %-8s %6d runs, %6d target samples: BPF %5.0f ns per run, %5.0f ns per target sample; user space %5.0f ns per target sample (%d records/stacks)\n",
		mode, cnt, kept, per(rt, cnt), per(rt, kept), per(cpuNs(ru0, ru1), kept), records)
	return nil
}

// sampleProgram marks pid as the target and returns the program of the
// stack design mode names.
func sampleProgram(objs *StackidObjects, mode string, pid int) (*ebpf.Program, error) {
	if err := objs.Targets.Put(uint32(pid), uint8(1)); err != nil {
		return nil, err
	}
	switch mode {
	case "ringbuf":
		return objs.SampleCpu, nil
	case "stackid":
		return objs.SampleStackid, nil
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

// drainUntil reads the records of the ring buffer m until exited is
// closed, and returns how many it read.
func drainUntil(m *ebpf.Map, exited <-chan struct{}) (uint64, error) {
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	var records uint64
	var rec ringbuf.Record
	for done := false; !done; {
		select {
		case <-exited:
			done = true
		default:
		}
		rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
		for rd.ReadInto(&rec) == nil {
			records++
		}
	}
	return records, nil
}

// keptSamples sums the per-CPU count of the target's samples (0 if it
// cannot be read).
func keptSamples(objs *StackidObjects) uint64 {
	var kept uint64
	var vals []uint64
	if err := objs.Stats.Lookup(uint32(1), &vals); err == nil {
		for _, v := range vals {
			kept += v
		}
	}
	return kept
}

// countStacks counts the distinct stacks in the stack-count map.
func countStacks(objs *StackidObjects) uint64 {
	var n uint64
	var k StackidStackKey
	var v uint64
	it := objs.StackCounts.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n
}

// cpuNs is the user and system CPU time between two readings (ns).
func cpuNs(ru0, ru1 syscall.Rusage) float64 {
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e9 + float64(t.Usec)*1e3 }
	return tv(ru1.Utime) - tv(ru0.Utime) + tv(ru1.Stime) - tv(ru0.Stime)
}

// per is x per n, 0 when n is 0.
func per(x float64, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return x / float64(n)
}
