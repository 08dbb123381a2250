// SPDX-License-Identifier: Apache-2.0

package python

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/tickprof/tickprof/internal/proc"
)

// ErrUnsupported says a process runs a CPython outside the version table.
var ErrUnsupported = errors.New("CPython version not supported (" + Supported + ")")

// Interpreter is the CPython a process runs: its layout and where its
// runtime state lies.
type Interpreter struct {
	Layout Layout
	// File is the file that holds _PyRuntime (the executable, or
	// libpython3.X.so), as the process names it.
	File string
	// Runtime is the address of _PyRuntime in the process.
	Runtime uint64
}

// InterpHead is the address of _PyRuntime.interpreters.head, where the
// BPF walk starts.
func (in Interpreter) InterpHead() uint64 {
	return in.Runtime + uint64(in.Layout.RuntimeInterpHead)
}

// candidate says whether a mapped file may hold a CPython interpreter:
// the executable python3.X or the library libpython3.X. A program that
// links CPython statically under another name is not looked at.
func candidate(p string) bool {
	b := path.Base(p)
	return strings.HasPrefix(b, "python") || strings.HasPrefix(b, "libpython")
}

// Find looks for a CPython interpreter among the executable mappings of
// process pid (proc.ReadMaps): ok is false for a process that runs none;
// the error is ErrUnsupported (wrapped) for a version outside the table,
// or why its file could not be read.
func Find(pid int, maps []proc.Mapping) (Interpreter, bool, error) {
	seen := map[string]bool{}
	for _, m := range maps {
		if !strings.HasPrefix(m.Path, "/") || seen[m.Path] || !candidate(m.Path) {
			continue
		}
		seen[m.Path] = true
		f, err := openMapped(pid, m)
		if err != nil {
			return Interpreter{}, true, err
		}
		in, ok, err := fromFile(f, m)
		f.Close()
		if ok || err != nil {
			return in, ok, err
		}
	}
	return Interpreter{}, false, nil
}

// openMapped opens the file of mapping m: through /proc/PID/map_files
// (deleted files too), else through /proc/PID/root (containers).
func openMapped(pid int, m proc.Mapping) (*elf.File, error) {
	p := strings.TrimSuffix(m.Path, " (deleted)")
	var errs []string
	for _, name := range []string{
		fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.Limit),
		fmt.Sprintf("/proc/%d/root%s", pid, p),
	} {
		f, err := elf.Open(name)
		if err == nil {
			return f, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("read %s: %s", p, strings.Join(errs, "; "))
}

// fromFile reads the interpreter from a candidate file mapped at m: false
// when the file has no _PyRuntime.
func fromFile(f *elf.File, m proc.Mapping) (Interpreter, bool, error) {
	syms := symbols(f, "_PyRuntime", "Py_Version")
	rt, ok := syms["_PyRuntime"]
	if !ok {
		return Interpreter{}, false, nil
	}
	bias, ok := loadBias(f, m)
	if !ok {
		return Interpreter{}, true, fmt.Errorf("%s: no loadable segment at file offset %#x", m.Path, m.Offset)
	}
	if freeThreaded.MatchString(path.Base(m.Path)) {
		return Interpreter{}, true, fmt.Errorf("%s: %w: a free-threaded build", m.Path, ErrUnsupported)
	}
	major, minor, ok := version(f, syms, m.Path)
	if !ok {
		return Interpreter{}, true, fmt.Errorf("%s: %w: version unknown", m.Path, ErrUnsupported)
	}
	l, ok := LayoutFor(major, minor)
	if !ok {
		return Interpreter{}, true, fmt.Errorf("%s: %w: %d.%d", m.Path, ErrUnsupported, major, minor)
	}
	if err := checkDebugOffsets(f, rt, l); err != nil {
		return Interpreter{}, true, fmt.Errorf("%s: %w", m.Path, err)
	}
	return Interpreter{Layout: l, File: m.Path, Runtime: bias + rt.Value}, true, nil
}

// symbols finds the named symbols in the dynamic symbol table (CPython
// exports them), else, when the first name is not there, in the full one.
func symbols(f *elf.File, names ...string) map[string]elf.Symbol {
	out := map[string]elf.Symbol{}
	for _, read := range []func() ([]elf.Symbol, error){f.DynamicSymbols, f.Symbols} {
		if _, ok := out[names[0]]; ok {
			break
		}
		syms, _ := read()
		for _, s := range syms {
			for _, n := range names {
				if s.Name == n && s.Value != 0 {
					if _, ok := out[n]; !ok {
						out[n] = s
					}
				}
			}
		}
	}
	return out
}

// loadBias is the difference between the file's addresses and the
// process's: the loadable segment the executable mapping m maps starts
// at m.Start.
func loadBias(f *elf.File, m proc.Mapping) (uint64, bool) {
	const page = 4096
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off&^(page-1) == m.Offset {
			return m.Start - p.Vaddr&^(page-1), true
		}
	}
	return 0, false
}

