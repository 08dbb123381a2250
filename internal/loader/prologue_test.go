// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// prologueBinary returns testdata/c/prologue.c built.
func prologueBinary(t testing.TB) string {
	t.Helper()
	return testtarget.C(t, "c/prologue.c", "prologue")
}

// TestEntryPlacement checks where the entry probes of hand-written
// prologues go (symtab.NativeEntrySite) and, on the running target, that
// every call is still timed: the uretprobe on the moved address still
// catches each return, and the target computes the right sum (a return
// address written over would crash it or change the sum).
func TestEntryPlacement(t *testing.T) {
	bpftest.Require(t)
	const calls = 500
	bin := prologueBinary(t)
	p := testtarget.Start(t, exec.Command(bin, "500"), testtarget.ReadyPrefix, nil)
	pid := p.Pid()
	tab, err := symtab.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	want := []struct {
		sym     string
		skip    uint64
		stepped bool
	}{
		{"pl_sub_first", 0, true},
		{"pl_mov_push", 5, false},
		{"pl_test_je", 6, false},
		{"pl_loop_head", 0, true},
	}
	var specs []Spec
	for _, w := range want {
		sp, err := ResolveUser(pid, w.sym, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := tab.Lookup(w.sym)[0]
		base, err := tab.FileOffset(s.Value)
		if err != nil {
			t.Fatal(err)
		}
		if got := sp[0].Offset - base; got != w.skip || (sp[0].Stepped != "") != w.stepped {
			t.Errorf("%s: probe at +%d (stepped %q), want +%d (stepped %v)", w.sym, got, sp[0].Stepped, w.skip, w.stepped)
		}
		specs = append(specs, sp...)
	}
	s, err := Open(Options{PID: pid, Clock: Clock{Kind: ClockNS}}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.Release(t)
	lines, err := p.Wait(t, 60*time.Second, 0, nil)
	if err != nil {
		t.Fatalf("target failed (%v), output %q: the probes broke its returns", err, lines)
	}
	if l := testtarget.LastLine(lines); !strings.HasPrefix(l, "sum=") {
		t.Fatalf("target output %q", l)
	}
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		c := poll.Totals[i]
		if c.Calls != calls || c.Orphans != 0 {
			t.Errorf("%s: %d calls timed, %d orphans; want %d and 0", w.sym, c.Calls, c.Orphans, calls)
		}
	}
}

// TestUretprobeAfterSPMove shows why the entry probe may not move past an
// instruction that moves rsp: with the probes on pl_sub_first's push, after
// its sub $0x18,%rsp, the uretprobe takes a local slot for the return
// address and no return is seen.
func TestUretprobeAfterSPMove(t *testing.T) {
	bpftest.Require(t)
	bin := prologueBinary(t)
	p := testtarget.Start(t, exec.Command(bin, "500"), testtarget.ReadyPrefix, nil)
	pid := p.Pid()
	sp, err := ResolveUser(pid, "pl_sub_first", 1)
	if err != nil {
		t.Fatal(err)
	}
	bad := sp[0]
	bad.Offset += 7 // sub (4 bytes), mov (3 bytes): the push
	s, err := Open(Options{PID: pid, Clock: Clock{Kind: ClockNS}}, []Spec{bad})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.Release(t)
	if _, err := p.Wait(t, 60*time.Second, 0, nil); err != nil {
		t.Fatalf("target failed: %v", err)
	}
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	c := poll.Totals[0]
	t.Logf("probes after sub %%rsp: %d calls timed, %d orphans of 500 calls", c.Calls, c.Orphans)
	if c.Calls != 0 {
		t.Errorf("%d returns seen with the uretprobe after the stack moved: the test's premise is wrong", c.Calls)
	}
}
