// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// buildGoTarget builds testdata/go/timed with extra go build arguments.
func buildGoTarget(t *testing.T, args ...string) string {
	t.Helper()
	return testtarget.Go(t, "timed", "CGO_ENABLED=0", args...)
}

// goRun is a run of the Go target: its output lines by first word.
type goRun struct {
	lines map[string]string
	p     Poll
	stats GoStats
	s     *Session
	dur   time.Duration
}

// runGoTarget starts bin, attaches the given targets, releases it and
// waits for it to finish.
func runGoTarget(t *testing.T, bin string, opts Options, syms []string, args ...string) goRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	proc := testtarget.Start(t, cmd, func(l string) bool { return l == "ready" }, nil)
	pid := cmd.Process.Pid
	var specs []Spec
	for _, s := range syms {
		sp, err := ResolveUser(pid, s, 16)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range sp {
			if x.Kind != KindGoUser {
				t.Fatalf("%s resolved to kind %v, want %v", s, x.Kind, KindGoUser)
			}
		}
		specs = append(specs, sp...)
	}
	s := openFor(t, opts, pid, specs)
	start := time.Now()
	proc.Release(t)
	r := goRun{lines: map[string]string{}, s: s}
	// Poll into batches while the target runs, as `tickprof time` does.
	lines, err := proc.Wait(t, 120*time.Second, 200*time.Millisecond, func() {
		if _, err := s.Poll(); err != nil {
			t.Fatal(err)
		}
	})
	r.dur = time.Since(start)
	if err != nil {
		t.Fatalf("target failed under the probes: %v", err)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			r.lines[f[0]] = l
		}
	}
	s.Stop()
	if r.p, err = s.Poll(); err != nil {
		t.Fatal(err)
	}
	if r.stats, err = s.GoStats(); err != nil {
		t.Fatal(err)
	}
	return r
}

// index returns the position of the target whose symbol is sym.
func (r goRun) index(t *testing.T, sym string) int {
	t.Helper()
	for i, tg := range r.s.Targets() {
		if tg.Spec.Symbol == sym {
			return i
		}
	}
	t.Fatalf("no target for %s", sym)
	return -1
}

