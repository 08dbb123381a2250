// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tickprof/tickprof/internal/symbolize"
)

// Goroutines off CPU (Config.OffCPU, Go targets): a goroutine that blocks
// on a channel, a mutex or a timer does not block its thread, so the
// thread intervals of sched_switch show the Go scheduler's stacks, not the
// goroutine's. For each target executable that is a Go program, the
// off-CPU program's goroutine probes (bpf/offcpu.bpf.c: go_park,
// go_ready, go_execute) are attached to its runtime: a goroutine's
// interval runs from runtime.gopark to runtime.execute, blocked up to
// runtime.ready and runnable (waiting for a thread) after it; a goroutine
// preempted (runtime.goschedImpl) is runnable from then to
// runtime.execute. Each is
// sampled with the same probability as the thread intervals, and its stack
// is the goroutine's when it leaves (docs/statistics.md, "Goroutines").
//
// The thread intervals of such a process are kept, but not those of
// threads idle in the Go scheduler (schedIdle): a thread with no goroutine
// to run is no goroutine's time, and the goroutines' own waits are counted
// by their intervals. A goroutine blocked in a system call blocks its
// thread, and that thread interval, with the goroutine's stack, stays.

// The goroutine probes' cost, measured on a goroutine ping-pong over an
// unbuffered channel (docs/performance.md, "Off-CPU sampling"): per park,
// the three uprobes a park, ready and execute trap into, and per sampled
// park the stack walk, two records and their handling.
const (
	goParkBaseNs    = 9000
	goParkSampledNs = 9000
)

// goTargets are the target executables that are Go programs (the
// command's, or each process's), and whether every target's is one.
func (s *Session) goTargets() (exes []string, all bool) {
	if s.cfg.All {
		return nil, false // every process: no executable to attach to
	}
	var paths []string
	if s.cfg.Exe != "" {
		paths = append(paths, s.cfg.Exe)
	}
	for _, pid := range s.cfg.PIDs {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
			paths = append(paths, exe)
		}
	}
	seen := map[string]bool{}
	all = len(paths) > 0
	for _, exe := range paths {
		if !isGoExecutable(exe) {
			all = false
			continue
		}
		if !seen[exe] {
			seen[exe] = true
			exes = append(exes, exe)
		}
	}
	return exes, all
}

// attachGoroutines attaches the goroutine probes to the Go executables.
func (s *Session) attachGoroutines(exes []string) error {
	for _, exe := range exes {
		preempt, err := s.off.prog.AttachGo(exe)
		if err != nil {
			return fmt.Errorf("goroutine off-CPU time: %w", err)
		}
		if preempt != nil {
			s.off.goNoPreempt = append(s.off.goNoPreempt, preempt.Error())
		}
		if abs, err := filepath.Abs(exe); err == nil {
			exe = abs
		}
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		s.off.goExes = append(s.off.goExes, exe)
	}
	return nil
}

// isGoExecutable says whether exe was built by the Go toolchain.
func isGoExecutable(exe string) bool {
	_, err := buildinfo.ReadFile(exe)
	return err == nil
}

// schedIdle are the Go scheduler functions a thread with no goroutine to
// run waits under: schedule and findRunnable (the idle thread's search,
// netpoll included), mPark (stopm, stoplockedm: the thread parked),
// sysmon and templateThread (the runtime's own threads).
var schedIdle = map[string]bool{
	"runtime.schedule":       true,
	"runtime.findRunnable":   true,
	"runtime.mPark":          true,
	"runtime.sysmon":         true,
	"runtime.templateThread": true,
}

// schedIdle says whether st is a thread interval of a process whose
// goroutines are traced, spent idle in the Go scheduler.
func (s *Session) schedIdle(st *rawStack) bool {
	if s.off == nil || len(s.off.goExes) == 0 || st.off == nil || st.tid == 0 || !s.goTraced(st.proc) {
		return false
	}
	for i, a := range st.user {
		for _, f := range st.proc.Locate(a, i == 0).Frames {
			if schedIdle[f.Function] {
				return true
			}
		}
	}
	return false
}

// goTraced says whether img runs an executable with goroutine probes.
func (s *Session) goTraced(img *symbolize.Image) bool {
	for _, e := range s.off.goExes {
		if img.Exe() == e {
			return true
		}
	}
	return false
}
