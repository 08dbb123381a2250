// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"context"
	"strings"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symtab"
)

// Frame is one function at an address, with its position: the source file
// and line of the address in it, or of the call it made there when the
// function it called was inlined (File is "" and Line 0 when unknown).
type Frame struct {
	Function string
	File     string
	Line     int64
}

// Location is one address of a process image, symbolized.
type Location struct {
	// Addr is the address in the process.
	Addr uint64
	// Mapping indexes the image's Maps: the executable mapping holding
	// Addr, or -1 for an address outside every one.
	Mapping int
	// Path is the mapped file as the process names it ("[vdso]" for the
	// vDSO; "" outside every mapping); Offset is Addr's offset in it.
	Path   string
	Offset uint64
	// Frames are the functions at Addr, innermost first, the way
	// `addr2line -i` prints them: the bodies inlined there, each with its
	// own name and position, then the function that holds Addr at the
	// call of the outermost inlined body (or at Addr when nothing was
	// inlined). Empty when no symbol holds Addr.
	Frames []Frame
	// Lines says the file had line information for Addr; Inlines that
	// its inlined calls were read (from its DWARF or its debug file's).
	Lines, Inlines bool
	// PerfMap says Frames came from the process's perf map file (JIT
	// code in an anonymous mapping; perfmap.go).
	PerfMap bool
}

// Function is the name of the function that holds the address (the last
// frame), or "".
func (l Location) Function() string {
	if len(l.Frames) == 0 {
		return ""
	}
	return l.Frames[len(l.Frames)-1].Function
}

// Mapping is one executable mapping of an image with what is known of its
// file.
type Mapping struct {
	proc.Mapping
	// File is the mapped file's path as the process names it, without
	// " (deleted)" ("[vdso]" for the vDSO).
	File string
	// BuildID is the file's GNU build ID, else its Go build ID ("" when
	// unknown).
	BuildID string
	// Symbolized says the file's symbols were read.
	Symbolized bool
}

// Find returns the index in Maps of the mapping holding addr.
func (img *Image) Find(addr uint64) (int, bool) {
	return proc.FindMapping(img.maps, addr)
}

// Mapping describes mapping i of Maps.
func (img *Image) Mapping(i int) Mapping {
	m := Mapping{Mapping: img.maps[i], File: img.maps[i].Path}
	if b := img.bins[i]; b != nil {
		m.File = b.path
		if b.table != nil {
			m.BuildID = b.table.BuildID
			if m.BuildID == "" {
				m.BuildID = b.table.GoBuildID
			}
			m.Symbolized = true
		}
	}
	if img.pm != nil && img.unnamedCode(i) {
		if img.pm.f == nil {
			img.pm.update(lookupRetry)
		}
		m.Symbolized = img.pm.f != nil // named from the perf map
	}
	return m
}

// Locate is LocateContext without a context: a debug file's download is
// bounded only by the Finder's own timeouts.
func (img *Image) Locate(addr uint64, leaf bool) Location {
	return img.LocateContext(context.Background(), addr, leaf)
}

// LocateContext symbolizes addr: a leaf address is the instruction itself,
// any other a return address, whose call is the instruction before it.
// Functions are named from the mapped file's symbols or, for a file
// without its own .symtab, its separate debug file's (found by build ID;
// ctx bounds and cancels its download, and a file whose download it cut
// short is looked for again by the next call); lines and inlined calls
// come from the DWARF of the same file.
func (img *Image) LocateContext(ctx context.Context, addr uint64, leaf bool) Location {
	mi, ok := img.Find(addr)
	if !ok {
		return Location{Addr: addr, Mapping: -1}
	}
	m, bin := img.maps[mi], img.bins[mi]
	loc := Location{Addr: addr, Mapping: mi, Path: m.Path, Offset: addr - m.Start + m.Offset}
	if bin != nil {
		loc.Path = bin.path
		if bin.table != nil {
			look := addr
			if !leaf {
				look--
			}
			if va, ok := bin.table.VAddr(look - m.Start + m.Offset); ok {
				bin.locate(ctx, &loc, va, img.t.debug)
			}
		}
	}
	if len(loc.Frames) == 0 {
		look := addr
		if !leaf {
			look--
		}
		img.perfLocate(&loc, mi, look)
	}
	if len(loc.Frames) == 0 && m.Path == VDSOPath {
		// Unnamed vDSO code is one function, not one per address.
		loc.Frames = []Frame{{Function: VDSOPath}}
	}
	return loc
}

// Expect says that addr (a leaf or a return address, as LocateContext
// takes it) will be located: a file told of every address it will be
// asked about before its first Locate reads the DWARF of the compile
// units that hold them only (symtab.Table.LimitDWARF), instead of every
// unit (for glibc's debug file, 20 MiB of a sampling run's peak). Its
// lines and inlined calls at addresses not told of may then be missing:
// a caller that locates more (a window after a window) must not call it.
func (img *Image) Expect(addr uint64, leaf bool) {
	mi, ok := img.Find(addr)
	if !ok {
		return
	}
	m, bin := img.maps[mi], img.bins[mi]
	if bin == nil || bin.table == nil || bin.limited {
		return
	}
	look := addr
	if !leaf {
		look--
	}
	if va, ok := bin.table.VAddr(look - m.Start + m.Offset); ok {
		bin.expect = append(bin.expect, va)
	}
}

// locate fills loc's frames for the file's virtual address va, its debug
// file downloaded under ctx.
func (b *binFile) locate(ctx context.Context, loc *Location, va uint64, fd *debuginfo.Finder) {
	tab := b.table
	if dt := b.debugSymbols(ctx, fd); dt != nil {
		if _, _, ok := dt.Func(va); ok {
			tab = dt
		}
	}
	name, start, ok := tab.Func(va)
	if !ok {
		return
	}
	b.limitDWARF()
	if tab != b.table {
		// Debug files' .symtab spells versioned aliases
		// "__libc_start_main@@GLIBC_2.34".
		if i := strings.Index(name, "@"); i > 0 {
			name = name[:i]
		}
	}
	if n, ok := b.vdsoNames[start]; ok {
		name = n
	}
	fr := Frame{Function: name}
	if file, line, ok := tab.Line(va); ok {
		fr.File, fr.Line = file, int64(line)
		loc.Lines = true
	}
	var inl []inlineFrame
	if in := b.inliner(); in != nil {
		loc.Inlines = true
		inl = in.frames(va)
	}
	loc.Frames = expandInlines(fr, inl, b.table.IsGo)
}

// expandInlines turns the function holding an address, at the address's
// line (fr), and the inlined bodies the address lies in (inl, innermost
// first, each with the position of its call in its caller) into the frames
// at the address: the innermost body at the address's own line, each
// enclosing one at the call of the body it holds, and the real function at
// the outermost call.
func expandInlines(fr Frame, inl []inlineFrame, isGo bool) []Frame {
	out := make([]Frame, 0, len(inl)+1)
	file, line := fr.File, fr.Line
	for _, f := range inl {
		name := f.Function
		if isGo {
			name = symtab.GoDisplayName(name)
		}
		out = append(out, Frame{Function: name, File: file, Line: line})
		file, line = f.File, f.Line
	}
	return append(out, Frame{Function: fr.Function, File: file, Line: line})
}
