// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// debugFileOf is the path of the separate debug file of the ELF file at
// path under /usr/lib/debug, or "".
func debugFileOf(path string) string {
	id, _, err := FileBuildIDs(path)
	if err != nil || len(id) < 3 {
		return ""
	}
	return "/usr/lib/debug/.build-id/" + id[:2] + "/" + id[2:] + ".debug"
}

// The DWARF read for some addresses only (the units .debug_aranges says
// hold them, and those their inlined calls' origins are in) gives each
// of them the line and the chain of inlined calls the whole DWARF gives:
// on a C program of three units, compressed and not, on libc's separate
// debug file and on Python 3.11's (link-time optimized: origins in other
// units, and units without code that .debug_aranges leaves out, all read
// for an address in no range) when installed. It reads far fewer units
// than there are.
func TestSparseDWARFAgrees(t *testing.T) {
	type file struct {
		path      string
		addrs     int
		uncovered bool
	}
	files := []file{{multiUnitC(t), 20, true}, {multiUnitC(t, "-gz=zlib"), 20, true}}
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"} {
		if dbg := debugFileOf(p); dbg != "" {
			if _, err := os.Stat(dbg); err == nil {
				// Without an address in no range, a read stops after
				// the last unit it needs, and follows the inlined
				// calls' origins into the units after it.
				files = append(files, file{dbg, 40, true}, file{dbg, 40, false})
			} else {
				t.Logf("%s: no debug file (skipped)", p)
			}
		}
	}
	for _, fl := range files {
		checkSparse(t, fl.path, fl.addrs, fl.uncovered)
	}
}

// checkSparse compares the sparse read of path for n addresses in its
// functions with the whole read.
func checkSparse(t *testing.T, path string, n int, uncovered bool) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := elf.NewFile(fh)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value > 0 {
			funcs = append(funcs, s)
		}
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	if !uncovered {
		rnd = rand.New(rand.NewPCG(7, 8))
	}
	var pcs []uint64
	for range n {
		fn := funcs[rnd.IntN(len(funcs))]
		pcs = append(pcs, fn.Value+rnd.Uint64N(fn.Size))
	}
	if uncovered {
		// An address in no unit's range (as _start's), which has the
		// units .debug_aranges leaves out that may hold code read too.
		pcs = append(pcs, 1)
	}
	whole, err := loadDWARF(f, fh)
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := loadSparseDWARF(f, fh, pcs)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	lw, err := readDWARFLines(whole)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := readDWARFLines(sparse)
	if err != nil {
		t.Fatal(err)
	}
	lines, inl := 0, 0
	for _, pc := range pcs {
		wf, wl, wok := lw.line(pc)
		sf, sl, sok := ls.line(pc)
		if wf != sf || wl != sl || wok != sok {
			t.Fatalf("%s %#x: sparse %s:%d %v, whole %s:%d %v", path, pc, sf, sl, sok, wf, wl, wok)
		}
		cw, cs := inlineChain(whole, pc), inlineChain(sparse, pc)
		if !slices.Equal(cw, cs) {
			t.Fatalf("%s %#x: sparse inlined calls %q, whole %q", path, pc, cs, cw)
		}
		if wok {
			lines++
		}
		if len(cw) > 0 {
			inl++
		}
	}
	t.Logf("%s: %d addresses (%d with a line, %d inside inlined calls) alike; %d of %d units read",
		path, len(pcs), lines, inl, len(ls.entries), len(lw.entries))
	if lines == 0 {
		t.Errorf("%s: no address had a line", path)
	}
	if len(ls.entries) >= len(lw.entries) && len(lw.entries) > 3 {
		t.Errorf("%s: the sparse read holds %d units of %d", path, len(ls.entries), len(lw.entries))
	}
}

// inlineChain names the inlined calls that hold pc in its compile unit,
// outermost first, each through its abstract origin.
func inlineChain(d *dwarf.Data, pc uint64) []string {
	r := d.Reader()
	cu, err := r.SeekPC(pc)
	if err != nil || cu == nil || !cu.Children {
		return nil
	}
	var out []string
	for depth := 1; depth > 0; {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			depth--
			continue
		}
		if e.Tag == dwarf.TagInlinedSubroutine && holds(d, e, pc) {
			out = append(out, fmt.Sprintf("%s@%v:%v", originName(d, e), e.Val(dwarf.AttrCallFile), e.Val(dwarf.AttrCallLine)))
		}
		if e.Children {
			depth++
		}
	}
	return out
}

func holds(d *dwarf.Data, e *dwarf.Entry, pc uint64) bool {
	rs, _ := d.Ranges(e)
	for _, r := range rs {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// originName is e's name, or its origin's (a few steps).
func originName(d *dwarf.Data, e *dwarf.Entry) string {
	for range 4 {
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			return n
		}
		off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return ""
			}
		}
		r := d.Reader()
		r.Seek(off)
		if e, _ = r.Next(); e == nil {
			return ""
		}
	}
	return ""
}
