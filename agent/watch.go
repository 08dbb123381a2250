package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/symtab"
)

// procInfo is what the agent knows of a watched process.
type procInfo struct {
	pid     int
	exe     string // resolved path of /proc/PID/exe, " (deleted)" removed
	buildID string // GNU build ID, else Go build ID, else ""
	start   uint64 // start time in clock ticks (tells a reused PID apart)
	seen    time.Time
}

// watcher keeps the watch set: the given PIDs while they live, every
// process whose executable matches, or none (sample all).
type watcher struct {
	pids   []int
	exes   []string // names (no '/') or absolute paths
	self   int
	known  map[int]procInfo
	builds map[string]string // exe path+inode -> build ID cache
	// keep is how long an exited process is remembered, so that its last
	// window is still labelled.
	keep time.Duration
}

func newWatcher(pids []int, exes []string, keep time.Duration) *watcher {
	w := &watcher{pids: pids, self: os.Getpid(), known: map[int]procInfo{}, builds: map[string]string{}, keep: keep}
	for _, e := range exes {
		if strings.ContainsRune(e, '/') {
			if abs, err := filepath.Abs(e); err == nil {
				e = abs
			}
			if real, err := filepath.EvalSymlinks(e); err == nil {
				e = real
			}
		}
		w.exes = append(w.exes, e)
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
		if len(w.exes) > 0 {
			// The executable first: reading it is cheaper than the stat
			// line, which only matching processes need.
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil || !w.matches(strings.TrimSuffix(exe, " (deleted)")) {
				continue
			}
		}
		info, ok := w.info(pid)
		if !ok {
			continue
		}
		seen[pid] = true
		out = append(out, info)
	}
	for pid, p := range w.known {
		if !seen[pid] && time.Since(p.seen) > w.keep {
			delete(w.known, pid)
		}
	}
	return out, nil
}

// info reads (or recalls) what is known of a live process; false when it
// is gone, a zombie or a kernel thread. The executable is read on every
// call: a process seen between fork and exec changes it.
func (w *watcher) info(pid int) (procInfo, bool) {
	start, state, ok := procStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return procInfo{}, false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return procInfo{}, false // kernel thread, or gone
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if p, ok := w.known[pid]; ok && p.start == start && p.exe == exe {
		p.seen = time.Now()
		w.known[pid] = p
		return p, true
	}
	p := procInfo{pid: pid, exe: exe, start: start, buildID: w.buildID(pid, exe), seen: time.Now()}
	w.known[pid] = p
	return p, true
}

// recall returns what was known of a process, alive or recently exited.
func (w *watcher) recall(pid int) (procInfo, bool) {
	if p, ok := w.info(pid); ok {
		return p, true
	}
	p, ok := w.known[pid]
	return p, ok
}

// matches reports whether a process runs one of the executables: a name
// matches the executable's file name, a path its resolved path.
func (w *watcher) matches(exe string) bool {
	for _, e := range w.exes {
		if strings.ContainsRune(e, '/') {
			if exe == e {
				return true
			}
		} else if filepath.Base(exe) == e {
			return true
		}
	}
	return false
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

// procStat returns a process's start time (field 22) and state (field 3).
func procStat(pid int) (start uint64, state byte, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	fields := strings.Fields(string(b[i+2:]))
	if len(fields) < 20 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return start, fields[0][0], true
}

// mayObserve reports whether this process may sample pid: root may; another
// user only its own processes.
func mayObserve(pid int) error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	defer f.Close()
	euid := os.Geteuid()
	if euid == 0 {
		return nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 && fs[0] == strconv.Itoa(euid) {
				return nil
			}
			return fmt.Errorf("process %d belongs to another user", pid)
		}
	}
	return fmt.Errorf("process %d: no Uid in its status", pid)
}
