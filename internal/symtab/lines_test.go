// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tickprof/tickprof/internal/cbuild"
)

// The line programs decoded unit by unit on demand answer every address
// inside a function as the rows of all units sorted together do: on this
// C program of three units built with -g, and on libc's separate debug
// file when installed. (Between functions, in the padding no sample or return
// address falls in, the rows of all units sorted together carried the
// previous function's last line on: libc's line programs end their
// sequences past their units' ranges.)
func TestDWARFLinesLazyAgrees(t *testing.T) {
	files := []string{multiUnitC(t)}
	if libc, err := os.Open("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		if f, err := elf.NewFile(libc); err == nil {
			if id, _ := BuildIDs(f); len(id) > 2 {
				files = append(files, "/usr/lib/debug/.build-id/"+id[:2]+"/"+id[2:]+".debug")
			}
		}
		libc.Close()
	}
	checked := 0
	for _, path := range files {
		f, err := elf.Open(path)
		if err != nil {
			t.Logf("%s: %v (skipped)", path, err)
			continue
		}
		d, err := f.DWARF()
		if err != nil {
			f.Close()
			t.Logf("%s: no DWARF: %v (skipped)", path, err)
			continue
		}
		lazy, err := readDWARFLines(d)
		if err != nil {
			t.Fatal(err)
		}
		// Every unit's rows, sorted together: the table as it was built.
		all := &lineTableBuilder{dl: &rowTable{}, nameIdx: map[string]int32{}}
		r := d.Reader()
		units := 0
		for {
			e, err := r.Next()
			if err != nil || e == nil {
				break
			}
			r.SkipChildren()
			if err := addUnitLines(d, e, all); err != nil {
				t.Fatal(err)
			}
			units++
		}
		eager := all.finish()
		syms, _ := f.Symbols()
		f.Close()
		var funcs []elf.Symbol
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value > 0 {
				funcs = append(funcs, s)
			}
		}
		if len(funcs) == 0 || len(eager.addrs) == 0 {
			t.Fatalf("%s: no functions or no line rows", path)
		}
		rnd := rand.New(rand.NewPCG(3, 4))
		found := 0
		for range 20000 {
			fn := funcs[rnd.IntN(len(funcs))]
			addr := fn.Value + rnd.Uint64N(fn.Size)
			ef, el, eok := eager.line(addr)
			lf, ll, lok := lazy.line(addr)
			if ef != lf || el != ll || eok != lok {
				t.Fatalf("%s %#x: lazy %s:%d %v, all rows %s:%d %v", path, addr, lf, ll, lok, ef, el, eok)
			}
			if eok {
				found++
			}
		}
		t.Logf("%s: %d units, %d of %d units decoded for 20000 lookups (%d with a line)", path, units, len(lazy.tables)-1, len(lazy.entries), found)
		if found == 0 {
			t.Errorf("%s: no address had a line", path)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no file with DWARF was checked")
	}
}

// loadDWARF reads what elf.File.DWARF reads of a file whose DWARF is
// compressed (gcc -gz, and libc's debug file when installed): every entry
// of every unit alike, with its attributes.
func TestLoadDWARFAgrees(t *testing.T) {
	files := []string{multiUnitC(t, "-gz=zlib")}
	if libc, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		if id, _ := BuildIDs(libc); len(id) > 2 {
			files = append(files, "/usr/lib/debug/.build-id/"+id[:2]+"/"+id[2:]+".debug")
		}
		libc.Close()
	}
	checked := 0
	for _, path := range files {
		fh, err := os.Open(path)
		if err != nil {
			t.Logf("%s: %v (skipped)", path, err)
			continue
		}
		f, err := elf.NewFile(fh)
		if err != nil {
			t.Fatal(err)
		}
		compressed := false
		for _, s := range f.Sections {
			compressed = compressed || (s.Name == ".debug_info" && s.Flags&elf.SHF_COMPRESSED != 0)
		}
		want, err := f.DWARF()
		if err != nil {
			t.Fatal(err)
		}
		got, err := loadDWARF(f, fh)
		if err != nil {
			t.Fatal(err)
		}
		rw, rg := want.Reader(), got.Reader()
		n := 0
		for {
			ew, errw := rw.Next()
			eg, errg := rg.Next()
			if (errw == nil) != (errg == nil) {
				t.Fatalf("%s entry %d: errors %v and %v", path, n, errw, errg)
			}
			if ew == nil || eg == nil || n == 100000 { // the first 100,000 of a large file
				if (ew == nil) != (eg == nil) {
					t.Fatalf("%s: one reader ended at entry %d", path, n)
				}
				break
			}
			if fmt.Sprint(*ew) != fmt.Sprint(*eg) {
				t.Fatalf("%s entry %d: %v, elf.File.DWARF read %v", path, n, *eg, *ew)
			}
			if ew.Tag == dwarf.TagCompileUnit {
				lw, _ := want.LineReader(ew)
				lg, _ := got.LineReader(eg)
				if (lw == nil) != (lg == nil) {
					t.Fatalf("%s entry %d: line reader %v, elf.File.DWARF's %v", path, n, lg, lw)
				}
			}
			n++
		}
		fh.Close()
		t.Logf("%s: %d entries alike (compressed: %v)", path, n, compressed)
		if !compressed {
			t.Errorf("%s: its DWARF is not compressed: the inflation was not checked", path)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no file was checked")
	}
}

// multiUnitC builds a C program of three compile units with -g and the
// extra flags.
func multiUnitC(t *testing.T, flags ...string) string {
	dir := t.TempDir()
	var srcs []string
	for i, body := range []string{
		"int f1(int x) { int y = x * 3;\n  return y + 1; }\nint f2(int x) { return x - 2; }\n",
		"int f1(int);\nint g1(int x) { int s = 0;\n  for (int i = 0; i < x; i++)\n    s += f1(i);\n  return s; }\n",
		"int g1(int); int f2(int);\nint main(int argc, char **argv) { (void)argv;\n  return g1(argc) + f2(argc); }\n",
	} {
		p := filepath.Join(dir, fmt.Sprintf("u%d.c", i))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, p)
	}
	out := filepath.Join(dir, "multi")
	if err := cbuild.Build(out, cbuild.Program{Sources: srcs, Flags: append([]string{"-g", "-O1"}, flags...)}); err != nil {
		t.Fatal(err)
	}
	return out
}
