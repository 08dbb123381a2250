// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"context"

	"github.com/tickprof/tickprof/internal/symtab"
)

// Meet says that addr (a leaf or a return address, as LocateContext takes
// it) will be located in the window being symbolized, in a run that
// symbolizes window after window: GrowTables then reads the DWARF of the
// compile units that hold the addresses met (symtab.Table.GrowDWARF),
// growing with the windows, instead of every unit of a file. Unlike
// Expect, lines and inlined calls are complete for every address met
// before it is located.
func (img *Image) Meet(addr uint64, leaf bool) {
	mi, ok := img.Find(addr)
	if !ok {
		return
	}
	m, bin := img.maps[mi], img.bins[mi]
	if bin == nil || bin.table == nil {
		return
	}
	look := addr
	if !leaf {
		look--
	}
	if va, ok := bin.table.VAddr(look - m.Start + m.Offset); ok {
		bin.met = append(bin.met, va)
	}
}

// GrowTables reads what the addresses met (Image.Meet) since its last
// call need of their files' DWARF (the separate debug file's too, found
// and downloaded under ctx as LocateContext does), before they are
// located. After the first windows, a window's addresses are mostly in
// units read already, and it reads nothing.
func (t *Procs) GrowTables(ctx context.Context) {
	for _, b := range t.files {
		if len(b.met) > 0 {
			b.grow(ctx, t)
		}
	}
	for _, b := range t.vdsos {
		b.met = b.met[:0]
	}
}

// grow hands the addresses met to the tables whose DWARF is read for
// lines and inlined calls, and has the inlined-call reader take up the
// DWARF data grown.
func (b *binFile) grow(ctx context.Context, t *Procs) {
	dt := b.debugSymbols(ctx, t.debug)
	for _, tab := range []*symtab.Table{dt, b.table} {
		if tab == nil {
			continue
		}
		d, _ := tab.GrowDWARF(b.met)
		if b.inl != nil && b.inlTab == tab {
			if d == nil {
				b.inl = nil // the DWARF could not be read again
				continue
			}
			b.inl.regrown(d)
		}
	}
	b.met = b.met[:0]
}
