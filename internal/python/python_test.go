// SPDX-License-Identifier: Apache-2.0

package python

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/testtarget"
)

// pythons are the installed interpreters; the test skips when there are
// none and logs the missing ones.
func pythons(t *testing.T) []testtarget.Python {
	t.Helper()
	found, missing := testtarget.Pythons(t)
	for _, m := range missing {
		t.Logf("not installed, not tested: %s", m)
	}
	if len(found) == 0 {
		t.Skip("no CPython 3.8-3.13 installed")
	}
	return found
}

// TestLayoutsMatchHeaders compiles testdata/python/offsets.inc against each
// installed interpreter's own headers and compares the offsets it prints
// with the version table.
func TestLayoutsMatchHeaders(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not installed")
	}
	src, _ := filepath.Abs("../../testdata/python/offsets.inc")
	for _, py := range pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			if py.Include == "" {
				t.Skipf("%s: no internal headers installed", py.Exe)
			}
			bin := filepath.Join(t.TempDir(), "offsets")
			// A C source named .inc: the kernel matrix builds every
			// testdata .c file, and this one needs an interpreter's
			// headers.
			if out, err := exec.Command(gcc, "-I"+py.Include, "-x", "c", src, "-o", bin).CombinedOutput(); err != nil {
				t.Fatalf("compile offsets.inc: %v\n%s", err, out)
			}
			out, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			got := parseOffsets(t, out)
			l, ok := LayoutFor(3, py.Minor)
			if !ok {
				t.Fatalf("no layout for 3.%d", py.Minor)
			}
			if got["version"] != 3<<8|py.Minor {
				t.Fatalf("headers are of version %#x, want 3.%d", got["version"], py.Minor)
			}
			for name, want := range layoutFields(l) {
				if v, ok := got[name]; !ok || v != want {
					t.Errorf("%s: table says %d, headers %d (present %v)", name, want, v, ok)
				}
			}
		})
	}
}

func parseOffsets(t *testing.T, out []byte) map[string]int {
	t.Helper()
	got := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		got[name] = n
	}
	return got
}

// layoutFields names a layout's fields as offsets.inc prints them.
func layoutFields(l Layout) map[string]int {
	return map[string]int{
		"runtime.interpreters_head": l.RuntimeInterpHead, "interp.threads_head": l.InterpThreadsHead,
		"tstate.next": l.ThreadNext, "tstate.thread_id": l.ThreadID, "tstate.frame": l.ThreadFrame,
		"cframe.current_frame": l.CFrameCurrent, "frame.previous": l.FramePrevious, "frame.code": l.FrameCode,
		"frame.instr": l.FrameInstr, "frame.owner": l.FrameOwner, "owner.cstack": l.OwnerCStack,
		"code.qualname": l.CodeQualname, "code.code_adaptive": l.CodeAdaptive, "code.filename": l.CodeFilename,
		"code.name": l.CodeName, "code.firstlineno": l.CodeFirstLine, "code.linetable": l.CodeLineTable,
		"unicode.length": l.UnicodeLength, "unicode.state": l.UnicodeState, "unicode.ascii_data": l.UnicodeASCIIData,
		"unicode.compact_data": l.UnicodeCompactData, "bytes.size": l.BytesSize, "bytes.data": l.BytesData,
	}
}

// TestLineTables decodes the line tables of code objects each installed
// interpreter compiles (testdata/python/lines.py: long jumps, backward
// lines, lines without code) and compares every instruction's line with
// the one the interpreter computes.
func TestLineTables(t *testing.T) {
	script, _ := filepath.Abs("../../testdata/python/lines.py")
	for _, py := range pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			out, err := exec.Command(py.Exe, script).Output()
			if err != nil {
				t.Fatalf("%s: %v", py.Exe, err)
			}
			n := 0
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var co struct {
					Name  string
					First int
					Table string
					Lines []int
				}
				if err := json.Unmarshal(sc.Bytes(), &co); err != nil {
					t.Fatal(err)
				}
				tab, _ := hex.DecodeString(co.Table)
				for i, want := range co.Lines {
					var got int
					switch {
					case py.Minor <= 9:
						got = lineLnotab(tab, co.First, 2*i)
					case py.Minor == 10:
						got = lineTable310(tab, co.First, 2*i)
					default:
						got = lineLocations(tab, co.First, i)
					}
					if got != want {
						t.Errorf("%s: instruction %d: line %d, want %d", co.Name, i, got, want)
					}
					n++
				}
			}
			if n < 100 {
				t.Fatalf("only %d instructions compared", n)
			}
		})
	}
}

// TestFreeThreadedRefused: a free-threaded build's file names are told
// from the others'.
func TestFreeThreadedRefused(t *testing.T) {
	for name, want := range map[string]bool{
		"python3.13t": true, "libpython3.13t.so.1.0": true, "python3.13": false,
		"libpython3.13.so.1.0": false, "python3.11-dbg": false, "python3.13-config": false,
	} {
		if got := freeThreaded.MatchString(name); got != want {
			t.Errorf("%s: free-threaded %v, want %v", name, got, want)
		}
	}
}

// TestDebugOffsets313 checks a 3.13 interpreter's own _Py_DebugOffsets
// against the table, and that a field moved in the table is caught.
func TestDebugOffsets313(t *testing.T) {
	var lib string
	for _, py := range pythons(t) {
		if py.Minor == 13 {
			lib = filepath.Join(filepath.Dir(filepath.Dir(py.Exe)), "lib", "libpython3.13.so.1.0")
		}
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Skipf("no pyenv libpython3.13: %v", err)
	}
	defer f.Close()
	rt, ok := symbols(f, "_PyRuntime")["_PyRuntime"]
	if !ok {
		t.Fatalf("%s: no _PyRuntime", lib)
	}
	l, _ := LayoutFor(3, 13)
	if err := checkDebugOffsets(f, rt, l); err != nil {
		t.Fatal(err)
	}
	l.ThreadID += 8
	if err := checkDebugOffsets(f, rt, l); err == nil || !errors.Is(err, ErrUnsupported) {
		t.Errorf("a moved thread_id passed: %v", err)
	}
}
