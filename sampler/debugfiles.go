package sampler

import (
	"context"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/symtab"
)

// debugSymbols returns the symbols of the file's separate debug file (found
// by build ID through fd) when the file has no .symtab of its own, as
// distributions strip it: local functions such as glibc's
// __libc_start_call_main or __strchr_evex are only named there. It looks
// once per file; nil when there is none.
func (b *binFile) debugSymbols(fd *debuginfo.Finder) *symtab.Table {
	if b.dbgDone {
		return b.dbg
	}
	b.dbgDone = true
	if fd == nil || b.table == nil || b.table.BuildID == "" {
		return nil
	}
	for _, s := range b.table.Symbols() {
		if s.Source == symtab.FromSymtab {
			return nil // the file has its own full symbol table
		}
	}
	p, err := fd.Find(context.Background(), b.table.BuildID)
	if err != nil {
		b.dbgErr = err
		return nil
	}
	t, err := symtab.Open(p)
	if err != nil {
		b.dbgErr = err
		return nil
	}
	b.debugPath, b.dbg = p, t
	return t
}
