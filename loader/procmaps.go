package loader

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tickprof/tickprof/debuginfo"
	"github.com/tickprof/tickprof/symtab"
)

// mapping is one file-backed executable mapping of /proc/PID/maps.
type mapping struct {
	start, end, off uint64
	path            string
}

// readMaps returns the executable file mappings of process pid.
func readMaps(pid int) ([]mapping, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// start-end perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || len(f[1]) < 3 || f[1][2] != 'x' {
			continue
		}
		se := strings.SplitN(f[0], "-", 2)
		if len(se) != 2 {
			continue
		}
		start, err1 := strconv.ParseUint(se[0], 16, 64)
		end, err2 := strconv.ParseUint(se[1], 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, mapping{start, end, off, strings.Join(f[5:], " ")})
	}
	return out, sc.Err()
}

// procMaps symbolizes addresses of one process from its last readable
// memory maps (the process may have exited when stacks are symbolized).
type procMaps struct {
	pid    int
	mu     sync.Mutex
	maps   []mapping
	tables map[string]*symtab.Table // nil entry: unreadable
	debug  map[string]*symtab.Table // separate debug files' symbols; nil entry: none
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
		p.table(mm.path)
	}
	p.mu.Unlock()
}

func (p *procMaps) table(path string) *symtab.Table {
	if t, ok := p.tables[path]; ok {
		return t
	}
	t, err := symtab.Open(procRootPath(p.pid, path))
	if err != nil {
		t = nil
	}
	p.tables[path] = t
	return t
}

func (p *procMaps) symbolize(pc uint64) Frame {
	f, _ := p.lookup(pc)
	return f
}

// lookup symbolizes pc and reports whether it lies in an executable file
// mapping: a frame-pointer walk through code that keeps no frame pointer
// reads data (text, counters) as return addresses, which map nowhere.
func (p *procMaps) lookup(pc uint64) (Frame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := Frame{PC: pc}
	for _, m := range p.maps {
		if pc < m.start || pc >= m.end {
			continue
		}
		f.File = m.path
		f.Offset = pc - m.start + m.off
		t := p.table(m.path)
		if t == nil {
			return f, true
		}
		// A return address points after the call: look up pc-1.
		if va, ok := t.VAddr(pc - 1 - m.start + m.off); ok {
			if name, _, ok := t.Func(va); ok {
				f.Func = name
			}
			if dt := p.debugTable(m.path, t); dt != nil {
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
	}
	return p.debug[path]
}

// procRootPath returns path as seen by process pid (through its root, so
// that processes in containers work); pid 0 means this process.
func procRootPath(pid int, path string) string {
	if pid == 0 {
		return path
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path)
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
