// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
)

// A growing read of a file's DWARF is a sparse read (sparse.go) that
// reads more compile units as addresses in units not read yet are asked
// about: a run that symbolizes window after window meets new addresses
// in every window, mostly in units met before. The units read stay in
// one buffer as long as .debug_info, written in place; each growth
// streams .debug_info and .debug_line once more, opens the data anew and
// re-indexes the line tables, keeping the line tables decoded already.

// maxGrowths bounds the growths of one file's DWARF (each inflates its
// .debug_info again); past it the whole DWARF is read.
const maxGrowths = 64

// arange is one address range of .debug_aranges and its unit's offset.
type arange struct{ lo, hi, unit uint64 }

// dwarfGrowth is a growing read of one file's DWARF.
type dwarfGrowth struct {
	// pcs are the addresses the first read is for.
	pcs []uint64
	// s is the sparse read, nil before it starts and once the whole
	// DWARF was read instead.
	s   *sparseInfo
	dat map[string][]byte
	// ranges are .debug_aranges's, by start; listed the units it lists.
	ranges []arange
	listed map[uint64]bool
	// unlisted says the units .debug_aranges leaves out were read (for
	// an address in none of its ranges).
	unlisted bool
	growths  int
}

// GrowDWARF says that the virtual addresses pcs will be asked about next
// (Line, and the entries of DWARF's data), in a run that asks about more
// addresses later: the first call, before the DWARF is read, reads it
// for the compile units that hold pcs only (as LimitDWARF does), and each
// later call reads the units that hold its addresses and were not read
// yet, if any; Line, DWARF and the entries then answer for every address
// told of as they do when the whole DWARF is read. When a sparse read is
// not possible (no .debug_aranges), or after maxGrowths growths, the
// whole DWARF is read. It returns the DWARF data as it is now (which a
// caller holding the data from an earlier call must take up); it has no
// effect on a table whose DWARF was read otherwise. It must not be
// called while another goroutine uses the table.
func (t *Table) GrowDWARF(pcs []uint64) (*dwarf.Data, error) {
	if t.grow == nil {
		t.grow = &dwarfGrowth{pcs: slices.Clone(pcs)}
		return t.DWARF()
	}
	g := t.grow
	if g.s == nil || t.dw == nil || t.f == nil || t.file == nil {
		return t.dw, t.dwErr
	}
	want, all := g.need(pcs)
	if len(want) == 0 && !all {
		return t.dw, nil
	}
	d, err := g.extend(want, all)
	if err != nil || g.growths >= maxGrowths {
		// The whole DWARF serves whatever stopped the growth; the sparse
		// buffers go with the last data that reads them.
		g.s = nil
		if d, err = loadDWARF(t.f, t.file); err != nil {
			// The data read before may have lost its units' padding.
			t.dw, t.dwErr = nil, fmt.Errorf("read DWARF of %s: %w", t.Path, err)
			t.lines, t.lineErr = nil, t.dwErr
			return nil, t.dwErr
		}
	}
	t.dw = d
	t.relines(d)
	return d, nil
}

// relines re-indexes the DWARF line tables read already on the data d,
// keeping the units' tables decoded already (a unit keeps its offset).
func (t *Table) relines(d *dwarf.Data) {
	old, ok := t.lines.(*dwarfLines)
	if !ok {
		return
	}
	dl, err := readDWARFLines(d)
	if err != nil {
		t.lines, t.lineErr = nil, fmt.Errorf("read DWARF lines of %s: %w", t.Path, err)
		return
	}
	decoded := map[dwarf.Offset]*rowTable{}
	for i, tab := range old.tables {
		if i >= 0 {
			decoded[old.entries[i].Offset] = tab
		}
	}
	for i, e := range dl.entries {
		if tab, ok := decoded[e.Offset]; ok {
			dl.tables[i] = tab
		}
	}
	t.lines = dl
}

// load is DWARF's read for a table that GrowDWARF was called on
// first: the sparse read for g.pcs, which stays open to grow.
func (g *dwarfGrowth) load(f *elf.File, file io.ReaderAt) (*dwarf.Data, error) {
	if file == nil || f.Type == elf.ET_REL || hasDebugRelocations(f) {
		return nil, fmt.Errorf("%w: relocations", errNotSparse)
	}
	s := &sparseInfo{f: f, file: file, sec: debugSection(f, "info"), line: debugSection(f, "line")}
	d, err := g.start(s)
	if err != nil {
		unmapAll(s.maps)
		g.s = nil
		return nil, err
	}
	// The buffers are unmapped once neither the growth nor any data
	// opened on them is reachable: each data's cleanup holds the growth.
	runtime.AddCleanup(g, unmapAll, s.maps)
	return d, nil
}

