package loader

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/unwind"
)

// readMaps returns the file-backed executable mappings of process pid.
func readMaps(pid int) ([]proc.Mapping, error) {
	all, err := proc.ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, m := range all {
		if strings.HasPrefix(m.Path, "/") {
			out = append(out, m)
		}
	}
	return out, nil
}

// procMaps symbolizes addresses of one process from its last readable
// memory maps (the process may have exited when stacks are symbolized).
type procMaps struct {
	pid    int
	mu     sync.Mutex
	maps   []proc.Mapping
	tables map[string]*symtab.Table // nil entry: unreadable
	debug  map[string]*symtab.Table // separate debug files' symbols; nil entry: none
	// debugPath are the separate debug files found (debugTable).
	debugPath map[string]string
	// cfi are the files' call frame information (nil entry: none), mods
	// the maps with them (ustack.go); rereadAt when an address outside
	// them last had them reread.
	cfi      map[string]*unwind.Table
	mods     []unwind.Module
	rereadAt time.Time
}

func newProcMaps(pid int) *procMaps {
	return &procMaps{pid: pid, tables: map[string]*symtab.Table{}}
}

// refresh rereads the maps; on failure (process gone) the last ones stay.
func (p *procMaps) refresh() {
	m, err := readMaps(p.pid)
	if err != nil || len(m) == 0 {
		return
	}
	p.mu.Lock()
	p.setMaps(m)
	p.mu.Unlock()
}

// setMaps replaces the maps, with p.mu held.
func (p *procMaps) setMaps(m []proc.Mapping) {
	p.maps = m
	p.mods = nil
	// Open the files now: once the process exits, /proc/PID/root is gone.
	for _, mm := range m {
		p.table(mm.Path)
	}
}

func (p *procMaps) table(path string) *symtab.Table {
	if t, ok := p.tables[path]; ok {
		return t
	}
	t, err := symtab.Open(proc.RootPath(p.pid, path))
	if err != nil {
		t = nil
	}
	p.tables[path] = t
	return t
}

// lookup symbolizes pc and reports whether it lies in an executable file
// mapping: a frame-pointer walk through code that keeps no frame pointer
// reads data (text, counters) as return addresses, which map nowhere.
func (p *procMaps) lookup(pc uint64) (Frame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := Frame{PC: pc}
	for _, m := range p.maps {
		if pc < m.Start || pc >= m.Limit {
			continue
		}
		f.File = m.Path
		f.Offset = pc - m.Start + m.Offset
		t := p.table(m.Path)
		if t == nil {
			return f, true
		}
		// A return address points after the call: look up pc-1.
		if va, ok := t.VAddr(pc - 1 - m.Start + m.Offset); ok {
			if name, _, ok := t.Func(va); ok {
				f.Func = name
			}
			if dt := p.debugTable(m.Path, t); dt != nil {
				if name, _, ok := dt.Func(va); ok {
					if i := strings.Index(name, "@"); i > 0 {
						name = name[:i] // "__libc_start_main@@GLIBC_2.34"
					}
					f.Func = name
				}
			}
		}
		return f, true
	}
	return f, p.maps == nil
}

// debugTable returns the symbols of the separate debug file of a file
// without its own .symtab (found by build ID), or nil.
func (p *procMaps) debugTable(path string, t *symtab.Table) *symtab.Table {
	if d, ok := p.debug[path]; ok {
		return d
	}
	if p.debug == nil {
		p.debug = map[string]*symtab.Table{}
	}
	p.debug[path] = nil
	if t.BuildID == "" {
		return nil
	}
	for _, s := range t.Symbols() {
		if s.Source == symtab.FromSymtab {
			return nil
		}
	}
	dp, err := debuginfo.FromEnv().Find(context.Background(), t.BuildID)
	if err != nil {
		return nil
	}
	if d, err := symtab.Open(dp); err == nil {
		p.debug[path] = d
		if p.debugPath == nil {
			p.debugPath = map[string]string{}
		}
		p.debugPath[path] = dp
	}
	return p.debug[path]
}

// close releases the symbol tables.
func (p *procMaps) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tables {
		if t != nil {
			t.Close()
		}
	}
	p.tables = map[string]*symtab.Table{}
	for _, t := range p.debug {
		if t != nil {
			t.Close()
		}
	}
	p.debug = nil
}