var (
	versionName = regexp.MustCompile(`python(\d)\.(\d+)`)
	// freeThreaded names a free-threaded build (python3.13t,
	// libpython3.13t.so), whose structures differ from the table's.
	freeThreaded = regexp.MustCompile(`python\d\.\d+t([.-]|$)`)
)

// version is the interpreter's version: Py_Version (3.11+, PY_VERSION_HEX
// in read-only data), else the file's name (python3.X, libpython3.X.so).
func version(f *elf.File, syms map[string]elf.Symbol, name string) (int, int, bool) {
	if s, ok := syms["Py_Version"]; ok {
		if v, ok := readSym(f, s); ok && v>>24 == 3 {
			return 3, int(v>>16) & 0xff, true
		}
	}
	if m := versionName.FindStringSubmatch(path.Base(name)); m != nil {
		major, _ := strconv.Atoi(m[1])
		minor, err := strconv.Atoi(m[2])
		return major, minor, err == nil
	}
	return 0, 0, false
}

// readSym reads the 4-byte value of symbol s from the file's sections.
func readSym(f *elf.File, s elf.Symbol) (uint32, bool) {
	b, ok := readAt(f, s.Value, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// readAt reads n bytes at address addr of the file's initialized data.
func readAt(f *elf.File, addr uint64, n int) ([]byte, bool) {
	for _, sec := range f.Sections {
		if sec.Type == elf.SHT_PROGBITS && addr >= sec.Addr && addr+uint64(n) <= sec.Addr+sec.Size {
			b := make([]byte, n)
			if _, err := sec.ReadAt(b, int64(addr-sec.Addr)); err != nil {
				return nil, false
			}
			return b, true
		}
	}
	return nil, false
}

// debugOffsets313 are the words of 3.13's _Py_DebugOffsets (at the start
// of _PyRuntime, after its cookie "xdebugpy" and version: each group
// starts with its size) that hold the offsets of the table's fields.
var debugOffsets313 = []struct {
	word int
	name string
	get  func(Layout) int
}{
	{0, "free_threaded", func(Layout) int { return 0 }},
	{3, "runtime_state.interpreters_head", func(l Layout) int { return l.RuntimeInterpHead }},
	{7, "interpreter_state.threads_head", func(l Layout) int { return l.InterpThreadsHead }},
	{19, "thread_state.next", func(l Layout) int { return l.ThreadNext }},
	{21, "thread_state.current_frame", func(l Layout) int { return l.ThreadFrame }},
	{22, "thread_state.thread_id", func(l Layout) int { return l.ThreadID }},
	{27, "interpreter_frame.previous", func(l Layout) int { return l.FramePrevious }},
	{28, "interpreter_frame.executable", func(l Layout) int { return l.FrameCode }},
	{29, "interpreter_frame.instr_ptr", func(l Layout) int { return l.FrameInstr }},
	{31, "interpreter_frame.owner", func(l Layout) int { return l.FrameOwner }},
	{33, "code_object.filename", func(l Layout) int { return l.CodeFilename }},
	{34, "code_object.name", func(l Layout) int { return l.CodeName }},
	{35, "code_object.qualname", func(l Layout) int { return l.CodeQualname }},
	{36, "code_object.linetable", func(l Layout) int { return l.CodeLineTable }},
	{37, "code_object.firstlineno", func(l Layout) int { return l.CodeFirstLine }},
}

// checkDebugOffsets compares a 3.13 interpreter's own _Py_DebugOffsets,
// read from its file's initialized _PyRuntime, with the table's layout:
// another patch release that moved a field, or a free-threaded build, is
// refused rather than read wrong. Other versions have none.
func checkDebugOffsets(f *elf.File, rt elf.Symbol, l Layout) error {
	if l.Minor != 13 {
		return nil
	}
	b, ok := readAt(f, rt.Value, 16+8*38)
	if !ok || string(b[:8]) != "xdebugpy" {
		return fmt.Errorf("%w: no _Py_DebugOffsets in _PyRuntime", ErrUnsupported)
	}
	for _, d := range debugOffsets313 {
		if v := binary.LittleEndian.Uint64(b[16+8*d.word:]); v != uint64(d.get(l)) {
			return fmt.Errorf("%w: its %s is %d, the table's %d", ErrUnsupported, d.name, v, d.get(l))
		}
	}
	return nil
}