// start reads the sections and the first units.
func (g *dwarfGrowth) start(s *sparseInfo) (*dwarf.Data, error) {
	dat, err := readDWARFSections(s.f, s.file, "info", "line")
	if err != nil {
		return nil, err
	}
	if g.ranges, g.listed, err = parseAranges(dat["aranges"], s.f.ByteOrder); err != nil {
		return nil, err
	}
	delete(dat, "aranges")
	if s.sec == nil {
		return nil, fmt.Errorf("%w: no .debug_info", errNotSparse)
	}
	s.pad = uint64(len(dat["abbrev"]))
	dat["abbrev"] = append(dat["abbrev"], 1, byte(dwarf.TagPartialUnit), 1, 0, 0, 0)
	if err := s.lineBuffer(dat); err != nil {
		return nil, err
	}
	g.s, g.dat = s, dat
	want, all := g.need(g.pcs)
	g.pcs = nil
	return g.extend(want, all)
}

// need returns the units that hold pcs and were not read; all says an
// address lies in no range listed, and the units .debug_aranges leaves
// out were not read yet.
func (g *dwarfGrowth) need(pcs []uint64) (want map[uint64]bool, all bool) {
	for _, pc := range pcs {
		found := -1
		// Every range starting at or below pc that holds it (ranges of
		// two units overlap rarely, and then close together).
		for i := sort.Search(len(g.ranges), func(i int) bool { return g.ranges[i].lo > pc }) - 1; i >= 0 && (found < 0 || found-i < 64); i-- {
			r := g.ranges[i]
			if pc >= r.hi {
				continue
			}
			if found < 0 {
				found = i
			}
			if k := g.s.unitAt(r.unit); k < 0 || !g.s.units[k].read {
				if want == nil {
					want = map[uint64]bool{}
				}
				want[r.unit] = true
			}
		}
		all = all || found < 0 && !g.unlisted
	}
	return want, all
}

// extend reads the units of want (and every unit .debug_aranges leaves
// out, when all), the units their inlined calls' names are read through,
// and their line programs, and opens the data anew.
func (g *dwarfGrowth) extend(want map[uint64]bool, all bool) (*dwarf.Data, error) {
	s := g.s
	need := func(u infoUnit) bool { return want[u.off] || all && !g.listed[u.off] }
	limit := uint64(0)
	for off := range want {
		limit = max(limit, off)
	}
	if all {
		limit = ^uint64(0)
	}
	g.growths++
	for range maxSparseRounds {
		if err := s.read(need, limit, g.dat["abbrev"]); err != nil {
			return nil, err
		}
		g.unlisted = g.unlisted || all
		d, err := s.data(g.dat)
		if err != nil {
			return nil, err
		}
		if len(s.waiting) == 0 {
			if err := s.readLines(d, g.dat["line"]); err != nil {
				return nil, err
			}
			runtime.AddCleanup(d, func(*dwarfGrowth) {}, g)
			return d, nil
		}
		// Another pass, for the origins in units passed over.
		need, limit = func(infoUnit) bool { return false }, 0
	}
	return nil, fmt.Errorf("%w: references beyond %d rounds", errNotSparse, maxSparseRounds)
}

// parseAranges reads .debug_aranges: its ranges by start, and the units
// it lists.
func parseAranges(ar []byte, bo binary.ByteOrder) ([]arange, map[uint64]bool, error) {
	if len(ar) == 0 {
		return nil, nil, fmt.Errorf("%w: no .debug_aranges", errNotSparse)
	}
	listed := map[uint64]bool{}
	var rs []arange
	for len(ar) > 0 {
		if len(ar) < 16 {
			return nil, nil, fmt.Errorf("%w: short .debug_aranges header", errNotSparse)
		}
		n := uint64(bo.Uint32(ar))
		if n == 0xffffffff || n+4 > uint64(len(ar)) || n < 12 {
			return nil, nil, fmt.Errorf("%w: .debug_aranges set of %d bytes", errNotSparse, n)
		}
		set := ar[:4+n]
		unit, asize, ssize := uint64(bo.Uint32(set[6:])), int(set[10]), set[11]
		if asize != 8 && asize != 4 || ssize != 0 {
			return nil, nil, fmt.Errorf("%w: .debug_aranges address size %d, segment size %d", errNotSparse, asize, ssize)
		}
		listed[unit] = true
		// The tuples start at a multiple of their size from the set's start.
		for p := (12 + 2*asize - 1) / (2 * asize) * (2 * asize); p+2*asize <= len(set); p += 2 * asize {
			lo, l := word(bo, set[p:], asize), word(bo, set[p+asize:], asize)
			if lo == 0 && l == 0 {
				break
			}
			rs = append(rs, arange{lo, lo + l, unit})
		}
		ar = ar[4+n:]
	}
	slices.SortFunc(rs, func(a, b arange) int { return cmp.Compare(a.lo, b.lo) })
	return slices.Clip(rs), listed, nil
}
