// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// exeSpec is one executable to watch, as the user named it: a name or a
// path. People name a process the way they started it or see it in ps,
// which is not always its executable's file: Debian's
// /usr/bin/redis-server is a symbolic link to redis-check-rdb, so the
// process runs /usr/bin/redis-check-rdb while its argv[0] (and the name
// ps shows) is redis-server. A spec therefore matches a process by:
//
//   - a name (no '/'): the file name of the executable, of argv[0], or the
//     process's comm (which the kernel cuts to 15 bytes);
//   - a path: the executable's resolved path, or argv[0] when it is that
//     path as given (the symbolic link a service was started through), or
//     the given path resolved.
type exeSpec struct {
	typed string // as given
	name  string // a name: the name; a path: "" (see path, real)
	path  string // absolute, symbolic links kept
	real  string // path with symbolic links resolved (path when that fails)
}

func newExeSpec(e string) exeSpec {
	s := exeSpec{typed: e}
	if !strings.ContainsRune(e, '/') {
		s.name = e
		return s
	}
	s.path = e
	if abs, err := filepath.Abs(e); err == nil {
		s.path = abs
	}
	s.real = s.path
	if r, err := filepath.EvalSymlinks(s.path); err == nil {
		s.real = r
	}
	return s
}

// service is the service name the spec gives its processes: what the user
// typed, its file name for a path.
func (s exeSpec) service() string { return filepath.Base(s.typed) }

// byExe reports whether the process's executable (resolved path) matches.
func (s exeSpec) byExe(exe string) bool {
	if s.name != "" {
		return filepath.Base(exe) == s.name
	}
	return exe == s.real || exe == s.path
}

// byNames reports whether the process's argv[0] or comm matches.
func (s exeSpec) byNames(n procNames) bool {
	if s.name != "" {
		comm := s.name
		if len(comm) > 15 {
			comm = comm[:15]
		}
		return (n.argv0 != "" && filepath.Base(n.argv0) == s.name) || n.comm == comm
	}
	return n.argv0 != "" && (n.argv0 == s.typed || n.argv0 == s.path)
}

// procNames are the names a process goes by besides its executable.
type procNames struct {
	start       uint64 // the process's start time, telling a reused PID apart
	exe         string // the executable they were read with (an exec changes them)
	argv0, comm string
}

// match returns the spec (as given) a process matches, by its executable
// first (one readlink), then by argv[0] and comm, which are read only for
// the processes whose executable matched no spec and cached per process
// and executable.
func (w *watcher) match(pid int) (string, bool) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", false // gone, or a kernel thread
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	for _, s := range w.exes {
		if s.byExe(exe) {
			return s.service(), true
		}
	}
	if w.namesSeen == nil {
		w.namesSeen = map[int]bool{}
	}
	w.namesSeen[pid] = true
	n, ok := w.names[pid]
	start, _, err := procStat(pid)
	if err != nil {
		return "", false
	}
	if !ok || n.start != start || n.exe != exe {
		n = readNames(pid)
		n.start, n.exe = start, exe
		w.names[pid] = n
	}
	for _, s := range w.exes {
		if s.byNames(n) {
			return s.service(), true
		}
	}
	return "", false
}

// readNames reads a process's argv[0] and comm ("" when unreadable).
func readNames(pid int) procNames {
	var n procNames
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		n.argv0 = string(b)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		n.comm = strings.TrimSuffix(string(b), "\n")
	}
	return n
}

// nothingMatches says which executables no process matches, and how they
// were looked for.
func (w *watcher) nothingMatches() string {
	var names []string
	for _, s := range w.exes {
		names = append(names, s.typed)
	}
	return fmt.Sprintf("no process runs %s (matched against each process's executable path and name, argv[0] and comm)", strings.Join(names, ", "))
}
