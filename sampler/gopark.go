// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tickprof/tickprof/estimate"
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

// goOverBudget detaches the goroutine probes when their fixed cost at
// the targets' park rate (parks a second), which no sampling probability
// lowers (every park traps into the probes), exceeds the off-CPU budget:
// at 100,000 parks a second, as a busy Go server may reach, it would be
// 90% of a CPU. The goroutine intervals still open are dropped (their
// ends will not be seen) and counted; those that ended stay in the
// profile, whose comments and the run's counters say from when on the
// goroutines' waits are missing. The probes' cost is checked every
// tuning (offTuneEvery), so a run at most exceeds the budget for that
// long. Only under a chosen probability (a probability given is the
// caller's choice, the probes' cost with it).
func (s *Session) goOverBudget(parks float64) {
	st := s.off
	if len(st.goExes) == 0 || st.goDetached != "" {
		return
	}
	cost := parks * goParkBaseNs / 1e9
	if cost <= st.budget {
		return
	}
	if err := st.prog.DetachGo(); err != nil {
		return // still attached: try again at the next tuning
	}
	st.goDetached = fmt.Sprintf("goroutine probes detached %.1f s into the run: %.0f parks a second cost %.1f%% of a CPU at %.0f µs a park, over the %.1f%% budget; goroutine waits after that are not in the profile",
		time.Since(s.start).Seconds(), parks, 100*cost, goParkBaseNs/1e3, 100*st.budget)
	for k := range st.pending {
		if k.g != 0 {
			delete(st.pending, k)
			st.goDropped++
		}
	}
}

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
	if s.held != nil {
		// The command, held before its exec: /proc/PID/exe is not yet
		// its executable.
		return goOnly(paths)
	}
	for _, pid := range s.cfg.PIDs {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
			paths = append(paths, exe)
		}
	}
	return goOnly(paths)
}

// goOnly are the Go programs among the executables paths, once each,
// and whether every one is.
func goOnly(paths []string) (exes []string, all bool) {
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
// An executable they cannot be attached to is left to thread intervals,
// and the stats say why (GoRefused).
func (s *Session) attachGoroutines(exes []string) {
	for _, exe := range exes {
		preempt, err := s.off.prog.AttachGo(exe)
		if err != nil {
			s.off.goRefused = append(s.off.goRefused, err.Error())
			continue
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
}

// isGoExecutable says whether exe was built by the Go toolchain.
func isGoExecutable(exe string) bool {
	_, err := buildinfo.ReadFile(exe)
	return err == nil
}

// schedIdleFuncs are the Go scheduler functions a thread with no goroutine to
// run waits under: schedule and findRunnable (the idle thread's search,
// netpoll included), mPark (stopm, stoplockedm: the thread parked),
// sysmon and templateThread (the runtime's own threads).
var schedIdleFuncs = map[string]bool{
	"runtime.schedule":       true,
	"runtime.findRunnable":   true,
	"runtime.mPark":          true,
	"runtime.sysmon":         true,
	"runtime.templateThread": true,
}

// schedIdle says whether st is a thread interval of a process whose
// goroutines are traced, spent idle in the Go scheduler (remembered by
// stack).
func (s *Session) schedIdle(st *rawStack) bool {
	if s.off == nil || len(s.off.goExes) == 0 || st.off == nil || st.tid == 0 || !s.goTraced(st.proc) {
		return false
	}
	if v, ok := s.off.idle[st]; ok {
		return v
	}
	v := false
	for i, a := range st.user {
		for _, f := range st.proc.Locate(a, i == 0).Frames {
			v = v || schedIdleFuncs[f.Function]
		}
	}
	if s.off.idle == nil {
		s.off.idle = map[*rawStack]bool{}
	}
	s.off.idle[st] = v
	return v
}

// idleComments name the thread intervals schedIdle left out of the
// profile, and the goroutine probes' detach (goOverBudget).
func (s *Session) idleComments() []string {
	var idle estimate.HTSums
	for _, st := range s.stacks {
		if s.schedIdle(st) {
			idle = idle.Plus(st.off.HTSums)
		}
	}
	var out []string
	if s.off != nil && s.off.goDetached != "" {
		out = append(out, "off-CPU: "+s.off.goDetached)
	}
	if idle.N == 0 {
		return out
	}
	return append(out, fmt.Sprintf("off-CPU: %d sampled intervals (%.4g ms estimated) of threads idle in the Go scheduler left out: the goroutines' own intervals count their waits", idle.N, idle.Est/1e6))
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
