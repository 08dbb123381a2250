// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"os"
	"testing"

	"github.com/tickprof/tickprof/internal/symtab"
)

// The unit index finds, for every function's first, middle and last
// address and the addresses just outside, the unit dwarf.Reader.SeekPC
// finds, in testdata/c/inlined.c built -O2 -g and in libc's and Python
// 3.11's separate debug files when installed (DWARF 5, units with range
// lists).
func TestCUIndexAgreesWithSeekPC(t *testing.T) {
	paths := append([]string{inlinedBinary(t)}, installedDebugFiles(t)...)
	for _, p := range paths {
		checkCUIndex(t, p)
	}
}

// installedDebugFiles are the separate debug files of libc and Python
// 3.11 that are installed.
func installedDebugFiles(t *testing.T) []string {
	var paths []string
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"} {
		id, _, err := symtab.FileBuildIDs(p)
		if err != nil || len(id) < 3 {
			continue
		}
		dbg := "/usr/lib/debug/.build-id/" + id[:2] + "/" + id[2:] + ".debug"
		if _, err := os.Stat(dbg); err == nil {
			paths = append(paths, dbg)
		} else {
			t.Logf("%s: no debug file (skipped)", p)
		}
	}
	return paths
}

func checkCUIndex(t *testing.T, path string) {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	in := newInliner(d)
	if in.seekPC(d.Reader(), 0); in.cus.seek {
		t.Fatalf("%s: the units' ranges overlap or cannot be read: the index is not used", path)
	}
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			funcs = append(funcs, s)
		}
	}
	// SeekPC is slow on large files: about 150 functions, spread out.
	step := max(1, len(funcs)/150)
	checked, found := 0, 0
	for i := 0; i < len(funcs); i += step {
		s := funcs[i]
		for _, pc := range []uint64{s.Value - 1, s.Value, s.Value + s.Size/2, s.Value + s.Size - 1, s.Value + s.Size} {
			want, werr := d.Reader().SeekPC(pc)
			got, gerr := in.seekPC(d.Reader(), pc)
			checked++
			if (werr == nil) != (gerr == nil) || want != nil && (got == nil || got.Offset != want.Offset) {
				t.Fatalf("%s: %#x: index gave %v (%v), SeekPC %v (%v)", path, pc, offsetOf(got), gerr, offsetOf(want), werr)
			}
			if want != nil {
				found++
			}
		}
	}
	if found == 0 {
		t.Errorf("%s: no address of %d found in a unit", path, checked)
	}
	t.Logf("%s: %d addresses, %d in units", path, checked, found)
}

func offsetOf(e *dwarf.Entry) any {
	if e == nil {
		return nil
	}
	return e.Offset
}
