// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/internal/unwind"
)

// callersBinary returns testdata/c/callers.c built -O2
// -fomit-frame-pointer: its callers keep data in rbp.
func callersBinary(t testing.TB) string {
	t.Helper()
	return testtarget.C(t, "c/callers.c", "callers", "-O2", "-fomit-frame-pointer")
}

// callerStacks times tp_frameless_work in the callers target (calls of
// 200 µs on a 50 µs tick: every call crosses) and returns its callers.
func callerStacks(t *testing.T, stackBytes int) ([]Caller, Poll) {
	t.Helper()
	g := testtarget.StartGated(t, callersBinary(t), "100", "200000")
	specs, err := ResolveUser(g.Pid(), "tp_frameless_work", 1)
	if err != nil {
		t.Fatal(err)
	}
	s := openFor(t, Options{Clock: Clock{Kind: ClockTick, Tick: 50 * time.Microsecond}, StackBytes: stackBytes}, g.Pid(), specs)
	g.Release(t)
	if line := finalLine(t, g); !strings.HasPrefix(line, "calls=100 ") {
		t.Fatalf("target output %q", line)
	}
	s.Stop()
	p, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	return s.Callers(), p
}

// reachMain counts the records whose caller stack passes level1, level2,
// level3 and main in that order, and those whose stack was cut.
func reachMain(t *testing.T, cs []Caller) (main, cut, records uint64) {
	t.Helper()
	want := []string{"level1", "level2", "level3", "main"}
	for _, c := range cs {
		records += c.Records
		if c.Cut {
			cut += c.Records
		}
		var got []string
		for _, f := range c.Stack {
			got = append(got, f.Function())
		}
		i := 0
		for _, fn := range got {
			if i < len(want) && fn == want[i] {
				i++
			}
		}
		if i == len(want) {
			main += c.Records
		}
		t.Logf("%d records, unwound %v, cut %v (%s): %s", c.Records, c.Unwound, c.Cut, c.Stop, strings.Join(got, " < "))
	}
	return main, cut, records
}

// TestCallerStacksFrameless: a crossing record's caller stack, unwound
// from its stack copy with call frame information, reaches main through
// callers that keep data in rbp, where the kernel's frame-pointer walk
// (StackBytes < 0, the fallback) does not.
func TestCallerStacksFrameless(t *testing.T) {
	bpftest.Require(t)
	cs, p := callerStacks(t, 0)
	main, cut, records := reachMain(t, cs)
	if records == 0 || records != p.Records {
		t.Fatalf("callers hold %d records, the session read %d", records, p.Records)
	}
	if main != records || cut != 0 {
		t.Errorf("unwound stacks: %d of %d records reach main, %d cut; want all, none", main, records, cut)
	}
	for _, c := range cs {
		if !c.Unwound {
			t.Errorf("a caller stack was not unwound from a copy: %+v", c)
		}
	}

	fp, _ := callerStacks(t, -1)
	fmain, fcut, frecords := reachMain(t, fp)
	if frecords == 0 || fmain != 0 {
		t.Errorf("frame-pointer stacks: %d of %d records reach main; the target was built to stop them", fmain, frecords)
	}
	if fcut != frecords {
		t.Errorf("frame-pointer stacks: %d of %d records marked cut; every one ended early", fcut, frecords)
	}
}

// TestMergeCallers: callers whose stacks came out the same from two
// memory maps of the process (a reread between their records) are one
// caller; a stack that differs in a frame, or in how it ended, is not.
func TestMergeCallers(t *testing.T) {
	loc := func(addr uint64, fn string) symbolize.Location {
		return symbolize.Location{Addr: addr, Path: "/bin/app", Frames: []symbolize.Frame{{Function: fn, File: "app.c", Line: 3}}}
	}
	stack := []symbolize.Location{loc(0x10, "a"), loc(0x20, "main")}
	cs := mergeCallers([]Caller{
		{Target: 0, Stack: stack, Records: 1, Ticks: 2, Ns: 3},
		{Target: 0, Stack: []symbolize.Location{loc(0x10, "a"), loc(0x20, "main")}, Records: 10, Ticks: 20, Ns: 30},
		{Target: 0, Stack: stack[:1], Records: 100, Ticks: 200},
		{Target: 0, Stack: stack, Cut: true, Stop: unwind.Where{Reason: "x"}, Records: 1000},
		{Target: 1, Stack: stack, Records: 10000},
	})
	if len(cs) != 4 || cs[0].Records != 11 || cs[0].Ticks != 22 || cs[0].Ns != 33 {
		t.Errorf("merged callers %+v", cs)
	}
}
