// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// MaxPerfMapBytes bounds how much of one process's perf map file is read:
// Node.js with --perf-basic-prof appends a line for every function it
// compiles, a long-running server some megabytes an hour.
const MaxPerfMapBytes = 64 << 20

// perfMapRetry spaces the attempts to open a perf map file that was not
// there (most processes with anonymous executable mappings write none)
// while samples are unwound, and the checks that the file was not replaced;
// lookupRetry spaces them while addresses are symbolized (at the end, when
// the file of a JVM that wrote it at exit has just appeared).
const (
	perfMapRetry = time.Second
	lookupRetry  = 50 * time.Millisecond
)

// perfMap is the perf map file of one process (/tmp/perf-PID.map, perf's
// convention for JIT compilers: "START SIZE NAME" per line, in hex, START
// in the process's address space): Node.js writes it with
// --perf-basic-prof, the JVM with -XX:+DumpPerfMapAtExit or `jcmd PID
// Compiler.perfmap`, CPython 3.12+ with -X perf. It names the code in the
// process's anonymous executable mappings, which have no file.
//
// It is found in the process's own root (/proc/PID/root, opened when its
// memory map was read, so that a JVM writing the file at exit and a
// container's /tmp are both reached) under the process's pid in its own
// pid namespace, and trusted only when it is a regular file reached
// without a symbolic link, owned by root or by one of the process's user
// IDs, and writable by no one else. It is read again when it grew.
type perfMap struct {
	pid, nspid int
	uids       []uint32 // the process's real, effective, saved and file-system user IDs
	gid        uint32   // its effective group ID
	root       *os.File // O_PATH descriptor of the process's root directory
	f          *os.File // the map file, once opened
	off        int64    // bytes parsed (whole lines)
	syms       []perfSym
	sorted     bool
	names      map[string]string // interned names
	err        error             // why the file was not read (the last attempt)
	tried      time.Time
	// mem reads the process's JIT code for the unwinder (code), opened
	// on first use; codes caches what was read by address.
	mem    *os.File
	memErr error
	codes  map[uint64][]byte
}

// perfSym is one line of a perf map: code at [start, end) named name; seq
// orders the lines (a later line wins where code was reused).
type perfSym struct {
	start, end uint64
	seq        uint32
	name       string
}

// newPerfMap notes the process's identity and opens its root directory
// (nil when the process cannot be read: it exited).
func newPerfMap(pid int) *perfMap {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	pm := &perfMap{pid: pid, nspid: pid, names: map[string]string{}}
	for _, line := range strings.Split(string(status), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		switch key {
		case "Uid":
			for _, s := range f {
				if u, err := strconv.ParseUint(s, 10, 32); err == nil {
					pm.uids = append(pm.uids, uint32(u))
				}
			}
		case "Gid":
			if len(f) > 1 {
				if g, err := strconv.ParseUint(f[1], 10, 32); err == nil {
					pm.gid = uint32(g)
				}
			}
		case "NSpid":
			// The last is the pid in the process's own namespace, the
			// one its perf map is named by.
			if len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
					pm.nspid = n
				}
			}
		}
	}
	if len(pm.uids) == 0 {
		return nil
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		pm.err = fmt.Errorf("open root directory of process %d: %w", pid, err)
		return pm
	}
	pm.root = os.NewFile(uintptr(fd), fmt.Sprintf("/proc/%d/root", pid))
	return pm
}

// path is the file's path in the process's root.
func (pm *perfMap) path() string { return fmt.Sprintf("/tmp/perf-%d.map", pm.nspid) }

// lookup names the code at addr from the file, reading what it gained
// since the last read when addr is not in what was read.
func (pm *perfMap) lookup(addr uint64) (string, bool) {
	if name, ok := pm.find(addr); ok {
		return name, true
	}
	if !pm.update(lookupRetry) {
		return "", false
	}
	return pm.find(addr)
}

// find looks addr up in what was read: the latest line whose range holds
// it.
func (pm *perfMap) find(addr uint64) (string, bool) {
	if !pm.sorted {
		sort.SliceStable(pm.syms, func(i, j int) bool { return pm.syms[i].start < pm.syms[j].start })
		pm.sorted = true
	}
	i := sort.Search(len(pm.syms), func(i int) bool { return pm.syms[i].start > addr })
	best := -1
	// Ranges overlap only where the JIT reused memory; a few lines back
	// is far enough to find the one that holds addr.
	for j := i - 1; j >= 0 && j >= i-16; j-- {
		s := pm.syms[j]
		if addr < s.end && (best < 0 || s.seq > pm.syms[best].seq) {
			best = j
		}
	}
	if best < 0 {
		return "", false
	}
	return pm.syms[best].name, true
}

