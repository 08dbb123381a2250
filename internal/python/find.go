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
	for _, sec := range f.Sections {
		if sec.Type == elf.SHT_PROGBITS && s.Value >= sec.Addr && s.Value+4 <= sec.Addr+sec.Size {
			var b [4]byte
			if _, err := sec.ReadAt(b[:], int64(s.Value-sec.Addr)); err != nil {
				return 0, false
			}
			return binary.LittleEndian.Uint32(b[:]), true
		}
	}
	return 0, false
}
