// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
)

// The packed table answers every lookup as a plain sorted list of the
// same symbols does: kallsyms out of address order, symbols sharing an
// address (the last listed wins, as a stable sort keeps them), modules,
// and lines of other types skipped.
func TestKallsymsPackedAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type ref struct {
		addr      uint64
		name, mod string
	}
	var lines []string
	var want []ref
	for i := range 3000 {
		addr := 0xffffffff81000000 + uint64(r.IntN(1<<20))&^7
		typ := []string{"t", "T", "w", "W", "D", "b"}[r.IntN(6)]
		name := fmt.Sprintf("fn_%d", i)
		mod := ""
		line := fmt.Sprintf("%016x %s %s", addr, typ, name)
		if r.IntN(4) == 0 {
			mod = fmt.Sprintf("mod%d", r.IntN(5))
			line += "\t[" + mod + "]"
		}
		lines = append(lines, line)
		if strings.Contains("tTwW", typ) {
			want = append(want, ref{addr, name, mod})
		}
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i].addr < want[j].addr })
	k, err := ParseKallsyms(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	for range 5000 {
		addr := 0xffffffff81000000 + uint64(r.IntN(1<<20+64)) - 32
		i := sort.Search(len(want), func(i int) bool { return want[i].addr > addr }) - 1
		got, ok := k.Lookup(addr)
		if i < 0 {
			if ok {
				t.Fatalf("Lookup(%#x) = %+v below every symbol", addr, got)
			}
			continue
		}
		if w := want[i]; !ok || got.Addr != w.addr || got.Name != w.name || got.Module != w.mod {
			t.Fatalf("Lookup(%#x) = %+v %v, want %+v", addr, got, ok, w)
		}
	}
	if lo, hi := k.Range(); lo != want[0].addr || hi != want[len(want)-1].addr {
		t.Errorf("Range %#x-%#x", lo, hi)
	}
}

// The kernel's own /proc/kallsyms parses, and every text symbol of it is
// found at its address (when the addresses are shown: root).
func TestReadKallsyms(t *testing.T) {
	k, err := ReadKallsyms()
	if err != nil && os.Geteuid() != 0 {
		t.Skipf("not root, so the addresses are hidden: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := k.Range()
	if lo == 0 || hi <= lo || len(k.addrs) < 1000 {
		t.Fatalf("%d symbols, range %#x-%#x", len(k.addrs), lo, hi)
	}
	for i := 0; i < len(k.addrs); i += 97 {
		s, ok := k.Lookup(k.addrs[i])
		if !ok || s.Addr != k.addrs[i] || s.Name == "" {
			t.Fatalf("Lookup(%#x) = %+v %v", k.addrs[i], s, ok)
		}
	}
}