// TestGoTiming times every kind of Go function of testdata/go/timed at
// once, in a normal and a stripped build: exact counts under goroutine
// migration and stack growth, the tick interval covering the exact mean,
// the exact mean agreeing with the target's own, panics as orphans.
func TestGoTiming(t *testing.T) {
	bpftest.Require(t)
	type variant struct {
		name  string
		cgo   string
		args  []string
		calls int
		dur   time.Duration // at least this long
	}
	variants := []variant{
		{"normal", "CGO_ENABLED=0", nil, 4000, 4 * time.Second},
		{"stripped", "CGO_ENABLED=0", []string{"-ldflags=-s -w"}, 1000, 0},
	}
	if _, err := cbuild.Find(); err == nil {
		// C start-up code before runtime.text; the pclntab's text start is 0.
		variants = append(variants, variant{"external-stripped", "CGO_ENABLED=1", []string{"-ldflags=-s -w -linkmode=external"}, 1000, 0})
	} else {
		t.Log("gcc not found: no externally linked variant")
	}
	for _, tc := range variants {
		t.Run(tc.name, func(t *testing.T) {
			bin := testtarget.Go(t, "timed", tc.cgo, tc.args...)
			r := runGoTarget(t, bin, Options{Clock: Clock{Kind: ClockTick, Tick: 50 * time.Microsecond}, Exact: true},
				[]string{"main.Work", "main.(*Counter).Add", "main.Max[...]", "main.classify", "main.risky", "main.safe", "main.leave", "main.half", "main.huge"},
				"-calls", fmt.Sprint(tc.calls), "-for", tc.dur.String(), "-goroutines", "64")
			var calls uint64
			if _, err := fmt.Sscanf(r.lines["Work"], "Work calls=%d", &calls); err != nil || calls < uint64(tc.calls) {
				t.Fatalf("target printed %q: %v", r.lines["Work"], err)
			}
			t.Logf("target ran %v; Go stats: morestack refires %d, expired %d, no goroutine %d",
				r.dur, r.stats.Morestack, r.stats.Expired, r.stats.NoGoroutine)
			for _, s := range r.stats.Sites {
				t.Logf("%s: entry %#x (%s, check %v), exits %+v, goid at %d (%s)", s.Target, s.Sites.Entry,
					s.Sites.EntryInsn, s.Sites.EntryCheck, s.Sites.Exits, s.Offsets.Goid, s.Offsets.Source)
			}
			want := map[string]string{
				"Add":      "Add calls=1000 sum=499500",
				"Max":      "Max calls_int=500 calls_float64=300 max=499 299",
				"classify": "classify calls=1000 kinds=4",
				"safe":     "safe calls=500 panics=100",
				"leave":    "leave calls=10",
				"half":     "half calls=20 inlined=10",
				"huge":     "huge calls=100",
			}
			for k, w := range want {
				if !strings.HasPrefix(r.lines[k], w) {
					t.Errorf("target printed %q, want %q...", r.lines[k], w)
				}
			}
			if r.stats.NoGoroutine != 0 {
				t.Errorf("%d firings could not read the goroutine", r.stats.NoGoroutine)
			}
			for _, c := range []struct {
				sym            string
				calls, orphans uint64
			}{
				{"main.Work", calls, 0},
				{"main.(*Counter).Add", 1000, 0},
				{"main.Max[go.shape.int]", 500, 0},
				{"main.Max[go.shape.float64]", 300, 0},
				{"main.classify", 1000, 0},
				{"main.safe", 500, 0},
				// 100 calls panic and never reach their RET: 99 stale entries
				// are expired by the next call at the same depth; the last
				// call panics too and stays in flight.
				{"main.risky", 400, 99},
				// runtime.Goexit: no RET, and the goroutine never comes back.
				{"main.leave", 0, 0},
				// Inlined into main.main for half of its calls: only the
				// out-of-line ones reach the probes.
				{"main.half", 10, 0},
				// A frame above 4 KB: a two-jump stack check.
				{"main.huge", 100, 0},
			} {
				got := r.p.Totals[r.index(t, c.sym)]
				if got.Calls != c.calls || got.Orphans != c.orphans {
					t.Errorf("%s: calls %d orphans %d, want %d and %d", c.sym, got.Calls, got.Orphans, c.calls, c.orphans)
				}
			}
			if r.stats.Expired != 99 {
				t.Errorf("expired entries %d, want 99 (the panics of main.risky)", r.stats.Expired)
			}
			inflight, err := r.s.InFlight()
			if err != nil {
				t.Fatal(err)
			}
			if n := inflight[r.index(t, "main.risky")]; n != 1 {
				t.Errorf("main.risky: %d entries in flight at the end, want 1 (the last panic)", n)
			}
			if n := inflight[r.index(t, "main.leave")]; n != 10 {
				t.Errorf("main.leave: %d entries in flight at the end, want 10 (the Goexits)", n)
			}
			// Completed calls leave no entry state behind (one key per
			// goroutine and depth would otherwise fill the LRU map).
			var k bpf.TimingTpKey
			var v bpf.TimingTpEntry
			elems := 0
			for it := r.s.objs.TpEntries.Iterate(); it.Next(&k, &v); {
				elems++
			}
			if elems != 11 {
				t.Errorf("%d entry-state elements left, want 11 (1 panic + 10 Goexits in flight)", elems)
			}
			// Work's stack check fails on some of its calls (see nest in
			// the target): the probe on its JBE fires twice, counts once.
			if r.stats.Morestack == 0 {
				t.Error("no entry firing was skipped around morestack: the double-firing path was not exercised")
			}
			for _, s := range r.stats.Sites {
				if s.Target == "main.classify" && len(s.Sites.Returns) < 3 {
					t.Errorf("main.classify: %d RET sites, want several", len(s.Sites.Returns))
				}
				if s.Target == "main.half" && tc.name == "normal" && fmt.Sprint(s.InlinedInto) != "[main.main]" {
					t.Errorf("main.half: inlined into %v, want [main.main]", s.InlinedInto)
				}
				if s.Target == "main.Work" && !s.Sites.EntryCheck {
					t.Errorf("main.Work: entry probe not on the stack check's JBE: %+v", s.Sites)
				}
			}

			// Crossing records carry the caller's stack: with the exit probe
			// on POP RBP, the immediate caller is in it (the frame of
			// main.nest that called main.Work, not only the recursive ones
			// above it).
			callRet := returnAddressOfCall(t, bin, "main.nest", "main.Work")
			withCaller, stacks := 0, 0
			for _, cl := range r.s.Callers() {
				if cl.Target != r.index(t, "main.Work") || len(cl.Stack) == 0 {
					continue
				}
				stacks++
				if len(cl.Stack) >= 2 && cl.Stack[0].Function() == "main.Work" && cl.Stack[1].Addr == callRet {
					withCaller++
				} else if stacks-withCaller <= 2 {
					t.Logf("stack without main.nest's call of main.Work (%#x) second: %+v", callRet, cl.Stack[:min(len(cl.Stack), 3)])
				}
			}
			if stacks == 0 || withCaller < stacks*9/10 {
				t.Errorf("main.Work: %d of %d caller stacks start main.Work, main.nest+%#x", withCaller, stacks, callRet)
			}

			// Work: the tick-clock interval covers the exact mean, which
			// agrees with the target's own time.Since mean.
			i := r.index(t, "main.Work")
			c := r.p.Totals[i]
			var own float64
			fmt.Sscanf(r.lines["Work"][strings.Index(r.lines["Work"], "mean_ns="):], "mean_ns=%g", &own)
			exact := float64(c.NsSum) / float64(c.Calls)
			var batches []estimate.Batch
			for _, b := range r.s.Batches(i) {
				batches = append(batches, estimate.Batch{Calls: b.Calls, Ticks: b.Ticks})
			}
			if c.TicksSq.Hi != 0 {
				t.Fatalf("sum of squared ticks above 2^64: %v", c.TicksSq)
			}
			res, err := estimate.Time(estimate.Counts{
				Resolution: r.s.Clock().Resolution(), Calls: c.Calls, Ticks: c.Ticks,
				TicksSq: c.TicksSq.Lo, HasTicksSq: true, Batches: batches,
			}, estimate.Options{Confidence: 0.999})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("main.Work: tick:50us mean %.0f ns [%.0f, %.0f] at 99.9%% (%s); exact %.0f ns; target's own %.0f ns",
				res.Mean, res.Low, res.High, res.Method, exact, own)
			if exact < res.Low || exact > res.High {
				t.Errorf("tick interval [%.0f, %.0f] does not cover the exact mean %.0f", res.Low, res.High, exact)
			}
			// The target's own measurement brackets the probes' window: it
			// adds nest, the traps and any wait for a CPU before the entry
			// probe (64 goroutines on 2 CPUs), so it may be longer, by a few
			// per cent here, and never shorter beyond clock noise.
			if exact > own+20e3 || exact < 0.9*own {
				t.Errorf("exact mean %.0f ns vs the target's own %.0f ns: outside [0.9 own, own+20us]", exact, own)
			}
		})
	}
}

