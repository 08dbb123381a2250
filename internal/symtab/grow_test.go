// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/elf"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// A growing read of a file's DWARF, told of the addresses of one window
// after another, gives every address told of so far the line and the
// chain of inlined calls the whole DWARF gives (on a C program of three
// units, and on libc's and Python 3.11's separate debug files when
// installed); a window of addresses told of before reads nothing more,
// and the read holds fewer units than there are.
func TestGrowDWARFAgrees(t *testing.T) {
	type file struct {
		path           string
		windows, addrs int
	}
	files := []file{{multiUnitC(t), 3, 4}}
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"} {
		if dbg := debugFileOf(p); dbg != "" {
			if _, err := os.Stat(dbg); err == nil {
				files = append(files, file{dbg, 4, 8})
			} else {
				t.Logf("%s: no debug file (skipped)", p)
			}
		}
	}
	for _, fl := range files {
		checkGrow(t, fl.path, fl.windows, fl.addrs)
	}
}

// funcAddrs picks n addresses inside the functions of the ELF file at
// path.
func funcAddrs(t *testing.T, path string, n int, seed uint64) []uint64 {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value > 0 {
			funcs = append(funcs, s)
		}
	}
	rnd := rand.New(rand.NewPCG(seed, 6))
	var pcs []uint64
	for range n {
		fn := funcs[rnd.IntN(len(funcs))]
		pcs = append(pcs, fn.Value+rnd.Uint64N(fn.Size))
	}
	return pcs
}

// checkGrow grows the DWARF of path over windows of addrs addresses
// each (the last window an address in no unit's range, as _start's), and
// compares each address told of with the whole read.
func checkGrow(t *testing.T, path string, windows, addrs int) {
	whole, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	wd, err := whole.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	var seen []uint64
	for w := range windows {
		pcs := funcAddrs(t, path, addrs, uint64(w))
		if w == windows-1 {
			pcs = append(pcs, 1)
		}
		d, err := tab.GrowDWARF(pcs)
		if err != nil {
			t.Fatalf("%s window %d: %v", path, w, err)
		}
		seen = append(seen, pcs...)
		for _, pc := range seen {
			wf, wl, wok := whole.Line(pc)
			gf, gl, gok := tab.Line(pc)
			if wf != gf || wl != gl || wok != gok {
				t.Fatalf("%s window %d, %#x: grown %s:%d %v, whole %s:%d %v", path, w, pc, gf, gl, gok, wf, wl, wok)
			}
			if cw, cg := inlineChain(wd, pc), inlineChain(d, pc); !slices.Equal(cw, cg) {
				t.Fatalf("%s window %d, %#x: grown inlined calls %q, whole %q", path, w, pc, cg, cw)
			}
		}
	}
	if tab.grow == nil || tab.grow.s == nil {
		t.Fatalf("%s: the DWARF was read whole", path)
	}
	growths := tab.grow.growths
	if _, err := tab.GrowDWARF(seen[:addrs]); err != nil || tab.grow.growths != growths {
		t.Errorf("%s: addresses told of before grew the read again (%v)", path, err)
	}
	read := 0
	for _, u := range tab.grow.s.units {
		if u.read {
			read++
		}
	}
	t.Logf("%s: %d addresses alike over %d windows, %d growths; %d of %d units read",
		path, len(seen), windows, growths, read, len(tab.grow.s.units))
	if read >= len(tab.grow.s.units) && len(tab.grow.s.units) > 3 {
		t.Errorf("%s: the growing read holds %d units of %d", path, read, len(tab.grow.s.units))
	}
}
