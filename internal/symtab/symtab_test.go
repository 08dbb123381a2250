// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"bufio"
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// buildC compiles testdata/go/symc/symc.c with gcc -O0 -g and the given
// flags.
func buildC(t *testing.T, name string, flags ...string) string {
	t.Helper()
	return testtarget.C(t, "go/symc/symc.c", "symc-"+name, append([]string{"-O0"}, flags...)...)
}

// buildGo builds testdata/go/symtarget with extra go build arguments.
func buildGo(t *testing.T, name string, env []string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	a := append([]string{"build", "-o", out}, args...)
	a = append(a, "../../testdata/go/symtarget")
	cmd := exec.Command(testtarget.GoTool(), a...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", a, err, b)
	}
	return out
}

func open(t *testing.T, path string) *Table {
	t.Helper()
	tab, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tab.Close() })
	return tab
}

func TestC(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		pie   bool
	}{
		{"pie", []string{"-pie", "-fPIE"}, true},
		{"nopie", []string{"-no-pie", "-fno-PIE"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := buildC(t, tc.name, append(tc.flags, "-Wl,--build-id=0x0123456789abcdef")...)
			tab := open(t, bin)
			if tab.PIE() != tc.pie {
				t.Errorf("PIE() = %v, want %v", tab.PIE(), tc.pie)
			}
			if tab.IsGo || tab.GoVersion != "" {
				t.Errorf("C program detected as Go (%q)", tab.GoVersion)
			}
			if tab.BuildID != "0123456789abcdef" {
				t.Errorf("BuildID = %q", tab.BuildID)
			}
			for _, c := range []struct {
				name   string
				line   int
				global bool
			}{{"spin", 10, true}, {"helper", 17, false}, {"main", 22, true}} {
				syms := tab.Lookup(c.name)
				if len(syms) != 1 {
					t.Fatalf("Lookup(%q) = %v, want one symbol", c.name, syms)
				}
				s := syms[0]
				if s.Size == 0 || s.Global != c.global || s.Source != FromSymtab {
					t.Errorf("%s: %+v", c.name, s)
				}
				name, start, ok := tab.Func(s.Value + s.Size - 1)
				if !ok || name != c.name || start != s.Value {
					t.Errorf("Func(%#x) = %q %#x %v, want %s", s.Value+s.Size-1, name, start, ok, c.name)
				}
				file, line, ok := tab.Line(s.Value)
				if !ok || filepath.Base(file) != "symc.c" || line != c.line {
					t.Errorf("Line(%s) = %s:%d %v, want symc.c:%d", c.name, file, line, ok, c.line)
				}
				checkCode(t, bin, tab, s)
			}
			if _, _, ok := tab.Func(0); ok {
				t.Error("Func(0) found a function")
			}
			if got := tab.Closest("spni", 5); len(got) == 0 || got[0] != "spin" {
				t.Errorf("Closest(spni) = %v", got)
			}
			if got := tab.Closest("spi", 5); len(got) == 0 || got[0] != "spin" {
				t.Errorf("Closest(spi) = %v", got)
			}
			got, err := tab.Glob("sp*", 10)
			if err != nil || len(got) != 1 || got[0].Name != "spin" {
				t.Errorf("Glob(sp*) = %v, %v", got, err)
			}
			if _, err := tab.Glob("*", 2); err == nil || !strings.Contains(err.Error(), "more than the limit of 2") {
				t.Errorf("Glob(*, 2) error = %v", err)
			}
			if _, err := tab.Glob("[", 2); err == nil {
				t.Error("Glob([) accepted a bad pattern")
			}
		})
	}
}

