// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tickprof/tickprof/internal/testtarget"
	"golang.org/x/arch/x86/x86asm"
)

var (
	timedMu    sync.Mutex
	timedBuilt = map[string]string{}
)

// buildTimed builds testdata/go/timed (the Go timing target), once per
// set of arguments in this test binary.
func buildTimed(t *testing.T, cgo string, args ...string) string {
	t.Helper()
	timedMu.Lock()
	defer timedMu.Unlock()
	key := cgo + " " + strings.Join(args, " ")
	if p, ok := timedBuilt[key]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "symtab-test")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "timed")
	a := append([]string{"build", "-o", out}, args...)
	cmd := exec.Command(testtarget.GoTool(), append(a, "../../testdata/go/timed")...)
	cmd.Env = append(os.Environ(), cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", a, err, b)
	}
	timedBuilt[key] = out
	return out
}

func TestMain(m *testing.M) {
	testtarget.Main(m, func() {
		for _, p := range timedBuilt {
			os.RemoveAll(filepath.Dir(p))
		}
	})
}

func one(t *testing.T, tab *Table, name string) Symbol {
	t.Helper()
	s := tab.Lookup(name)
	if len(s) != 1 {
		t.Fatalf("Lookup(%q) = %v, want one", name, s)
	}
	return s[0]
}

// decodeAt disassembles the instruction at addr.
func decodeAt(t *testing.T, tab *Table, s Symbol, addr uint64) x86asm.Inst {
	t.Helper()
	code, err := tab.Code(s)
	if err != nil {
		t.Fatal(err)
	}
	in, err := x86asm.Decode(code[addr-s.Value:], 64)
	if err != nil {
		t.Fatalf("decode %s at %#x: %v", s.Display, addr, err)
	}
	return in
}

func TestProbeSites(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("RET finding is implemented for amd64")
	}
	for _, tc := range []struct{ name, cgo, args string }{
		{"normal", "CGO_ENABLED=0", ""},
		{"stripped", "CGO_ENABLED=0", "-ldflags=-s -w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			if tc.args != "" {
				args = []string{tc.args}
			}
			tab := open(t, buildTimed(t, tc.cgo, args...))
			for _, c := range []struct {
				name  string
				check bool // entry on the stack check's JBE
				rets  int  // at least
			}{
				{"main.Work", true, 1},
				{"main.grow", true, 2},
				{"main.classify", false, 3},
				{"main.safe", true, 2},
				{"main.(*Counter).Add", false, 1},
				{"main.huge", false, 1},
			} {
				s := one(t, tab, c.name)
				ps, err := tab.ProbeSites(s)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if ps.EntryCheck != c.check || len(ps.Returns) < c.rets {
					t.Errorf("%s: %+v, want check %v and >= %d returns", c.name, ps, c.check, c.rets)
				}
				for _, r := range ps.Returns {
					if in := decodeAt(t, tab, s, r); in.Op != x86asm.RET {
						t.Errorf("%s: return site %#x holds %v", c.name, r, in)
					}
				}
				if len(ps.Exits) != len(ps.Returns) {
					t.Fatalf("%s: %d exits for %d returns", c.name, len(ps.Exits), len(ps.Returns))
				}
				for i, e := range ps.Exits {
					in := decodeAt(t, tab, s, e.Addr)
					switch {
					case e.SPAdjust == 0 && e.Addr == ps.Returns[i]:
					case e.SPAdjust == 8 && in.Op == x86asm.POP && in.Args[0] == x86asm.RBP && e.Addr < ps.Returns[i] && ps.Returns[i]-e.Addr <= 16:
					case e.SPAdjust == 0 && in.Op == x86asm.NOP && in.Len == 1 && e.Addr+1 == ps.Returns[i]:
						// POP RBP; NOP; RET: the NOP, which the kernel
						// emulates.
						continue
					default:
						t.Errorf("%s: exit %+v (%v) for the RET at %#x", c.name, e, in, ps.Returns[i])
					}
					// Functions with a frame pop RBP before every RET.
					if c.check && e.SPAdjust != 8 {
						t.Errorf("%s: exit %+v not on the POP RBP", c.name, e)
					}
				}
				in := decodeAt(t, tab, s, ps.Entry)
				if c.check {
					// [LEA R12, -frame(SP);] CMP SP|R12, 0x10(R14); JBE: the
					// probe is on the JBE, after a CMP.
					first := decodeAt(t, tab, s, s.Value)
					if in.Op != x86asm.JBE || ps.Entry <= s.Value || ps.Entry > s.Value+16 ||
						(first.Op != x86asm.CMP && first.Op != x86asm.LEA) {
						t.Errorf("%s: entry %#x is %v, first instruction %v", c.name, ps.Entry, in, first)
					}
				} else if c.name == "main.huge" {
					// Two jumps to morestack: the PUSH after them, which
					// runs once per call.
					if in.Op != x86asm.PUSH || ps.Entry <= s.Value {
						t.Errorf("%s: entry %#x is %v, want the PUSH after the stack check", c.name, ps.Entry, in)
					}
				} else if c.name == "main.classify" {
					// A leaf without stack check: the first branch, which
					// the kernel emulates, not the MOV it starts with.
					if !isJcc(in.Op) || ps.Entry <= s.Value {
						t.Errorf("%s: entry %#x is %v, want its first conditional jump", c.name, ps.Entry, in)
					}
				} else if ps.Entry != s.Value {
					// ADD; RET: no branch to use, the first instruction it is.
					t.Errorf("%s: entry %#x is not the start %#x", c.name, ps.Entry, s.Value)
				}
			}
			_, err := tab.ProbeSites(one(t, tab, "main.mustFail"))
			if err == nil || !strings.Contains(err.Error(), "no return instruction") {
				t.Errorf("ProbeSites(main.mustFail) = %v, want ErrNoReturn", err)
			}
			// Generic instantiations are probed one by one.
			for _, s := range tab.Lookup("main.Max[...]") {
				if ps, err := tab.ProbeSites(s); err != nil || len(ps.Returns) == 0 {
					t.Errorf("%s: %+v %v", s.Name, ps, err)
				}
			}
		})
	}
}

