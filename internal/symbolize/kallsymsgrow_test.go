// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// randomKallsyms is kallsyms text of n symbols of random types at random
// addresses (some shared, some in modules), first at base.
func randomKallsyms(r *rand.Rand, n int, base uint64) string {
	var lines []string
	for i := range n {
		addr := base + uint64(r.IntN(1<<20))&^7
		typ := []string{"t", "T", "w", "W", "D", "b"}[r.IntN(6)]
		line := fmt.Sprintf("%016x %s fn_%d", addr, typ, i)
		if r.IntN(4) == 0 {
			line += fmt.Sprintf("\t[mod%d]", r.IntN(5))
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// A growing table answers every address placed as the whole table does,
// window after window (addresses below every symbol, at symbols' starts,
// in modules, past the last symbol), reads kallsyms only for windows
// with addresses outside the extents it holds, and none once the
// addresses repeat; started afresh after a change of kallsyms (a module
// loaded), it answers as the new whole table.
func TestGrowingKallsymsAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const base = 0xffffffff81000000
	text := randomKallsyms(r, 5000, base)
	g := &GrowingKallsyms{open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(text)), nil }}
	all, err := ParseKallsyms(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	pool := []uint64{base - 100, all.addrs[0], all.addrs[7], all.addrs[len(all.addrs)-1] + 50}
	for range 400 {
		pool = append(pool, base+uint64(r.IntN(1<<20+64))-32)
	}
	check := func(what string, all *Kallsyms, addrs []uint64) {
		t.Helper()
		for _, a := range addrs {
			w, wok := all.Lookup(a)
			got, gok := g.Lookup(a)
			if w != got || wok != gok {
				t.Fatalf("%s: Lookup(%#x) = %+v %v, the whole table's %+v %v", what, a, got, gok, w, wok)
			}
		}
		if glo, ghi := g.Range(); glo != all.lo || ghi != all.hi {
			t.Fatalf("%s: Range %#x-%#x, want %#x-%#x", what, glo, ghi, all.lo, all.hi)
		}
	}
	for w := range 30 {
		// Windows drawing from a working set, as a busy process's do.
		var addrs []uint64
		for range 40 {
			addrs = append(addrs, pool[r.IntN(len(pool))])
		}
		if err := g.Place(addrs, time.Hour); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("window %d", w), all, addrs)
	}
	if err := g.Place(pool[:200], time.Hour); err != nil {
		t.Fatal(err)
	}
	passes := g.Passes()
	if err := g.Place(pool[:200], time.Hour); err != nil {
		t.Fatal(err)
	}
	if g.Passes() != passes {
		t.Errorf("a window of addresses placed before read kallsyms %d times", g.Passes()-passes)
	}
	if g.Len() > len(pool) {
		t.Errorf("%d symbols held for %d addresses", g.Len(), len(pool))
	}
	t.Logf("%d passes, %d symbols held of %d", g.Passes(), g.Len(), len(all.addrs))

	// A module loads: new symbols inside the extents held.
	text += "\n" + randomKallsyms(r, 300, base)
	all, err = ParseKallsyms(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Place(pool, 0); err != nil {
		t.Fatal(err)
	}
	check("afresh", all, pool)
}
