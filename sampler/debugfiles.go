package sampler

import (
	"context"
	"time"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/symtab"
)

// debugSymbols returns the symbols of the file's separate debug file (found
// by build ID through fd) when the file has no .symtab of its own, as
// distributions strip it: local functions such as glibc's
// __libc_start_call_main or __strchr_evex are only named there. It looks
// once per file, unless a download was cut short by ctx (the next
// symbolization tries again); nil when there is none.
func (b *binFile) debugSymbols(ctx context.Context, fd *debuginfo.Finder) *symtab.Table {
	if b.dbgDone {
		return b.dbg
	}
	if fd == nil || b.table == nil || b.table.BuildID == "" {
		b.dbgDone = true
		return nil
	}
	for _, s := range b.table.Symbols() {
		if s.Source == symtab.FromSymtab {
			b.dbgDone = true
			return nil // the file has its own full symbol table
		}
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

// downloadBudget bounds the time one symbolization spends downloading
// debug files from debuginfod servers: the output must not wait on a slow
// server (a file not downloaded in time is looked for again at the next
// symbolization, and found in the cache once a download completes).
const downloadBudget = 4 * time.Second

// downloads is the context debug-file downloads run under: the caller's
// (Record and RunWindows set it), so that the caller's interrupt cancels
// them.
func (s *Session) downloads() context.Context {
	if s.dlCtx != nil {
		return s.dlCtx
	}
	return context.Background()
}
