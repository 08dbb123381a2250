// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// runGated times the given targets of a gated process that makes its
// calls and exits, and returns the final totals and the target's line.
func runGated(t *testing.T, opts Options, syms []string, args ...string) (*Session, Poll, string) {
	t.Helper()
	return runGatedIn(t, opts, true, syms, args...)
}

// runGatedIn is runGated with the session limited to the process (one, as
// time runs) or, with one false, to every process (PID 0).
func runGatedIn(t *testing.T, opts Options, one bool, syms []string, args ...string) (*Session, Poll, string) {
	t.Helper()
	g := testtarget.StartGated(t, timedBinary(t), args...)
	pid := g.Pid()
	var specs []Spec
	for _, s := range syms {
		sp, err := ResolveUser(pid, s, 16)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp...)
	}
	scope := 0
	if one {
		scope = pid
	}
	s := openFor(t, opts, scope, specs)
	g.Release(t)
	line := finalLine(t, g)
	s.Stop()
	p, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	return s, p, line
}

func parseLine(t *testing.T, line string) (calls int, inner float64) {
	t.Helper()
	if _, err := fmt.Sscanf(line, "calls=%d inner_mean_ns=%g", &calls, &inner); err != nil {
		t.Fatalf("target output %q: %v", line, err)
	}
	return calls, inner
}

func TestExactCountsAndNsMean(t *testing.T) {
	bpftest.Require(t)
	_, p, line := runGated(t, Options{Clock: Clock{Kind: ClockNS}}, []string{"tp_spin20us"}, "spin20us", "300")
	calls, inner := parseLine(t, line)
	c := p.Totals[0]
	if c.Calls != uint64(calls) || calls != 300 {
		t.Fatalf("calls: BPF %d, target %d, want 300", c.Calls, calls)
	}
	if c.Orphans != 0 {
		t.Errorf("orphans = %d, want 0", c.Orphans)
	}
	mean := float64(c.NsSum) / float64(c.Calls)
	t.Logf("ns mean %.0f ns, target's own %.0f ns, bias %.0f ns", mean, inner, mean-inner)
	// The probes add their own cost (about 2 us here): the BPF mean may
	// exceed the function's own measurement by that, never fall below it
	// by more than clock noise.
	switch {
	case os.Getenv("TICKPROF_IN_MATRIX") == "1":
		// Under software CPU emulation (the kernel matrix) a probe costs
		// tens of microseconds: only the counts are checked there.
		t.Log("kernel matrix: timing tolerances not checked")
	case mean < inner-500 || mean > inner+10000:
		t.Errorf("ns mean %.0f vs target's own %.0f: outside [-0.5us, +10us]", mean, inner)
	case c.Crossings > c.Calls/4:
		t.Errorf("ns clock, 131us record grid: %d of %d calls of 20us got a record, want about 15%%", c.Crossings, c.Calls)
	}
	if c.Ticks != c.NsSum || c.NsMin == 0 || c.NsMax < c.NsMin {
		t.Errorf("ns mode: ticks %d != ns sum %d or min/max %d/%d wrong", c.Ticks, c.NsSum, c.NsMin, c.NsMax)
	}
	var h uint64
	for _, b := range c.Hist {
		h += b
	}
	if h != c.Calls {
		t.Errorf("histogram holds %d calls, want %d", h, c.Calls)
	}
}

