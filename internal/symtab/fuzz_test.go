// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/cbuild"
)

// fuzzSeedELF builds the small C executable of the ELF seed corpus (nil
// without gcc): static, without libc and page padding (-N), about 2.5 KB
// with its symbol table and DWARF, so that mutations land in what is
// parsed (a 17 KB executable with libc's startup code stalled the fuzzing
// engine at a few executions a second).
func fuzzSeedELF(f testing.TB) []byte {
	src := []byte("int g(int x){return x*3;}\nint f(int x){return x>2?g(x):f(x+1);}\nvoid _start(void){f(1);for(;;);}\n")
	out, err := cbuild.BuildSource(f.TempDir(), "s", src, []string{"-O1", "-g", "-nostdlib", "-static", "-Wl,-N", "-Wl,--build-id=none",
		"-fno-asynchronous-unwind-tables"}, nil)
	if err != nil {
		return nil
	}
	b, _ := os.ReadFile(out)
	return b
}

// TestFuzzSeedELF writes the seed executable into the corpus when
// TICKPROF_WRITE_FUZZ_SEED=1, and otherwise checks that the corpus holds
// it (a readable ELF file with functions).
func TestFuzzSeedELF(t *testing.T) {
	path := filepath.Join("testdata", "fuzz", "FuzzTable", "seed-static-c")
	if os.Getenv("TICKPROF_WRITE_FUZZ_SEED") == "1" {
		b := fuzzSeedELF(t)
		if b == nil {
			t.Skip("gcc not found")
		}
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var data string
	if _, err := fmt.Sscanf(strings.TrimPrefix(string(b), "go test fuzz v1\n[]byte("), "%q", &data); err != nil {
		t.Fatalf("corpus entry: %v", err)
	}
	ef, err := elf.NewFile(bytes.NewReader([]byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := newTable(path, ef)
	if err != nil || len(tab.Lookup("f")) == 0 {
		t.Fatalf("seed has no function f: %v", err)
	}
}

// FuzzTable reads arbitrary bytes as an ELF file and walks everything a
// Table offers (symbols, lookups, globs, offsets, code, probe sites, Go
// runtime offsets, lines): errors are fine, panics and inconsistent
// answers are not.
func FuzzTable(f *testing.F) {
	// testdata/fuzz/FuzzTable holds a 2.5 KB static C executable with
	// symbols and DWARF (see fuzzSeedELF); TestFuzzSeedELF checks it is
	// one.
	f.Add([]byte("\x7fELF\x02\x01\x01\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if !headerFits(data) {
			return
		}
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range ef.Sections {
			if s.Type != elf.SHT_NOBITS && s.Size > uint64(len(data)) {
				return
			}
		}
		tab, err := newTable("fuzz.elf", ef)
		if err != nil {
			return
		}
		syms := tab.Symbols()
		if len(syms) > 64 {
			syms = syms[:64]
		}
		for _, s := range syms {
			found := false
			for _, l := range tab.Lookup(s.Name) {
				found = found || l.Value == s.Value
			}
			if !found {
				t.Fatalf("Lookup(%q) does not find the symbol at %#x", s.Name, s.Value)
			}
			if name, start, ok := tab.Func(s.Value); ok && start > s.Value {
				t.Fatalf("Func(%#x) = %s starting at %#x, after the address", s.Value, name, start)
			}
			tab.FuncSymbol(s.Value)
			if off, err := tab.FileOffset(s.Value); err == nil {
				tab.VAddr(off)
			}
			if code, err := tab.Code(s); err == nil && s.Size > 0 && uint64(len(code)) > s.Size {
				t.Fatalf("Code(%s) = %d bytes, more than its size %d", s.Name, len(code), s.Size)
			}
			if tab.Machine == elf.EM_X86_64 {
				if ps, err := tab.ProbeSites(s); err == nil {
					checkSites(t, s, ps)
				}
			}
			tab.Line(s.Value)
		}
		tab.Glob("*", 16)
		tab.Glob("[", 16)
		tab.Closest("main", 3)
		tab.GoRuntimeOffsets()
		tab.InlinedInto("main.main")
		tab.Close()
	})
}

// headerFits reports whether the program and section header tables an
// ELF64 header claims fit in data. debug/elf allocates what a header
// claims in 10 MB steps before finding that the file is shorter; inputs
// that only exercise that (the standard library's, not symtab's) cost
// milliseconds each and held the engine at a few executions a second.
func headerFits(data []byte) bool {
	if len(data) < 64 || data[4] != byte(elf.ELFCLASS64) || data[5] != byte(elf.ELFDATA2LSB) {
		return true // debug/elf refuses these at once
	}
	u16 := func(o int) uint64 { return uint64(data[o]) | uint64(data[o+1])<<8 }
	n := uint64(len(data))
	return u16(0x36)*u16(0x38) <= n && u16(0x3a)*u16(0x3c) <= n
}

// FuzzProbeSites disassembles arbitrary bytes as a function's amd64 code
// and checks the probe sites: every return and exit inside the function,
// each exit at a return or one POP RBP (8 bytes of stack) before it.
func FuzzProbeSites(f *testing.F) {
	f.Add([]byte{0xc3}, uint64(0x1000))                                                                                 // ret
	f.Add([]byte{0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3}, uint64(0x401000))                                                 // push rbp; mov rbp,rsp; pop rbp; ret
	f.Add([]byte{0x49, 0x3b, 0x66, 0x10, 0x76, 0x08, 0x55, 0x5d, 0xc3, 0xe8, 0, 0, 0, 0, 0xeb, 0xf0}, uint64(0x45a000)) // Go stack check
	f.Add([]byte{0xe9, 0x00, 0x10, 0x00, 0x00}, uint64(0x2000))                                                         // tail jump
	f.Add([]byte{0xcc, 0xcc}, uint64(0))
	f.Fuzz(func(t *testing.T, code []byte, pc uint64) {
		if len(code) > 1<<16 || pc > 1<<62 {
			return
		}
		tab := &Table{Path: "fuzz", Machine: elf.EM_X86_64, byName: map[string][]int{}}
		s := Symbol{Name: "f", Display: "f", Value: pc, Size: uint64(len(code))}
		ps, err := tab.probeSitesIn(s, code)
		if err != nil {
			return
		}
		checkSites(t, s, ps)
	})
}

func checkSites(t *testing.T, s Symbol, ps ProbeSites) {
	t.Helper()
	end := s.Value + s.Size
	in := func(a uint64) bool { return a >= s.Value && (s.Size == 0 || a < end) }
	if len(ps.Returns) == 0 || len(ps.Exits) != len(ps.Returns) {
		t.Fatalf("%s: %d returns, %d exits", s.Name, len(ps.Returns), len(ps.Exits))
	}
	if !in(ps.Entry) {
		t.Fatalf("%s: entry %#x outside [%#x, %#x)", s.Name, ps.Entry, s.Value, end)
	}
	for i, r := range ps.Returns {
		e := ps.Exits[i]
		if !in(r) || !in(e.Addr) {
			t.Fatalf("%s: return %#x or exit %#x outside the function", s.Name, r, e.Addr)
		}
		switch e.SPAdjust {
		case 0:
			// On the RET, or on a NOP right before it (a 1- to 15-byte
			// instruction the kernel emulates, SP already at the RET's).
			if e.Addr > r || r-e.Addr > 15 {
				t.Fatalf("%s: exit %#x without stack adjustment is neither the return %#x nor just before it", s.Name, e.Addr, r)
			}
		case 8:
			if e.Addr >= r {
				t.Fatalf("%s: exit %#x on POP RBP is not before the return %#x", s.Name, e.Addr, r)
			}
		default:
			t.Fatalf("%s: exit stack adjustment %d", s.Name, e.SPAdjust)
		}
	}
}

// goSeedBinary builds a small Go program (without symbol table and DWARF,
// so its functions come from the Go line table) for FuzzGoTable; nil
// without the go tool.
func goSeedBinary(f *testing.F) []byte {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil
	}
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module gseed\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\n//go:noinline\nfunc work(x int) int { return x * 3 }\n\nfunc main() { println(work(2)) }\n"), 0o644)
	out := filepath.Join(dir, "gseed")
	cmd := exec.Command(goTool, "build", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if err := cmd.Run(); err != nil {
		return nil
	}
	b, _ := os.ReadFile(out)
	return b
}

// FuzzGoTable damages the Go line table (.gopclntab) of a real Go
// executable at an arbitrary offset and reads the result as a Table: Go
// functions, their display names, probe sites, inlining and runtime
// offsets. The input is the patch, not the 1.2 MB executable, so the
// engine mutates what matters.
func FuzzGoTable(f *testing.F) {
	base := goSeedBinary(f)
	if base == nil {
		f.Skip("go tool not found")
	}
	ef, err := elf.NewFile(bytes.NewReader(base))
	if err != nil {
		f.Fatal(err)
	}
	sec := ef.Section(".gopclntab")
	if sec == nil {
		f.Skip("no .gopclntab")
	}
	secOff, secSize := sec.Offset, sec.Size
	if tab, err := newTable("gseed", ef); err != nil || len(tab.Lookup("main.work")) == 0 {
		f.Fatalf("the seed's Go line table gives no main.work: %v", err)
	}
	f.Add(uint32(0), []byte{0xff})
	f.Add(uint32(8), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint32(64), []byte{0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		if len(patch) > 64 {
			return
		}
		data := append([]byte{}, base...)
		at := secOff + uint64(off)%secSize
		copy(data[at:], patch)
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		tab, err := newTable("gseed", ef)
		if err != nil {
			return
		}
		defer tab.Close()
		for _, name := range []string{"main.work", "main.main", "runtime.morestack"} {
			for _, s := range tab.Lookup(name) {
				if ps, err := tab.ProbeSites(s); err == nil {
					checkSites(t, s, ps)
				}
				tab.Line(s.Value)
				tab.FuncSymbol(s.Value)
			}
		}
		tab.InlinedInto("main.work")
		tab.GoRuntimeOffsets()
		tab.Glob("main.*", 8)
	})
}

// FuzzGoDisplayName checks that any symbol name turns into a display name
// without a panic, and that a name without generics is shown as it is.
func FuzzGoDisplayName(f *testing.F) {
	for _, s := range []string{"main.work", "pkg.F[go.shape.int]", "main.(*T).M", "a[b[c]]", "[", "]", "x[", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		d := GoDisplayName(name)
		if !strings.ContainsAny(name, "[]") && d != name {
			t.Fatalf("GoDisplayName(%q) = %q, want it unchanged", name, d)
		}
	})
}
