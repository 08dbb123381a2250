package loader

import (
	"strings"
	"sync"

	"github.com/tickprof/tickprof/internal/proc"

	"github.com/tickprof/tickprof/symtab"
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
	p.maps = m
	// Open the files now: once the process exits, /proc/PID/root is gone.
	for _, mm := range m {
		p.table(mm.Path)
	}
	p.mu.Unlock()
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

func (p *procMaps) symbolize(pc uint64) Frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := Frame{PC: pc}
	for _, m := range p.maps {
		if pc < m.Start || pc >= m.Limit {
			continue
		}
		f.File = m.Path
		t := p.table(m.Path)
		if t == nil {
			return f
		}
		// A return address points after the call: look up pc-1.
		if va, ok := t.VAddr(pc - 1 - m.Start + m.Offset); ok {
			if name, _, ok := t.Func(va); ok {
				f.Func = name
			}
		}
		return f
	}
	return f
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
}