// checkCode compares Code with the bytes at FileOffset in the file.
func checkCode(t *testing.T, bin string, tab *Table, s Symbol) {
	t.Helper()
	off, err := tab.FileOffset(s.Value)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := tab.VAddr(off); !ok || v != s.Value {
		t.Errorf("VAddr(FileOffset(%#x)) = %#x %v", s.Value, v, ok)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	code, err := tab.Code(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(code, data[off:off+s.Size]) {
		t.Errorf("%s: Code differs from the file at offset %#x", s.Name, off)
	}
}

func TestLibc(t *testing.T) {
	var lib string
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/aarch64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			lib = p
			break
		}
	}
	if lib == "" {
		t.Skip("no libc.so.6 found")
	}
	tab := open(t, lib)
	if !tab.PIE() || tab.IsGo {
		t.Errorf("libc: PIE %v IsGo %v", tab.PIE(), tab.IsGo)
	}
	for _, name := range []string{"malloc", "getpid", "write"} {
		syms := tab.Lookup(name)
		if len(syms) == 0 {
			t.Fatalf("libc has no %s", name)
		}
		s := syms[0]
		if s.Size == 0 || !s.Global {
			t.Errorf("%s: %+v", name, s)
		}
		if _, start, ok := tab.Func(s.Value + s.Size/2); !ok || start != s.Value {
			t.Errorf("Func(%s+%d): start %#x ok %v, want %#x", name, s.Size/2, start, ok, s.Value)
		}
		checkCode(t, lib, tab, s)
	}
	if got := tab.Closest("mallco", 5); len(got) == 0 || got[0] != "malloc" {
		t.Errorf("Closest(mallco) = %v", got)
	}
}

// goFunc is one line of symtarget's output.
type goFunc struct {
	name  string
	entry uint64
	line  int
}

func runTarget(t *testing.T, bin string) []goFunc {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	var fs []goFunc
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("bad line %q", sc.Text())
		}
		entry, err1 := strconv.ParseUint(f[1], 0, 64)
		line, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		fs = append(fs, goFunc{f[0], entry, line})
	}
	if len(fs) != 5 {
		t.Fatalf("symtarget printed %d functions, want 5:\n%s", len(fs), out)
	}
	return fs
}

func TestGo(t *testing.T) {
	cases := []struct {
		name   string
		env    []string
		args   []string
		source Source
		pie    bool
	}{
		{"normal", []string{"CGO_ENABLED=0"}, nil, FromSymtab, false},
		{"stripped", []string{"CGO_ENABLED=0"}, []string{"-ldflags=-s -w"}, FromGoPclntab, false},
		{"stripped-pie", []string{"CGO_ENABLED=0"}, []string{"-buildmode=pie", "-ldflags=-s -w"}, FromGoPclntab, true},
	}
	if _, err := cbuild.Find(); err == nil {
		// External linking puts C start-up code before runtime.text, and
		// leaves the pclntab header's text start zero.
		cases = append(cases,
			struct {
				name   string
				env    []string
				args   []string
				source Source
				pie    bool
			}{"external-stripped", []string{"CGO_ENABLED=1"}, []string{"-ldflags=-s -w -linkmode=external"}, FromGoPclntab, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin := buildGo(t, tc.name, tc.env, tc.args...)
			tab := open(t, bin)
			if !tab.IsGo || tab.GoVersion != runtime.Version() {
				t.Errorf("IsGo %v GoVersion %q, want %q", tab.IsGo, tab.GoVersion, runtime.Version())
			}
			if tab.GoBuildID == "" {
				t.Error("no Go build ID")
			}
			if tab.PIE() != tc.pie {
				t.Errorf("PIE() = %v, want %v", tab.PIE(), tc.pie)
			}
			funcs := runTarget(t, bin)
			bias := uint64(0)
			if tc.pie {
				// The runtime reports loaded addresses: find the bias from
				// main.plain, which has one symbol.
				s := tab.Lookup("main.plain")
				if len(s) != 1 {
					t.Fatalf("Lookup(main.plain) = %v", s)
				}
				bias = funcs[0].entry - s[0].Value
			}
			for _, f := range funcs {
				entry := f.entry - bias
				found := false
				for _, s := range tab.Lookup(f.name) {
					if s.Value == entry {
						found = true
						if s.Source != tc.source || s.Size == 0 {
							t.Errorf("%s: %+v, want source %v", f.name, s, tc.source)
						}
					}
				}
				if !found {
					t.Errorf("Lookup(%q) = %v, none at %#x", f.name, tab.Lookup(f.name), entry)
				}
				name, start, ok := tab.Func(entry + 3)
				if !ok || name != f.name || start != entry {
					t.Errorf("Func(%#x) = %q %#x %v, want %q %#x", entry+3, name, start, ok, f.name, entry)
				}
				file, line, ok := tab.Line(entry)
				if !ok || filepath.Base(file) != "main.go" || line != f.line {
					t.Errorf("Line(%s) = %s:%d %v, want main.go:%d", f.name, file, line, ok, f.line)
				}
			}
			if got := tab.Lookup("main.F[...]"); len(got) != 2 {
				t.Errorf("Lookup(main.F[...]) = %v, want 2 instantiations", got)
			}
			if got := tab.Lookup("main.(*T).Method"); len(got) != 1 {
				t.Errorf("Lookup(main.(*T).Method) = %v", got)
			}
			got, err := tab.Glob("main.*", 100)
			if err != nil || len(got) < 5 {
				t.Errorf("Glob(main.*) = %v, %v", got, err)
			}
			if got, err := tab.Glob("internal/*.*", 100000); err != nil || len(got) == 0 {
				t.Errorf("Glob(internal/*.*) = %d symbols, %v; '*' must match '/'", len(got), err)
			}
			// A Go name is its own pattern, '*' and brackets included.
			for name, n := range map[string]int{"main.(*T).Method": 1, "main.F[...]": 2, "main.(*List[...]).Push": 1} {
				if got, err := tab.Glob(name, 10); err != nil || len(got) != n {
					t.Errorf("Glob(%q) = %v, %v, want %d", name, got, err, n)
				}
			}
			if got := tab.Closest("main.(*T).Methd", 5); len(got) == 0 || got[0] != "main.(*T).Method" {
				t.Errorf("Closest(main.(*T).Methd) = %v", got)
			}
		})
	}
}

