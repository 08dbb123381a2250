// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// A table read for some addresses answers each of them as the whole
// table does (symbols out of order, sharing addresses, in modules,
// addresses below every symbol), and holds far fewer symbols.
func TestKallsymsForAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var lines []string
	for i := range 5000 {
		addr := 0xffffffff81000000 + uint64(r.IntN(1<<20))&^7
		typ := []string{"t", "T", "w", "W", "D", "b"}[r.IntN(6)]
		line := fmt.Sprintf("%016x %s fn_%d", addr, typ, i)
		if r.IntN(4) == 0 {
			line += fmt.Sprintf("\t[mod%d]", r.IntN(5))
		}
		lines = append(lines, line)
	}
	text := strings.Join(lines, "\n")
	all, err := ParseKallsyms(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 7, 300} {
		var addrs []uint64
		for range n {
			addrs = append(addrs, 0xffffffff81000000+uint64(r.IntN(1<<20+64))-32)
		}
		if n > 0 {
			addrs = append(addrs, addrs[0], all.addrs[5]) // a repeat, a symbol's start
		}
		some, err := ParseKallsymsFor(strings.NewReader(text), addrs)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			w, wok := all.Lookup(a)
			g, gok := some.Lookup(a)
			if w != g || wok != gok {
				t.Fatalf("%d addresses: Lookup(%#x) = %+v %v, the whole table's %+v %v", n, a, g, gok, w, wok)
			}
		}
		if len(some.addrs) > len(addrs) {
			t.Errorf("%d addresses kept %d symbols", len(addrs), len(some.addrs))
		}
		glo, ghi := some.Range()
		if wlo, whi := all.Range(); glo != wlo || ghi != whi {
			t.Errorf("Range %#x-%#x, want %#x-%#x", glo, ghi, wlo, whi)
		}
	}
	if _, err := ParseKallsymsFor(strings.NewReader("0000000000000000 T _stext\n"), []uint64{1}); err == nil {
		t.Error("hidden addresses accepted")
	}
}

// The kernel's own table read for some of its symbols' addresses names
// them as the whole table does.
func TestReadKallsymsFor(t *testing.T) {
	all, err := ReadKallsyms()
	if err != nil && os.Geteuid() != 0 {
		t.Skipf("not root, so the addresses are hidden: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	for i := 0; i < len(all.addrs); i += 997 {
		addrs = append(addrs, all.addrs[i], all.addrs[i]+3)
	}
	some, err := ReadKallsymsFor(addrs)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		w, _ := all.Lookup(a)
		if g, ok := some.Lookup(a); !ok || g != w {
			t.Fatalf("Lookup(%#x) = %+v %v, want %+v", a, g, ok, w)
		}
	}
}
