// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"context"
	"os"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/unwind"
)

// binFile is one mapped file with its symbol table, and what was read of
// its separate debug file.
type binFile struct {
	path  string // as the process names it
	table *symtab.Table
	err   error
	// f stays open so that DWARF and code can be read at the end, after
	// the process may have exited.
	f *os.File
	// vdsoNames, for a vDSO, names each function by its __vdso_ alias
	// (by start address).
	vdsoNames map[uint64]string
	// dbg holds the symbols of the separate debug file found by build ID
	// (debugSymbols), at debugPath.
	dbg       *symtab.Table
	dbgErr    error
	dbgDone   bool
	debugPath string
	// inl reads the inlined calls from the DWARF of the debug file, else
	// of the file itself (nil when neither has any).
	inl     *inliner
	inlDone bool
	inlTab  *symtab.Table // whose DWARF inl reads
	// met are the file's virtual addresses Image.Meet was told of since
	// the last Procs.GrowTables.
	met []uint64
	// expect are the file's virtual addresses Image.Expect was told of,
	// handed to its tables when first located (limitDWARF).
	expect  []uint64
	limited bool
	// cfi is the file's call frame information (read on first use).
	cfi     *unwind.Table
	cfiErr  error
	cfiDone bool
	// goTLS is a Go executable's runtime.tlsg offset (gocgo.go).
	goTLS              int64
	goTLSOK, goTLSDone bool
}

// open reads the symbols of the file at p and keeps it open.
func (b *binFile) open(p string) error {
	tab, err := symtab.Open(p)
	if err != nil {
		return err
	}
	b.table = tab
	if fh, err := os.Open(p); err == nil {
		b.f = fh
	}
	return nil
}

// wantsDebug reports whether the file's separate debug file is looked
// for: the file has a build ID and no .symtab of its own, as distributions
// strip it (local functions such as glibc's __libc_start_call_main or
// __strchr_evex are only named in the debug file, which holds the DWARF
// too: lines and inlined calls).
func (b *binFile) wantsDebug() bool {
	if b.table == nil || b.table.BuildID == "" {
		return false
	}
	for _, s := range b.table.Symbols() {
		if s.Source == symtab.FromSymtab {
			return false // the file has its own full symbol table
		}
	}
	return true
}

// debugSymbols returns the symbols of the file's separate debug file, found
// by build ID through fd (wantsDebug), a download from a debuginfod server
// bounded by ctx. It looks once per file, unless a download was cut short
// by ctx (the next symbolization tries again); nil when there is none.
func (b *binFile) debugSymbols(ctx context.Context, fd *debuginfo.Finder) *symtab.Table {
	if b.dbgDone {
		return b.dbg
	}
	if fd == nil || !b.wantsDebug() {
		b.dbgDone = true
		return nil
	}
	p, err := fd.Find(ctx, b.table.BuildID)
	if err != nil {
		b.dbgErr = err
		b.dbgDone = ctx.Err() == nil
		return nil
	}
	b.dbgDone = true
	t, err := symtab.Open(p)
	if err != nil {
		b.dbgErr = err
		return nil
	}
	b.debugPath, b.dbg = p, t
	return t
}

// localDebugPath is the separate debug file's path when found already or
// on this machine: unwinding runs while records are drained, where a
// download from a debuginfod server (debugSymbols, at symbolization) would
// stall the drain.
func (b *binFile) localDebugPath(fd *debuginfo.Finder) string {
	if b.dbgDone || fd == nil || !b.wantsDebug() {
		return b.debugPath
	}
	// The machine's own directories only (no URLs, no lock to share).
	local := debuginfo.Finder{DebugDirs: fd.DebugDirs, CacheDir: fd.CacheDir}
	p, err := local.Find(context.Background(), b.table.BuildID)
	if err != nil {
		return ""
	}
	return p
}

// limitDWARF hands the addresses expected (Image.Expect) to the tables
// whose DWARF is read for lines and inlined calls, once, before it is
// read.
func (b *binFile) limitDWARF() {
	if b.limited || b.expect == nil {
		return
	}
	b.limited = true
	for _, t := range []*symtab.Table{b.dbg, b.table} {
		if t != nil {
			t.LimitDWARF(b.expect)
		}
	}
	b.expect = nil
}

// inliner returns the reader of the inlined calls: from the separate debug
// file's DWARF when one was found (the file itself then has none), else
// from the file's. The DWARF is the symbol table's, read once for lines
// and inlined calls both. It is built once, after debugSymbols looked; nil
// when there is no DWARF.
func (b *binFile) inliner() *inliner {
	if b.inlDone {
		return b.inl
	}
	b.inlDone = true
	for _, t := range []*symtab.Table{b.dbg, b.table} {
		if t == nil {
			continue
		}
		if d, err := t.DWARF(); err == nil {
			b.inl, b.inlTab = newInliner(d), t
			return b.inl
		}
	}
	return nil
}

// cfiTable returns the file's call frame information (with its separate
// debug file's .debug_frame, when found), read once.
func (b *binFile) cfiTable(fd *debuginfo.Finder) *unwind.Table {
	if b.cfiDone {
		return b.cfi
	}
	b.cfiDone = true
	if b.f == nil {
		return nil
	}
	t, err := unwind.NewTableDebug(b.f, b.localDebugPath(fd))
	if t == nil {
		b.cfiErr = err
		return nil
	}
	b.cfi, b.cfiErr = t, err
	return t
}

// close releases the file's symbol tables and open files.
func (b *binFile) close() {
	if b.table != nil {
		b.table.Close()
	}
	if b.dbg != nil {
		b.dbg.Close()
	}
	if b.f != nil {
		b.f.Close()
	}
}