func TestThreadsAndRecursion(t *testing.T) {
	bpftest.Require(t)
	_, p, _ := runGated(t, Options{Clock: Clock{Kind: ClockTick, Tick: 100 * time.Microsecond}},
		[]string{"tp_spin1us"}, "-t", "4", "spin1us", "500")
	if p.Totals[0].Calls != 2000 || p.Totals[0].Orphans != 0 {
		t.Errorf("4 threads x 500: calls %d orphans %d, want 2000 and 0", p.Totals[0].Calls, p.Totals[0].Orphans)
	}
	// 16 deep: every level counts.
	_, p, _ = runGated(t, Options{Clock: Clock{Kind: ClockNS}}, []string{"tp_recurse"}, "-r", "16", "recurse", "20")
	if c := p.Totals[0]; c.Calls != 16*20 || c.Orphans != 0 {
		t.Errorf("recursion 16 deep x 20: calls %d orphans %d, want 320 and 0", c.Calls, c.Orphans)
	}
	// 20 deep, one process: every level has its own frame in the frame
	// table (timing.h), so every level counts.
	_, p, _ = runGated(t, Options{Clock: Clock{Kind: ClockNS}}, []string{"tp_recurse"}, "-r", "20", "recurse", "10")
	if c := p.Totals[0]; c.Calls != 20*10 || c.Orphans != 0 {
		t.Errorf("recursion 20 deep x 10: calls %d orphans %d, want 200 and 0", c.Calls, c.Orphans)
	}
	// Every process (no frame table): the thread's stack in task storage
	// keeps 16 entries, so the 4 outermost of each call are overwritten.
	_, p, _ = runGatedIn(t, Options{Clock: Clock{Kind: ClockNS}}, false, []string{"tp_recurse"}, "-r", "20", "recurse", "10")
	if c := p.Totals[0]; c.Calls != 16*10 || c.Orphans != 4*10 {
		t.Errorf("recursion 20 deep x 10, every process: calls %d orphans %d, want 160 and 40", c.Calls, c.Orphans)
	}
}

func TestTickClockCoversNs(t *testing.T) {
	bpftest.Require(t)
	for _, tc := range []struct {
		clk     Clock
		sym, fn string
		calls   uint64
		offCPU  bool
	}{
		{Clock{Kind: ClockJiffies}, "tp_spin500us", "spin500us", 400, false},
		{Clock{Kind: ClockTick, Tick: 50 * time.Microsecond}, "tp_spin500us", "spin500us", 400, false},
		// Off the CPU: a function that sleeps 2 ms.
		{Clock{Kind: ClockJiffies}, "tp_sleep2ms", "sleep2ms", 150, true},
	} {
		clk := tc.clk
		t.Run(clk.String()+"/"+tc.fn, func(t *testing.T) {
			s, p, _ := runGated(t, Options{Clock: clk, Exact: true}, []string{tc.sym}, tc.fn, fmt.Sprint(tc.calls))
			c := p.Totals[0]
			if c.Calls != tc.calls {
				t.Fatalf("calls %d, want %d", c.Calls, tc.calls)
			}
			if tc.offCPU && float64(c.NsSum)/float64(c.Calls) < 2e6 {
				t.Errorf("sleeping function: exact mean %d ns, want at least 2 ms", c.NsSum/c.Calls)
			}
			d := s.Clock().Resolution()
			n := float64(c.Calls)
			mean := d * float64(c.Ticks) / n
			// Sample variance of c_i (Beilner eq. 10a/10b): the interval of
			// the mean at 99.9% (z = 3.29), plus a d/(2n) margin for the
			// discrete count.
			v := (c.TicksSq.Float64() - float64(c.Ticks)*float64(c.Ticks)/n) / (n - 1)
			half := 3.29*d*math.Sqrt(v/n) + d/(2*n)
			exact := float64(c.NsSum) / n
			t.Logf("%s: d=%.0f ns, mean %.0f ± %.0f ns, exact %.0f ns, crossings %d, records %d",
				clk, d, mean, half, exact, c.Crossings, p.Records)
			if math.Abs(mean-exact) > half {
				t.Errorf("tick mean %.0f ± %.0f does not cover the exact mean %.0f", mean, half, exact)
			}
			if p.Records+p.Stats.RingDrops != c.Crossings {
				t.Errorf("records %d + drops %d != crossings %d", p.Records, p.Stats.RingDrops, c.Crossings)
			}
			callers := s.Callers()
			var ticks uint64
			found := false
			for _, cl := range callers {
				ticks += cl.Ticks
				for _, f := range cl.Stack {
					if strings.Contains(f.Function(), "worker") {
						found = true
					}
				}
			}
			if ticks != c.Ticks {
				t.Errorf("callers hold %d ticks, counters %d", ticks, c.Ticks)
			}
			if !found {
				t.Errorf("no caller stack names worker: %+v", callers)
			}
		})
	}
}

