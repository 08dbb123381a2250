// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"time"
)

// GrowingKallsyms is a kernel symbol table for a run that symbolizes
// window after window: it holds the symbols that hold the addresses met
// so far, and grows by one pass over /proc/kallsyms when a window brings
// addresses it cannot place. Each symbol is held with its extent, from
// its start to the next text symbol's start in the whole table, so that
// an address inside an extent held is answered without reading kallsyms
// again, and one outside every extent is known to need a read (an
// address below the lowest text symbol has none, known from the first
// read). The whole table was 4.8 MiB held for the run; a busy process's
// windows meet a few hundred kernel functions. It is not safe for
// concurrent use.
type GrowingKallsyms struct {
	ext    []kernExtent // disjoint, by start
	lo, hi uint64       // the whole table's lowest and highest text symbol
	read   bool         // a pass was made: lo and hi are known
	readAt time.Time    // of the last pass that started afresh
	// passes counts the passes over kallsyms.
	passes int
	open   func() (io.ReadCloser, error)
}

// kernExtent is one symbol held: it holds [start, end).
type kernExtent struct {
	start, end uint64
	name, mod  string
	met        bool // an address placed in it since the last fresh pass
}

// NewGrowingKallsyms returns an empty table that reads /proc/kallsyms.
func NewGrowingKallsyms() *GrowingKallsyms {
	return &GrowingKallsyms{open: func() (io.ReadCloser, error) { return os.Open("/proc/kallsyms") }}
}

// Place makes the table hold the symbols of addrs (the addresses Lookup
// will be asked about), reading kallsyms in one pass when some of them
// lie outside every extent held. When the last fresh pass is older than
// maxAge (kallsyms changes when modules load), the pass starts afresh
// instead: it keeps only the symbols met since the last fresh pass and
// those of addrs, read anew.
func (g *GrowingKallsyms) Place(addrs []uint64, maxAge time.Duration) error {
	fresh := g.read && time.Since(g.readAt) >= maxAge
	var want []uint64
	for _, a := range addrs {
		if i, ok := g.find(a); ok && !fresh {
			if i >= 0 {
				g.ext[i].met = true
			}
			continue
		}
		want = append(want, a)
	}
	if len(want) == 0 && !fresh {
		return nil
	}
	if fresh {
		for _, e := range g.ext {
			if e.met {
				want = append(want, e.start)
			}
		}
	}
	ext, lo, hi, err := g.pass(want)
	if err != nil {
		return err
	}
	if fresh || !g.read {
		g.ext, g.readAt = nil, time.Now()
	}
	g.lo, g.hi, g.read = lo, hi, true
	g.merge(ext)
	return nil
}

// find returns the index of the extent holding a, or -1 when a lies
// below every text symbol; ok is false when neither is known.
func (g *GrowingKallsyms) find(a uint64) (int, bool) {
	if g.read && a < g.lo {
		return -1, true
	}
	i := sort.Search(len(g.ext), func(i int) bool { return g.ext[i].start > a }) - 1
	if i < 0 || a >= g.ext[i].end {
		return 0, false
	}
	return i, true
}

// pass reads kallsyms once for the extents of want.
func (g *GrowingKallsyms) pass(want []uint64) ([]kernExtent, uint64, uint64, error) {
	f, err := g.open()
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	g.passes++
	return parseKallsymsExtents(f, want)
}

// merge adds extents read by the latest pass (each marked met), replacing
// those held at the same starts and cutting short any held one a new one
// starts inside (kallsyms changed between the passes).
func (g *GrowingKallsyms) merge(ext []kernExtent) {
	all := append(ext, g.ext...) // the new ones first: kept at equal starts
	slices.SortStableFunc(all, func(a, b kernExtent) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	out := all[:0]
	for _, e := range all {
		if n := len(out); n > 0 && out[n-1].start == e.start {
			continue
		}
		if n := len(out); n > 0 && out[n-1].end > e.start {
			out[n-1].end = e.start
		}
		out = append(out, e)
	}
	g.ext = slices.Clip(out)
}

// Lookup returns the symbol holding addr, as Kallsyms.Lookup on the whole
// table does, for an address placed (Place) since the last fresh pass;
// for another, the symbol of the extent holding it if any, else none.
func (g *GrowingKallsyms) Lookup(addr uint64) (KernelSym, bool) {
	i, ok := g.find(addr)
	if !ok || i < 0 {
		return KernelSym{}, false
	}
	e := &g.ext[i]
	return KernelSym{Addr: e.start, Name: e.name, Module: e.mod}, true
}

// Range returns the lowest and highest symbol addresses of the whole
// table (zero before the first pass).
func (g *GrowingKallsyms) Range() (lo, hi uint64) {
	return g.lo, g.hi
}

// Len is the number of symbols held.
func (g *GrowingKallsyms) Len() int { return len(g.ext) }

// Passes is the number of passes over kallsyms so far.
func (g *GrowingKallsyms) Passes() int { return g.passes }

// extentCand is the best symbol seen so far in one pass for one wanted
// address (kallsymsCand), with the lowest start seen above it.
type extentCand struct {
	kallsymsCand
	mod  string
	next uint64
}

// parseKallsymsExtents reads kallsyms text for the symbols holding want
// and their extents, with the whole table's lowest and highest text
// symbol. Of symbols sharing a start, the later listed is kept, as
// ParseKallsyms's stable sort keeps it.
func parseKallsymsExtents(r io.Reader, want []uint64) ([]kernExtent, uint64, uint64, error) {
	want = slices.Clone(want)
	slices.Sort(want)
	want = slices.Compact(want)
	// c[i] holds the best symbol starting in (want[i-1], want[i]] and the
	// lowest start in (want[i], want[i+1]].
	c := make([]extentCand, len(want))
	for i := range c {
		c[i].seq, c[i].next = -1, math.MaxUint64
	}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	seq := 0
	err := eachTextSym(r, func(addr uint64, name, mod []byte) error {
		seq++
		lo, hi = min(lo, addr), max(hi, addr)
		i := sort.Search(len(want), func(i int) bool { return want[i] >= addr })
		if i > 0 {
			c[i-1].next = min(c[i-1].next, addr)
		}
		if i == len(want) {
			return nil
		}
		cand := kallsymsCand{addr: addr, seq: seq}
		if b := &c[i]; cand.better(&b.kallsymsCand) {
			b.addr, b.seq, b.name = addr, seq, append(b.name[:0], name...)
			if string(mod) != b.mod {
				b.mod = string(mod)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	return extentsOf(c), lo, hi, nil
}

// extentsOf turns a pass's candidates into the extents of the wanted
// addresses, each once.
func extentsOf(c []extentCand) []kernExtent {
	next := uint64(math.MaxUint64)
	for i := len(c) - 1; i >= 0; i-- {
		next = min(next, c[i].next)
		c[i].next = next // now the lowest start above want[i]
	}
	var out []kernExtent
	var run *extentCand
	for i := range c {
		if run == nil || c[i].seq >= 0 && c[i].better(&run.kallsymsCand) {
			run = &c[i]
		}
		if run.seq < 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].start == run.addr {
			out[n-1].end = c[i].next
			continue
		}
		out = append(out, kernExtent{start: run.addr, end: c[i].next, name: string(run.name), mod: run.mod, met: true})
	}
	return out
}