// update opens the file if need be (at most once per retry) and reads what
// it gained; it reports whether anything new was read. A file replaced by another (`jcmd PID
// Compiler.perfmap` writes it anew) or cut shorter is read again from its
// start.
func (pm *perfMap) update(retry time.Duration) bool {
	if pm.root == nil || (!pm.tried.IsZero() && time.Since(pm.tried) < retry && pm.f == nil) {
		return false
	}
	if pm.f == nil || time.Since(pm.tried) >= retry {
		pm.tried = time.Now()
		f, err := pm.open()
		switch {
		case err != nil && pm.f == nil:
			pm.err = err
			return false
		case err == nil && (pm.f == nil || !sameFile(f, pm.f)):
			pm.reset(f)
		case err == nil:
			f.Close()
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(pm.f.Fd()), &st); err != nil {
		return false
	}
	if st.Size < pm.off {
		pm.reset(pm.f) // rewritten in place
	}
	if st.Size == pm.off {
		return false
	}
	if pm.off >= MaxPerfMapBytes {
		pm.err = fmt.Errorf("read %s of process %d: %w: only its first %d bytes were read", pm.path(), pm.pid, errPerfMapLarge, MaxPerfMapBytes)
		return false
	}
	n, err := pm.read(min(st.Size, MaxPerfMapBytes) - pm.off)
	if err != nil {
		pm.err = fmt.Errorf("read %s of process %d: %w", pm.path(), pm.pid, err)
	}
	return n > 0
}

// reset makes f the file read, from its start.
func (pm *perfMap) reset(f *os.File) {
	if pm.f != nil && pm.f != f {
		pm.f.Close()
	}
	pm.f, pm.err, pm.off, pm.syms, pm.sorted = f, nil, 0, nil, true
	pm.names = map[string]string{}
}

// sameFile reports whether a and b are the same file (device and inode).
func sameFile(a, b *os.File) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(int(a.Fd()), &sa) != nil || unix.Fstat(int(b.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// errPerfMapLarge says a perf map file was read only up to MaxPerfMapBytes.
var errPerfMapLarge = errors.New("file too large")

// open opens the perf map file in the process's root without following a
// symbolic link, and checks who may have written it.
func (pm *perfMap) open() (*os.File, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(int(pm.root.Fd()), strings.TrimPrefix(pm.path(), "/"), &how)
	if err != nil {
		return nil, fmt.Errorf("open %s of process %d: %w", pm.path(), pm.pid, err)
	}
	f := os.NewFile(uintptr(fd), pm.path())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s of process %d: %w", pm.path(), pm.pid, err)
	}
	if err := pm.trust(&st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s of process %d not read: %w", pm.path(), pm.pid, err)
	}
	return f, nil
}

// trust checks that the file is a regular file that only the process's
// user (or root) could have written.
func (pm *perfMap) trust(st *unix.Stat_t) error {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errors.New("not a regular file")
	}
	owned := st.Uid == 0
	for _, u := range pm.uids {
		owned = owned || st.Uid == u
	}
	if !owned {
		return fmt.Errorf("owned by user %d, not by the process's user", st.Uid)
	}
	if st.Mode&0o002 != 0 || (st.Mode&0o020 != 0 && st.Gid != pm.gid) {
		return errors.New("writable by other users")
	}
	return nil
}

// read parses up to n more bytes of the file from the last whole line read,
// and returns how many lines it added.
func (pm *perfMap) read(n int64) (int, error) {
	buf := make([]byte, n)
	got, err := pm.f.ReadAt(buf, pm.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	buf = buf[:got]
	// A line being written stays for the next read.
	end := bytes.LastIndexByte(buf, '\n') + 1
	if end == 0 && pm.off+int64(got) < MaxPerfMapBytes {
		return 0, nil
	}
	if end == 0 {
		end = len(buf)
	}
	pm.off += int64(end)
	added := 0
	sc := bufio.NewScanner(bytes.NewReader(buf[:end]))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		start, size, name, ok := parsePerfMapLine(sc.Text())
		if !ok || size == 0 {
			continue
		}
		if in, ok := pm.names[name]; ok {
			name = in
		} else {
			pm.names[name] = name
		}
		pm.syms = append(pm.syms, perfSym{start: start, end: start + size, seq: uint32(len(pm.syms)), name: name})
		added++
	}
	if added > 0 {
		pm.sorted = false
	}
	return added, sc.Err()
}

// parsePerfMapLine parses "START SIZE NAME": START and SIZE in hex, with or
// without 0x (the JVM writes it), NAME the rest of the line.
func parsePerfMapLine(line string) (start, size uint64, name string, ok bool) {
	a, rest, ok1 := strings.Cut(strings.TrimSpace(line), " ")
	b, name, ok2 := strings.Cut(strings.TrimLeft(rest, " "), " ")
	if !ok1 || !ok2 {
		return 0, 0, "", false
	}
	start, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	size, err2 := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
	name = strings.TrimSpace(name)
	if err1 != nil || err2 != nil || name == "" || start+size < start {
		return 0, 0, "", false
	}
	return start, size, name, true
}

// perfFrame turns a perf map name into a frame, reading the conventions of
// the JITs that write them:
//
//   - V8 (Node.js): "JS:*fib /app/x.js:3:14", the tier mark (~ interpreted,
//     ^ baseline, + Maglev, * optimized) dropped so that a function's tiers
//     are one function; other kinds ("Builtin:", "RegExp:") kept whole;
//   - CPython's -X perf trampolines: "py::fib:/app/x.py";
//   - anything else (the JVM's "void Foo.bar(int)") whole.
func perfFrame(name string) Frame {
	if rest, ok := strings.CutPrefix(name, "JS:"); ok {
		rest = strings.TrimLeft(rest, "~^+*")
		fn, loc, _ := strings.Cut(rest, " ")
		if fn == "" {
			fn = "(anonymous)"
		}
		fr := Frame{Function: fn}
		// loc is "FILE:LINE:COLUMN".
		if i := strings.LastIndexByte(loc, ':'); i > 0 {
			if j := strings.LastIndexByte(loc[:i], ':'); j > 0 {
				if line, err := strconv.ParseInt(loc[j+1:i], 10, 64); err == nil {
					fr.File, fr.Line = loc[:j], line
				}
			}
		}
		return fr
	}
	if rest, ok := strings.CutPrefix(name, "py::"); ok {
		fn, file, _ := strings.Cut(rest, ":")
		return Frame{Function: fn, File: file}
	}
	return Frame{Function: name}
}

// codeBytes is how much code is read at an address: the longest
// epilogue internal/unwind decodes.
const codeBytes = 12

// maxCodes bounds the code cache of one process.
const maxCodes = 1 << 16

// code reads the instructions at addr of the process's JIT code (for
// unwind.Module.Code), from /proc/PID/mem, once per address.
func (pm *perfMap) code(addr uint64) ([]byte, bool) {
	if b, ok := pm.codes[addr]; ok {
		return b, b != nil
	}
	if pm.mem == nil && pm.memErr == nil {
		pm.mem, pm.memErr = os.Open(fmt.Sprintf("/proc/%d/mem", pm.pid))
	}
	if pm.mem == nil {
		return nil, false
	}
	if pm.codes == nil || len(pm.codes) >= maxCodes {
		pm.codes = map[uint64][]byte{}
	}
	b := make([]byte, codeBytes)
	n, _ := pm.mem.ReadAt(b, int64(addr))
	if n == 0 {
		pm.codes[addr] = nil
		return nil, false
	}
	pm.codes[addr] = b[:n]
	return b[:n], true
}

// close releases the open descriptors.
func (pm *perfMap) close() {
	if pm.mem != nil {
		pm.mem.Close()
		pm.mem = nil
	}
	if pm.f != nil {
		pm.f.Close()
		pm.f = nil
	}
	if pm.root != nil {
		pm.root.Close()
		pm.root = nil
	}
}

// unnamedCode reports whether mapping i has no file symbols to name its
// code: anonymous memory (JIT code), or a file that is not ELF (a memfd).
func (img *Image) unnamedCode(i int) bool {
	if p := img.maps[i].Path; p == VDSOPath || strings.HasPrefix(p, "[vsyscall") {
		return false
	}
	b := img.bins[i]
	return b == nil || b.table == nil
}

// hasUnnamedCode reports whether any mapping has unnamed code.
func (img *Image) hasUnnamedCode() bool {
	for i := range img.maps {
		if img.unnamedCode(i) {
			return true
		}
	}
	return false
}

// perfLocate names the code at addr of mapping i from the process's perf
// map (look is addr, or addr-1 for a return address).
func (img *Image) perfLocate(loc *Location, i int, look uint64) {
	if img.pm == nil || !img.unnamedCode(i) {
		return
	}
	if name, ok := img.pm.lookup(look); ok {
		loc.Frames = []Frame{perfFrame(name)}
		loc.PerfMap = true
	}
}

// PerfMapErr is why the process's perf map file could not be read (nil
// when it was, or when the process has no anonymous executable code).
func (img *Image) PerfMapErr() error {
	if img.pm == nil {
		return nil
	}
	return img.pm.err
}

// perfMapFor returns the perf map of the image's process, made on its first
// read: its root directory and identity are taken while the process lives
// (a JIT maps its code later, and the map may be reread only once the
// process is exiting, when its root is gone).
func (t *Procs) perfMapFor(img *Image) *perfMap {
	if pm, ok := t.pmaps[img.pid]; ok {
		return pm
	}
	pm := newPerfMap(img.pid)
	if pm != nil {
		t.pmaps[img.pid] = pm
		t.pmAll = append(t.pmAll, pm)
		if img.hasUnnamedCode() {
			// Open the file while the process lives: a container's
			// /tmp is unmounted with its mount namespace when its last
			// process exits, before the samples are symbolized.
			pm.update(perfMapRetry)
		}
	}
	return pm
}

// prunePerfMaps closes the perf maps no image keeps.
func (t *Procs) prunePerfMaps() {
	used := map[*perfMap]bool{}
	for _, img := range t.all {
		used[img.pm] = true
	}
	keep := t.pmAll[:0]
	for _, pm := range t.pmAll {
		if used[pm] {
			keep = append(keep, pm)
			continue
		}
		pm.close()
		if t.pmaps[pm.pid] == pm {
			delete(t.pmaps, pm.pid)
		}
	}
	clear(t.pmAll[len(keep):])
	t.pmAll = keep
}
