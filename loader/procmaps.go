package loader

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/tickprof/tickprof/symtab"

	"golang.org/x/sys/unix"
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
	p.mu.Lock()
	defer p.mu.Unlock()
	f := Frame{PC: pc}
	for _, m := range p.maps {
		if pc < m.start || pc >= m.end {
			continue
		}
		f.File = m.path
		t := p.table(m.path)
		if t == nil {
			return f
		}
		// A return address points after the call: look up pc-1.
		if va, ok := t.VAddr(pc - 1 - m.start + m.off); ok {
			if name, _, ok := t.Func(va); ok {
				f.Func = name
			}
		}
		return f
	}
	return f
}

// procRootPath returns path as seen by process pid (through its root, so
// that processes in containers work); pid 0 means this process.
//
// When the process has the same root as tickprof the path is returned as
// is: the kernel resolves a /proc/PID/root path only for a caller that
// passes the ptrace access check, which a tickprof run with file
// capabilities (not dumpable, so neither is a child before its exec) does
// not pass for its own held child. A root that cannot be compared is taken
// to be tickprof's own.
func procRootPath(pid int, path string) string {
	if pid == 0 || sameRoot(pid) {
		return path
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path)
}

// sameRoot reports whether process pid has tickprof's root directory, or
// its root cannot be read.
func sameRoot(pid int) bool {
	var theirs, ours unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/root", pid), &theirs) != nil || unix.Stat("/", &ours) != nil {
		return true
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino
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