// returnAddressOfCall returns the address after caller's CALL of callee.
func returnAddressOfCall(t *testing.T, bin, caller, callee string) uint64 {
	t.Helper()
	tab, err := symtab.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	from, to := tab.Lookup(caller), tab.Lookup(callee)
	if len(from) != 1 || len(to) != 1 {
		t.Fatalf("%s / %s not found", caller, callee)
	}
	code, err := tab.Code(from[0])
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(code); {
		in, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			break
		}
		pc := from[0].Value + uint64(off)
		if rel, ok := in.Args[0].(x86asm.Rel); ok && in.Op == x86asm.CALL && uint64(int64(pc)+int64(in.Len)+int64(rel)) == to[0].Value {
			return pc + uint64(in.Len)
		}
		off += in.Len
	}
	t.Fatalf("%s does not call %s", caller, callee)
	return 0
}

// TestGoNoReturn: a function that only panics cannot be timed, and says so.
func TestGoNoReturn(t *testing.T) {
	bpftest.Require(t)
	bin := buildGoTarget(t)
	specs, err := ResolveUser(0, bin+":main.mustFail", 16)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(Options{Clock: Clock{Kind: ClockNS}}, specs)
	if err == nil || !strings.Contains(err.Error(), "no return instruction") {
		t.Fatalf("Open(main.mustFail) = %v, want a no-return error", err)
	}
	t.Log(err)
}

// TestGoNotFoundHint names where an inlined function went.
func TestGoNotFoundHint(t *testing.T) {
	bin := buildGoTarget(t)
	_, err := ResolveUser(0, bin+":main.tiny", 16)
	var se *SymbolError
	if !errors.As(err, &se) || !errors.Is(err, ErrSymbolNotFound) {
		t.Fatalf("ResolveUser(main.tiny) = %v, want a SymbolError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "inlined into main.main") || strings.Contains(msg, "\n") {
		t.Errorf("the not-found error should be one line naming where main.tiny was inlined: %s", msg)
	}
	h := GoNotFoundHint(bin, "main.tiny")
	if !strings.Contains(h, "inlined into main.main") {
		t.Errorf("hint %q does not name main.main", h)
	}
	if GoNotFoundHint(bin, "main.Work") != "" {
		t.Error("hint for a function that was not inlined")
	}
}

// TestLoadSharedSizesMaps: the Go programs load into a session whose
// shared maps differ from their specs' sizes (three targets, a 64 KiB ring)
// without the attacher sizing them: LoadShared does.
func TestLoadSharedSizesMaps(t *testing.T) {
	bpftest.Require(t)
	bin := buildGoTarget(t)
	var specs []Spec
	for _, sym := range []string{"main.Work", "main.classify", "main.safe"} {
		sp, err := ResolveUser(0, bin+":"+sym, 16)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, sp...)
	}
	s, err := Open(Options{Clock: Clock{Kind: ClockNS}, RingSize: 1 << 16}, specs)
	if err != nil {
		t.Fatalf("Open with 3 Go targets and a 64 KiB ring: %v", err)
	}
	defer s.Close()
	if n := s.objs.TpCounters.MaxEntries(); n != 3 {
		t.Errorf("tp_counters has %d elements, want 3", n)
	}
	if n := s.objs.TpRecords.MaxEntries(); n != 1<<16 {
		t.Errorf("tp_records is %d bytes, want 65536", n)
	}
	g, err := s.GoStats()
	if err != nil || len(g.Sites) != 3 {
		t.Errorf("Go sites %d (%v), want 3", len(g.Sites), err)
	}
}