func TestGoRuntimeOffsets(t *testing.T) {
	normal := open(t, buildTimed(t, "CGO_ENABLED=0"))
	stripped := open(t, buildTimed(t, "CGO_ENABLED=0", "-ldflags=-s -w"))
	dw, err := normal.GoRuntimeOffsets()
	if err != nil || dw.Source != "DWARF" {
		t.Fatalf("offsets from DWARF: %+v %v", dw, err)
	}
	tb, err := stripped.GoRuntimeOffsets()
	if err != nil {
		t.Fatal(err)
	}
	// The version table must agree with this toolchain's DWARF.
	if tb.Goid != dw.Goid || tb.StackHi != dw.StackHi || tb.StackHi != 8 {
		t.Errorf("table for %s gives %+v, DWARF %+v: update goidByVersion", runtime.Version(), tb, dw)
	}
	if !strings.Contains(tb.Source, runtime.Version()) {
		t.Errorf("stripped binary offsets source %q", tb.Source)
	}
	// Versions around the layout changes.
	for v, want := range map[string]uint64{"go1.17": 152, "go1.22.12": 152, "go1.23.0": 160, "go1.24.13": 160, "go1.25.0": 152, "go1.26.8": 152} {
		tab := &Table{Path: "x", IsGo: true, GoVersion: v}
		got, err := tab.GoRuntimeOffsets()
		if err != nil || got.Goid != want {
			t.Errorf("%s: %+v %v, want goid at %d", v, got, err, want)
		}
	}
	old := &Table{Path: "x", IsGo: true, GoVersion: "go1.16.15"}
	if _, err := old.GoRuntimeOffsets(); err == nil || !strings.Contains(err.Error(), "1.17") {
		t.Errorf("go1.16: %v, want a register-ABI error", err)
	}
	notGo := &Table{Path: "x"}
	if _, err := notGo.GoRuntimeOffsets(); err == nil {
		t.Error("offsets for a non-Go file")
	}
}

func TestInlinedInto(t *testing.T) {
	tab := open(t, buildTimed(t, "CGO_ENABLED=0"))
	if s := tab.Lookup("main.tiny"); len(s) != 0 {
		t.Fatalf("main.tiny was not inlined: %v", s)
	}
	into, err := tab.InlinedInto("main.tiny")
	if err != nil || fmt.Sprint(into) != "[main.main]" {
		t.Errorf("InlinedInto(main.tiny) = %v, %v, want [main.main]", into, err)
	}
	if into, err := tab.InlinedInto("main.Work"); err != nil || len(into) != 0 {
		t.Errorf("InlinedInto(main.Work) = %v, %v, want none", into, err)
	}
	stripped := open(t, buildTimed(t, "CGO_ENABLED=0", "-ldflags=-s -w"))
	if _, err := stripped.InlinedInto("main.tiny"); err == nil {
		t.Error("InlinedInto without DWARF gave no error")
	}
}

func TestProbeSitesOtherArch(t *testing.T) {
	tab := &Table{Path: "x", Machine: elf.EM_AARCH64}
	if _, err := tab.ProbeSites(Symbol{Name: "f", Size: 4}); err == nil || !strings.Contains(err.Error(), "amd64 only") {
		t.Errorf("arm64: %v", err)
	}
}
