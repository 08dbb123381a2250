// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symtab"
)

// procInfo is what the agent knows of a watched process.
type procInfo struct {
	pid     int
	exe     string // resolved path of /proc/PID/exe, " (deleted)" removed
	buildID string // GNU build ID, else Go build ID, else ""
	start   uint64 // start time in clock ticks (tells a reused PID apart)
	seen    time.Time
	// checked is when the agent's access to it was last checked (zero:
	// never).
	checked time.Time
	// match is the executable as the user named it that the process
	// matched ("" when watched by PID or under all).
	match string
	// cgroup is the process's cgroup and what it says (read at each scan:
	// a process can be moved).
	cgroup cgroupInfo
}

// watcher keeps the watch set: the given PIDs while they live, every
// process whose executable matches, or none (sample all).
type watcher struct {
	pids []int
	exes []exeSpec
	// names caches the argv[0] and comm of processes whose executable did
	// not match, by PID.
	names     map[int]procNames
	namesSeen map[int]bool
	self      int
	known     map[int]procInfo
	builds    map[string]string // exe path+inode -> build ID cache
	// keep is how long an exited process is remembered, so that its last
	// window is still labelled.
	keep time.Duration
	// access checks that the agent may observe a process (proc.CheckAccess;
	// tests replace it); denied remembers the processes it refused, by
	// start time, so that each refusal is said once; recheck makes every
	// scan check every process again (the caller cannot observe every
	// process, so a credential change can take that right away).
	access  func(pid int) error
	denied  map[int]uint64
	recheck bool
	// logf says which processes are refused, or no longer observed.
	logf func(format string, args ...any)
}

func newWatcher(pids []int, exes []string, keep time.Duration) *watcher {
	w := &watcher{pids: pids, self: os.Getpid(), known: map[int]procInfo{}, builds: map[string]string{}, keep: keep,
		access: proc.CheckAccess, denied: map[int]uint64{}, recheck: !proc.Self().Ptrace, logf: func(string, ...any) {},
		names: map[int]procNames{}}
	for _, e := range exes {
		w.exes = append(w.exes, newExeSpec(e))
	}
	return w
}

// scan returns the watched processes alive now, oldest PID first. Exited
// processes leave the set; with executables to match, /proc is read anew.
func (w *watcher) scan() ([]procInfo, error) {
	var pids []int
	if len(w.exes) > 0 {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return nil, fmt.Errorf("read /proc: %w", err)
		}
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil && pid != w.self {
				pids = append(pids, pid)
			}
		}
	} else {
		pids = w.pids
	}
	seen := map[int]bool{}
	var out []procInfo
	for _, pid := range pids {
		match := ""
		if len(w.exes) > 0 {
			var ok bool
			if match, ok = w.match(pid); !ok {
				continue
			}
		}
		info, ok := w.info(pid)
		if !ok {
			continue
		}
		info.match = match
		if !w.allowed(info) {
			continue
		}
		seen[pid] = true
		out = append(out, info)
	}
	for pid := range w.names {
		if !seen[pid] && !w.namesSeen[pid] {
			delete(w.names, pid)
		}
	}
	w.namesSeen = nil
	for pid, p := range w.known {
		if !seen[pid] && time.Since(p.seen) > w.keep {
			delete(w.known, pid)
		}
	}
	return out, nil
}

// allowed reports whether the agent may observe the process: checked when
// it is new or exec'd (its credentials may have changed with its program),
// and at every scan when the agent cannot observe every process. A
// refusal is logged once per process; a process that was watched is then
// dropped from the watch set.
func (w *watcher) allowed(p procInfo) bool {
	old, known := w.known[p.pid]
	fresh := !known || old.start != p.start || old.exe != p.exe || old.checked.IsZero()
	if !fresh && !w.recheck {
		return true
	}
	err := w.access(p.pid)
	if err == nil {
		delete(w.denied, p.pid)
		p.checked = time.Now()
		w.known[p.pid] = p
		return true
	}
	if s, ok := w.denied[p.pid]; !ok || s != p.start {
		if known && !old.checked.IsZero() {
			w.logf("process %d (%s): no longer observed, access lost: %v", p.pid, p.exe, err)
		} else {
			w.logf("process %d (%s): not watched: %v", p.pid, p.exe, err)
		}
		w.denied[p.pid] = p.start
	}
	delete(w.known, p.pid)
	return false
}

// info reads (or recalls) what is known of a live process; false when it
// is gone, a zombie or a kernel thread. The executable is read on every
// call: a process seen between fork and exec changes it. When /proc cannot
// be read for another reason (the agent is out of file descriptors), what
// was known stands: a watched process is not dropped for the agent's own
// failure.
func (w *watcher) info(pid int) (procInfo, bool) {
	start, state, err := procStat(pid)
	if err == nil && (state == 'Z' || state == 'X') {
		return procInfo{}, false
	}
	var exe string
	if err == nil {
		exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	}
	if err != nil {
		if p, ok := w.known[pid]; ok && !gone(err) {
			return p, true
		}
		return procInfo{}, false // kernel thread (no exe), or gone
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	cg := readCgroup(pid)
	if p, ok := w.known[pid]; ok && p.start == start && p.exe == exe {
		p.seen = time.Now()
		if cg != "" && cg != p.cgroup.path {
			p.cgroup = parseCgroup(cg)
		}
		w.known[pid] = p
		return p, true
	}
	return procInfo{pid: pid, exe: exe, start: start, buildID: w.buildID(pid, exe), seen: time.Now(), cgroup: parseCgroup(cg)}, true
}

// gone reports whether reading a process's /proc entry failed because the
// process is gone (or is a kernel thread, which has no executable).
func gone(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) || errors.Is(err, errBadStat)
}

// recall returns what was known of a process, alive or recently exited.
func (w *watcher) recall(pid int) (procInfo, bool) {
	if p, ok := w.info(pid); ok {
		if _, known := w.known[pid]; !known {
			w.known[pid] = p
		}
		return p, true
	}
	p, ok := w.known[pid]
	return p, ok
}

// buildID reads the executable's build ID through /proc/PID/exe (the file
// the process runs, even if replaced on disk), cached by path and inode.
func (w *watcher) buildID(pid int, exe string) string {
	var st unix.Stat_t
	path := fmt.Sprintf("/proc/%d/exe", pid)
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", exe, st.Dev, st.Ino)
	if id, ok := w.builds[key]; ok {
		return id
	}
	id, _ := readBuildID(path)
	w.builds[key] = id
	return id
}

// readBuildID returns an ELF file's GNU build ID (hex), or its Go build ID.
func readBuildID(path string) (string, error) {
	gnu, gobuild, err := symtab.FileBuildIDs(path)
	if err != nil {
		return "", err
	}
	if gnu != "" {
		return gnu, nil
	}
	if gobuild != "" {
		return gobuild, nil
	}
	return "", errors.New("no build ID note")
}

// errBadStat is a /proc/PID/stat line that cannot be parsed.
var errBadStat = errors.New("unreadable stat line")

// procStat returns a process's start time (field 22) and state (field 3).
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, errBadStat
	}
	fields := strings.Fields(string(b[i+2:]))
	if len(fields) < 20 {
		return 0, 0, errBadStat
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, errBadStat
	}
	return start, fields[0][0], nil
}