func TestGoDisplayName(t *testing.T) {
	for in, want := range map[string]string{
		"main.F[go.shape.int]":                         "main.F[...]",
		"main.(*List[go.shape.string]).Push":           "main.(*List[...]).Push",
		"pkg.G[go.shape.struct { a [2]int }].func1":    "pkg.G[...].func1",
		"net/http.(*conn).serve":                       "net/http.(*conn).serve",
		"main.M[go.shape.int,go.shape.map[string]int]": "main.M[...]",
	} {
		if got := GoDisplayName(in); got != want {
			t.Errorf("GoDisplayName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Open of a missing file succeeded")
	}
	p := filepath.Join(t.TempDir(), "notelf")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Open of a non-ELF file: %v", err)
	}
}

// TestLargeGoBinary symbolizes every function of the go command (tens of
// thousands) and reports the time; the bound is loose on purpose (a shared
// 2-core machine), the number is what matters.
func TestLargeGoBinary(t *testing.T) {
	bin := testtarget.GoTool()
	if _, err := os.Stat(bin); err != nil {
		t.Skip("no go binary")
	}
	start := time.Now()
	tab := open(t, bin)
	opened := time.Since(start)
	n := 0
	for _, s := range tab.Symbols() {
		if name, _, ok := tab.Func(s.Value + s.Size/2); ok && name != "" {
			if _, _, ok := tab.Line(s.Value + s.Size/2); ok {
				n++
			}
		}
	}
	total := time.Since(start)
	t.Logf("%s: open %v, %d of %d functions symbolized with lines, total %v", bin, opened, n, len(tab.Symbols()), total)
	if n < len(tab.Symbols())*9/10 {
		t.Errorf("only %d of %d functions have a line", n, len(tab.Symbols()))
	}
	if total > 10*time.Second {
		t.Errorf("symbolizing took %v", total)
	}
	_ = elf.ET_DYN
}