func TestNestedTargets(t *testing.T) {
	bpftest.Require(t)
	// tp_spin20us calls clock_gettime in its spin loop: one thread stack
	// holds entries of both targets, nested.
	_, p, _ := runGated(t, Options{Clock: Clock{Kind: ClockNS}}, []string{"tp_spin20us", "libc:clock_gettime"}, "spin20us", "200")
	outer, inner := p.Totals[0], p.Totals[1]
	if outer.Calls != 200 || outer.Orphans != 0 || inner.Orphans != 0 || inner.Calls < 400 {
		t.Errorf("nested: outer %d calls %d orphans, inner %d calls %d orphans; want 200/0 and >= 400/0",
			outer.Calls, outer.Orphans, inner.Calls, inner.Orphans)
	}
	if outer.NsSum <= inner.NsSum/2 {
		t.Errorf("outer time %d ns should hold most of the inner time %d ns", outer.NsSum, inner.NsSum)
	}
}

func TestNonPIEAndGlob(t *testing.T) {
	bpftest.Require(t)
	bin := timedBinaryNoPIE(t)
	g := testtarget.StartGated(t, bin, "spin1us", "300")
	pid := g.Pid()
	specs, err := ResolveUser(pid, "tp_spin*", 16)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if len(specs) != 3 {
		t.Fatalf("tp_spin* in %s: %v, want the 3 spin functions", bin, names)
	}
	if _, err := ResolveUser(pid, "tp_*", 2); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("tp_* with a limit of 2: got %v, want a limit error", err)
	}
	s, err := Open(Options{Clock: Clock{Kind: ClockNS}, PID: pid}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g.Release(t)
	finalLine(t, g)
	s.Stop()
	p, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	for i, tg := range s.Targets() {
		want := uint64(0)
		if tg.Name == "tp_spin1us" {
			want = 300
		}
		if p.Totals[i].Calls != want {
			t.Errorf("non-PIE %s: %d calls, want %d", tg.Name, p.Totals[i].Calls, want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	bin := timedBinary(t)
	_, err := ResolveUser(0, bin+":tp_spin2us", 4)
	var se *SymbolError
	if !errors.As(err, &se) || len(se.Closest) == 0 || se.Closest[0] != "tp_spin1us" && se.Closest[0] != "tp_spin20us" {
		t.Errorf("missing symbol: %v", err)
	}
	if _, err := ResolveUser(0, "tp_spin1us", 4); err == nil || !errors.Is(err, proc.ErrNeedProcess) {
		t.Errorf("bare symbol without a process: %v", err)
	}
	if _, err := ResolveUser(0, "/nonexistent/bin:f", 4); err == nil {
		t.Error("missing binary: no error")
	}
	notELF := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveUser(0, notELF+":f", 4); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("not an ELF file: %v", err)
	}
	specs, err := ResolveUser(0, bin+":tp_spin1us", 4)
	if err != nil || len(specs) != 1 || specs[0].Offset == 0 || specs[0].Kind != KindUser {
		t.Errorf("PATH:SYMBOL: %+v %v", specs, err)
	}
}

func TestParseClock(t *testing.T) {
	for in, want := range map[string]Clock{
		"jiffies": {Kind: ClockJiffies}, "ns": {Kind: ClockNS, Tick: time.Nanosecond},
		"tick:1ms": {Kind: ClockTick, Tick: time.Millisecond},
	} {
		if c, err := ParseClock(in); err != nil || c != want || c.String() != strings.Replace(in, "1ms", "1ms", 1) {
			t.Errorf("ParseClock(%q) = %v, %v", in, c, err)
		}
	}
	for _, bad := range []string{"", "tick:", "tick:10ns", "hz", "tick:-1ms"} {
		if _, err := ParseClock(bad); err == nil {
			t.Errorf("ParseClock(%q): no error", bad)
		}
	}
}

func TestU128(t *testing.T) {
	a := U128{0, ^uint64(0)}
	b := a.Add(U128{0, 1})
	if b != (U128{1, 0}) || b.Sub(U128{0, 1}) != a {
		t.Errorf("carry: %v", b)
	}
	if f := b.Float64(); f != 18446744073709551616 {
		t.Errorf("Float64 = %v", f)
	}
	per := []bpf.TimingTpCounts{{Calls: 2, NsMin: 11, NsMax: 20, NsSqLo: ^uint64(0)}, {Calls: 3, NsMin: 6, NsMax: 9, NsSqLo: 1}, {}}
	c := sumCPUs(per)
	if c.Calls != 5 || c.NsMin != 5 || c.NsMax != 20 || c.NsSq != (U128{1, 0}) {
		t.Errorf("sumCPUs = %+v", c)
	}
}

// TestFrameTableMigrationAndFork checks the frame table (timing.h) where
// the frame could mislead it: a thread moved to another CPU between its
// entry and its exit, and a child forked inside the call that returns
// from it (through its copy of the return probe) while the parent's call
// is in flight at the same address, with either kind of link.
func TestFrameTableMigrationAndFork(t *testing.T) {
	bpftest.Require(t)
	_, p, line := runGated(t, Options{Clock: Clock{Kind: ClockNS}}, []string{"tp_migrate"}, "-t", "2", "migrate", "100")
	var calls, moved int
	var inner float64
	if _, err := fmt.Sscanf(line, "calls=%d inner_mean_ns=%g moved=%d", &calls, &inner, &moved); err != nil {
		t.Fatalf("target output %q: %v", line, err)
	}
	c := p.Totals[0]
	t.Logf("migrate: %d calls, %d moved to another CPU; ns mean %.0f, target's own %.0f", calls, moved, float64(c.NsSum)/float64(max(c.Calls, 1)), inner)
	if c.Calls != 200 || c.Orphans != 0 || calls != 200 {
		t.Errorf("2 threads x 100 calls moving CPU: BPF calls %d orphans %d (target %d), want 200 and 0", c.Calls, c.Orphans, calls)
	}
	if moved == 0 && runtime.NumCPU() > 1 {
		t.Errorf("no call moved to another CPU on a %d-CPU machine", runtime.NumCPU())
	}
	if mean := float64(c.NsSum) / float64(max(c.Calls, 1)); os.Getenv("TICKPROF_IN_MATRIX") != "1" && (mean < inner-500 || mean > inner+50000) {
		t.Errorf("ns mean %.0f vs target's own %.0f: outside [-0.5us, +50us]", mean, inner)
	}
	for _, single := range []bool{false, true} {
		s, p, line := runGated(t, Options{Clock: Clock{Kind: ClockNS}, SingleLinks: single}, []string{"tp_fork"}, "fork", "20")
		calls, inner := parseLine(t, line)
		c := p.Totals[0]
		mean := float64(c.NsSum) / float64(max(c.Calls, 1))
		t.Logf("fork, %s links: BPF calls %d orphans %d, ns mean %.0f, parent's own %.0f", s.LinkKind(), c.Calls, c.Orphans, mean, inner)
		if c.Calls != 20 || c.Orphans != 0 || calls != 20 {
			t.Errorf("fork, %s links: BPF calls %d orphans %d (target %d), want 20 and 0", s.LinkKind(), c.Calls, c.Orphans, calls)
		}
		if os.Getenv("TICKPROF_IN_MATRIX") != "1" && (mean < inner-500 || mean > inner+50000) {
			t.Errorf("fork, %s links: ns mean %.0f vs the parent's own %.0f: outside [-0.5us, +50us]", s.LinkKind(), mean, inner)
		}
	}
}
