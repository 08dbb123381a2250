// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/features"
)

func mustSyscall(t testing.TB, name string, m SyscallAttach) []Spec {
	t.Helper()
	sp, err := ResolveSyscall(name, m)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestResolveSyscall(t *testing.T) {
	if _, err := features.EnsureTracefs(); err != nil && !fileExists("/proc/kallsyms") {
		t.Skipf("skipping: neither tracefs (%v) nor /proc/kallsyms", err)
	}
	all, err := ResolveSyscall("all", SyscallAuto)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 250 {
		t.Errorf("-s all gives %d syscalls, want the kernel's ~350", len(all))
	}
	for _, tc := range []struct{ arg, name, entry string }{
		{"getppid", "syscall:getppid", "getppid"},
		{"fstat", "syscall:fstat", "newfstat"},
		{"newfstat", "syscall:fstat", "newfstat"},
		{"sys_read", "syscall:read", "read"},
		{"__x64_sys_openat", "syscall:openat", "openat"},
	} {
		sp, err := ResolveSyscall(tc.arg, SyscallAuto)
		if err != nil {
			t.Errorf("ResolveSyscall(%q): %v", tc.arg, err)
			continue
		}
		if len(sp) != 1 || sp[0].Name != tc.name || sp[0].Symbol != tc.entry || sp[0].Kind != KindSyscall {
			t.Errorf("ResolveSyscall(%q) = %+v, want name %s entry %s", tc.arg, sp, tc.name, tc.entry)
		}
	}
	sp := mustSyscall(t, "getppid", SyscallTracepoint)
	if nr, m := splitSyscallArg(sp[0].Arg); nr != 110 || m != SyscallTracepoint {
		t.Errorf("getppid: nr %d method %v, want 110 tracepoint", nr, m)
	}
	_, err = ResolveSyscall("getppdi", SyscallAuto)
	var se *SyscallError
	if !errors.As(err, &se) || len(se.Closest) == 0 || se.Closest[0] != "getppid" {
		t.Errorf("unknown name: %v, want closest getppid first", err)
	}
	if !strings.Contains(err.Error(), "closest: getppid") {
		t.Errorf("error %q does not offer getppid", err)
	}
}

// TestSyscallGetppidExactCount: every getppid of the target is counted,
// once, with either attach method; nothing from other processes.
func TestSyscallGetppidExactCount(t *testing.T) {
	bpftest.Require(t)
	for _, m := range []SyscallAttach{SyscallRaw, SyscallTracepoint} {
		t.Run(m.String(), func(t *testing.T) {
			const n = 20000
			_, p := timeSysloop(t, Options{Clock: Clock{Kind: ClockTick, Tick: time.Microsecond}, Exact: true},
				mustSyscall(t, "getppid", m), "getppid", "20000")
			c := p.Totals[0]
			if c.Calls != n || c.Orphans != 0 {
				t.Fatalf("calls %d orphans %d, want %d and 0", c.Calls, c.Orphans, n)
			}
			mean := float64(c.NsSum) / float64(c.Calls)
			t.Logf("%s: getppid kernel path %.0f ns mean (min %d, max %d ns)", m, mean, c.NsMin-1, c.NsMax)
			if mean <= 0 || mean > 1e6 {
				t.Errorf("ns mean %.0f outside (0, 1ms]", mean)
			}
		})
	}
}

// coverCheck reports whether the tick-clock interval of target i, at a
// 99.9% confidence (so that an honest interval fails this check about once
// in a thousand runs), covers the exact ns mean measured on the same calls.
func coverCheck(t testing.TB, s *Session, p Poll, i int) (estimate.Result, float64) {
	t.Helper()
	r, ns := tickInterval(t, s, p, i)
	if ns < r.Low || ns > r.High {
		t.Errorf("tick interval [%.0f, %.0f] ns (99.9%%, %s, d=%v) does not cover the ns mean %.0f ns", r.Low, r.High, r.Method, s.Clock().Tick, ns)
	}
	return r, ns
}

// tickInterval is the 99.9% tick-clock interval of target i and its exact
// ns mean. The per-poll batches go in too: successive calls can be
// correlated (Beilner eq. 11; bursts of host load on an emulated guest),
// and estimate.Time then reports the wider of the per-call and the
// batch-means intervals, as tickprof itself does.
func tickInterval(t testing.TB, s *Session, p Poll, i int) (estimate.Result, float64) {
	t.Helper()
	return tickIntervalAt(t, s, p, i, 0.999)
}

// tickIntervalAt is tickInterval at confidence conf.
func tickIntervalAt(t testing.TB, s *Session, p Poll, i int, conf float64) (estimate.Result, float64) {
	t.Helper()
	c := p.Totals[i]
	var batches []estimate.Batch
	for _, b := range s.Batches(i) {
		if b.Calls > 0 {
			batches = append(batches, estimate.Batch{Calls: b.Calls, Ticks: b.Ticks})
		}
	}
	if len(batches) < 10 {
		batches = nil // too few for a batch-means interval worth the name
	}
	r, err := estimate.Time(estimate.Counts{
		Resolution: s.Clock().Resolution(), Calls: c.Calls, Ticks: c.Ticks,
		TicksSq: c.TicksSq.Lo, HasTicksSq: c.TicksSq.Hi == 0, Batches: batches,
	}, estimate.Options{Confidence: conf})
	if err != nil {
		t.Fatal(err)
	}
	return r, float64(c.NsSum) / float64(c.Calls)
}

// TestSyscallPipeReadBlocked: a read that waits for a writer counts the
// time it was blocked: at least the writer's 2000 us sleep (the writer is
// another process), and not 50 ms more.
func TestSyscallPipeReadBlocked(t *testing.T) {
	timeBlocking(t, "read", 60, 2000e3, 2000e3+50e6, "pipe", "60", "2000")
}

// TestSyscallNanosleep: nanosleep of 1 ms averages 1 ms plus the wake-up
// latency (< 20 ms), and the jiffies interval covers the ns mean.
func TestSyscallNanosleep(t *testing.T) {
	timeBlocking(t, "nanosleep", 400, 1e6, 1e6+20e6, "nanosleep", "400", "1000")
}

// timeBlocking times the system call sc in sysloop ARGS with the jiffies
// clock, and fails unless it counts n calls, the jiffies interval covers
// the ns mean (coverCheck), and that mean is from lo to hi ns.
func timeBlocking(t *testing.T, sc string, n uint64, lo, hi float64, args ...string) {
	t.Helper()
	bpftest.Require(t)
	s, p := timeSysloop(t, Options{Clock: Clock{Kind: ClockJiffies}, Exact: true},
		mustSyscall(t, sc, SyscallAuto), args...)
	c := p.Totals[0]
	if c.Calls != n {
		t.Fatalf("%s calls %d, want %d", sc, c.Calls, n)
	}
	r, ns := coverCheck(t, s, p, 0)
	t.Logf("%s %v: ns mean %.0f ns, jiffies estimate %.0f ns [%.0f, %.0f] (99.9%%), %d ticks",
		sc, args, ns, r.Mean, r.Low, r.High, c.Ticks)
	if ns < lo || ns > hi {
		t.Errorf("%s: ns mean %.0f ns, want %.0f to %.0f ns", sc, ns, lo, hi)
	}
}

// TestSyscallAllKnownCounts: -s all on a program whose syscalls after the
// start are known exactly.
func TestSyscallAllKnownCounts(t *testing.T) {
	bpftest.Require(t)
	specs := mustSyscall(t, "all", SyscallAuto)
	s, p := timeSysloop(t, Options{Clock: Clock{Kind: ClockJiffies}}, specs, "mix")
	want := map[string]uint64{"syscall:getppid": 7, "syscall:getpid": 3, "syscall:close": 5, "syscall:umask": 2, "syscall:write": 1}
	for i, tg := range s.Targets() {
		c := p.Totals[i]
		if c.Calls != want[tg.Name] {
			t.Errorf("%s: %d calls, want %d", tg.Name, c.Calls, want[tg.Name])
		}
		if c.Orphans != 0 && tg.Name != "syscall:rt_sigtimedwait" {
			t.Errorf("%s: %d orphans, want 0", tg.Name, c.Orphans)
		}
	}
	if len(s.Targets()) != len(specs) {
		t.Errorf("%d targets attached, %d asked", len(s.Targets()), len(specs))
	}
}
