// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestLostExits times testdata/c/longjmp.c, whose lj_inner leaves by
// longjmp to its caller lj_outer: lj_outer's exit finds lj_inner's entry
// on top of the thread's stack, must find its own below it (the exit
// programs' search, tp_task_unwind) and count lj_inner's as an orphan.
// Without a process filter, so that the entries go to the thread's stack
// rather than the frame table. Every count is exact.
func TestLostExits(t *testing.T) {
	bpftest.Require(t)
	const calls = 300
	bin := testtarget.C(t, "c/longjmp.c", "longjmp")
	p := testtarget.Start(t, exec.Command(bin, "300"), testtarget.ReadyPrefix, nil)
	var specs []Spec
	for _, sym := range []string{"lj_outer", "lj_inner"} {
		sp, err := ResolveUser(p.Pid(), sym, 1)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp...)
	}
	s, err := Open(Options{Clock: Clock{Kind: ClockNS}}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.Release(t)
	lines, err := p.Wait(t, 60*time.Second, 0, nil)
	if l := testtarget.LastLine(lines); err != nil || !strings.HasPrefix(l, "sum=") {
		t.Fatalf("target failed (%v), output %q", err, lines)
	}
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	outer, inner := poll.Totals[0], poll.Totals[1]
	if outer.Calls != calls || outer.Orphans != 0 {
		t.Errorf("lj_outer: %d calls, %d orphans; want %d and 0", outer.Calls, outer.Orphans, calls)
	}
	if inner.Calls != 0 || inner.Orphans != calls {
		t.Errorf("lj_inner: %d calls, %d orphans; want 0 and %d (each left by longjmp)", inner.Calls, inner.Orphans, calls)
	}
}
