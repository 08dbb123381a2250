// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tickprof/tickprof/internal/usdt"
)

// CPython 3.12 and later without working function probes (3.12 to 3.14
// have no function__entry) are timed in their eval loop instead: a uprobe
// on _PyEval_EvalFrameDefault's entry reads the frame's code object
// (second argument: the _PyInterpreterFrame; its first field the code
// object, f_code in 3.12, f_executable in 3.13) and compares the code's
// co_name (and co_filename) with the target's, a uretprobe closes the call.
// Calls between Python functions enter _PyEval_EvalFrameDefault afresh
// only when the interpreter has a frame-evaluation hook: its perf
// trampolines (-X perf, PYTHONPERFSUPPORT=1) are one; without them CPython
// runs such calls inside its caller's C frame, where no probe sees them,
// so the route is taken only when the process runs with them on. The
// layouts are read from the interpreter's DWARF.

// PyEvalLayout is where the eval-loop route reads a frame's code object
// and the code's names (byte offsets).
type PyEvalLayout struct {
	// FrameCode is the code object's offset in _PyInterpreterFrame.
	FrameCode uint64
	// CodeName, CodeFile are co_name's and co_filename's in PyCodeObject.
	CodeName, CodeFile uint64
	// StrState is the offset of PyASCIIObject's state bit field, StrData
	// that of a compact ASCII string's characters (sizeof PyASCIIObject).
	StrState, StrData uint64
}

// pyEvalLayout reads the layout from the DWARF of the interpreter at path.
func pyEvalLayout(path string) (PyEvalLayout, error) {
	f, err := elf.Open(path)
	if err != nil {
		return PyEvalLayout{}, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return PyEvalLayout{}, fmt.Errorf("no DWARF to read CPython's frame layout from: %w", err)
	}
	want := structsNamed(d, "_PyInterpreterFrame", "PyCodeObject", "PyASCIIObject")
	var l PyEvalLayout
	field := func(st *dwarf.StructType, names ...string) (uint64, bool) {
		if st == nil {
			return 0, false
		}
		for _, fl := range st.Field {
			for _, n := range names {
				if fl.Name == n {
					return uint64(fl.ByteOffset), true
				}
			}
		}
		return 0, false
	}
	var ok [4]bool
	l.FrameCode, ok[0] = field(want["_PyInterpreterFrame"], "f_executable", "f_code")
	l.CodeName, ok[1] = field(want["PyCodeObject"], "co_name")
	l.CodeFile, ok[2] = field(want["PyCodeObject"], "co_filename")
	l.StrState, ok[3] = field(want["PyASCIIObject"], "state")
	if s := want["PyASCIIObject"]; s != nil {
		l.StrData = uint64(s.ByteSize)
	}
	if !ok[0] || !ok[1] || !ok[2] || !ok[3] || l.StrData == 0 {
		return l, errors.New("CPython's frame, code or string layout not found in its DWARF")
	}
	return l, nil
}

// structsNamed finds the struct types of the typedefs named in d's DWARF
// (nil for a name not found).
func structsNamed(d *dwarf.Data, names ...string) map[string]*dwarf.StructType {
	want := map[string]*dwarf.StructType{}
	for _, n := range names {
		want[n] = nil
	}
	r := d.Reader()
	for n := len(want); n > 0; {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagTypedef {
			if e.Children && e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if s, ok := want[name]; !ok || s != nil {
			continue
		}
		t, err := d.Type(e.Offset)
		if err != nil {
			continue
		}
		if st, ok := resolveStruct(t); ok {
			want[name] = st
			n--
		}
	}
	return want
}

// resolveStruct follows typedefs to a struct type.
func resolveStruct(t dwarf.Type) (*dwarf.StructType, bool) {
	for i := 0; i < 8; i++ {
		switch v := t.(type) {
		case *dwarf.TypedefType:
			t = v.Type
		case *dwarf.StructType:
			return v, !v.Incomplete
		default:
			return nil, false
		}
	}
	return nil, false
}

// pythonPerfOn reports whether process pid runs CPython with its perf
// trampolines on: -X perf on its command line, or PYTHONPERFSUPPORT set
// to a non-zero value in its environment.
func pythonPerfOn(pid int) bool {
	if pid == 0 {
		return false
	}
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(cmd), "\x00")
	for i, a := range args {
		if a == "-Xperf" || (a == "-X" && i+1 < len(args) && args[i+1] == "perf") {
			return true
		}
		if a == "-c" || a == "-m" || (i > 0 && !strings.HasPrefix(a, "-")) {
			break // the program's own arguments
		}
	}
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "PYTHONPERFSUPPORT="); ok && v != "" && v != "0" {
			return true
		}
	}
	return false
}

// pyEvalEntry is the probe site of _PyEval_EvalFrameDefault in the file at
// path, as a usdt.Probe for the attach code.
func pyEvalEntry(path string) (usdt.Probe, error) {
	t, err := openSymbols(path, path)
	if err != nil {
		return usdt.Probe{}, err
	}
	defer t.Close()
	syms := t.Lookup("_PyEval_EvalFrameDefault")
	if len(syms) == 0 {
		return usdt.Probe{}, errors.New("no _PyEval_EvalFrameDefault symbol")
	}
	off, err := t.FileOffset(syms[0].Value)
	if err != nil {
		return usdt.Probe{}, err
	}
	return usdt.Probe{Provider: "cpython", Name: "_PyEval_EvalFrameDefault", PC: syms[0].Value, Offset: off}, nil
}

// ErrPythonPerfOff is wrapped by the error for CPython 3.12+ run without
// its perf trampolines: the eval-loop route would not see the calls
// between Python functions.
var ErrPythonPerfOff = errors.New("py: times CPython 3.12 and later in its eval loop, which calls between Python functions enter " +
	"only while its perf trampolines are on: run it with -X perf or PYTHONPERFSUPPORT=1")

// pyEvalRoute sets p to time CPython 3.12+ in its eval loop (pid runs the
// interpreter at path, display its name).
func pyEvalRoute(pid int, path, display string, p *USDTPair) error {
	if !pythonPerfOn(pid) {
		return fmt.Errorf("%s: %w", display, ErrPythonPerfOff)
	}
	l, err := pyEvalLayout(path)
	if err != nil {
		return fmt.Errorf("%s: %w", display, err)
	}
	e, err := pyEvalEntry(path)
	if err != nil {
		return fmt.Errorf("%s: %w", display, err)
	}
	p.Entry, p.Return, p.Eval = e, e, &l
	return nil
}
