// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/unwind"
)

// Procs holds what is known of the processes whose addresses are
// symbolized: the memory map of each as it was when first seen (and after
// each exec or reread) and the mapped files, opened while the process
// lived, once per file for all processes. It is not safe for concurrent
// use.
type Procs struct {
	cur    map[int]*Image
	all    []*Image
	files  map[string]*binFile
	vdsos  map[string]*binFile // vDSO images by SHA-256 of their bytes
	nextID uint64
	// debug finds separate debug files (nil: none are looked for).
	debug *debuginfo.Finder
	// parents notes each fork seen (Fork), by child.
	parents map[int]forkNote
	// pmaps are the processes' perf map files (perfmap.go), by pid;
	// pmAll all open ones, replaced by an exec or not.
	pmaps map[int]*perfMap
	pmAll []*perfMap
}

// forkNote is a fork reported to Fork.
type forkNote struct {
	parent int
	at     time.Time
}

// Image is one memory map of one process: its executable mappings and
// their files, as read at one moment.
type Image struct {
	t      *Procs
	id     uint64
	pid    int
	maps   []proc.Mapping     // executable mappings, sorted
	bins   []*binFile         // parallel to maps; nil for anonymous mappings
	err    error              // why the map could not be read
	exe    string             // the main executable's path
	calls  map[[2]uint64]bool // isCallTo results by (return address, leaf function start)
	readAt time.Time
	// readNs is when the map was read on the clock of the samples'
	// times (CLOCK_MONOTONIC); reads counts the reads of this process's
	// map since its exec or first sample, this one included.
	readNs uint64
	reads  int
	mods   []unwind.Module // maps with unwind tables, built on first use
	// goInfo is the Go executable's cgo information (gocgo.go), read
	// once (goDone); goOK says it was found.
	goInfo       GoCgo
	goDone, goOK bool
	// pm is the process's perf map file, naming its JIT code (nil when
	// it has no anonymous executable mapping).
	pm *perfMap
}

// NewProcs returns an empty table that finds separate debug files with
// debug (nil: it looks for none).
func NewProcs(debug *debuginfo.Finder) *Procs {
	return &Procs{cur: map[int]*Image{}, files: map[string]*binFile{}, vdsos: map[string]*binFile{}, debug: debug,
		parents: map[int]forkNote{}, pmaps: map[int]*perfMap{}}
}

// Image returns the current memory map of pid, reading it on first sight.
func (t *Procs) Image(pid int) *Image {
	if img, ok := t.cur[pid]; ok {
		return img
	}
	return t.load(pid, 1)
}

// Current returns the current memory map of pid, if one was read.
func (t *Procs) Current(pid int) (*Image, bool) {
	img, ok := t.cur[pid]
	return img, ok
}

// Exec notes that pid replaced its image: the next Image reads the new
// map (by then the dynamic loader has usually mapped the libraries; later
// ones are picked up by Refresh). The images read before stay valid for
// the addresses taken in them.
func (t *Procs) Exec(pid int) {
	delete(t.cur, pid)
	delete(t.parents, pid) // its map is its parent's no more
	delete(t.pmaps, pid)   // a new program writes its own
}

// load reads the map of pid (read) and makes it the process's current one.
// A forked child gone before its map could be read takes its parent's
// (inherit): gone means reaped (no /proc entry) or exiting (a zombie's, or
// a process's past exit_mm, map reads empty without an error).
func (t *Procs) load(pid int, reads int) *Image {
	img := t.read(pid, reads)
	if img.err != nil || len(img.maps) == 0 {
		if inh := t.inherit(pid, 4); inh != nil {
			img = inh
		}
	}
	t.install(img)
	return img
}

// Fork notes that process parent forked child (the sampler's BPF program
// reports every fork of a target). A child that runs and exits before its
// first address is symbolized has no map left to read: Image then gives it
// its parent's, which it shares until it execs (Exec forgets the note). A
// new thread may be reported too: its ID never carries samples, and its
// note is pruned (PruneForks).
func (t *Procs) Fork(child, parent int) {
	if len(t.parents) >= maxForkNotes {
		t.PruneForks(10 * time.Second)
	}
	t.parents[child] = forkNote{parent: parent, at: time.Now()}
}

// maxForkNotes bounds the fork notes of a long run whose caller does not
// prune them.
const maxForkNotes = 1 << 16

// PruneForks forgets the forks noted more than maxAge ago: a child read or
// gone by then needs its note no more.
func (t *Procs) PruneForks(maxAge time.Duration) {
	for pid, n := range t.parents {
		if time.Since(n.at) > maxAge {
			delete(t.parents, pid)
		}
	}
}

// inherit returns a copy of the current image of pid's parent for pid
// (the parent's read first if need be, up to depth ancestors), or nil.
func (t *Procs) inherit(pid, depth int) *Image {
	note, ok := t.parents[pid]
	if !ok || depth == 0 {
		return nil
	}
	par, ok := t.cur[note.parent]
	if !ok {
		par = t.read(note.parent, 1)
		if par.err != nil {
			par = t.inherit(note.parent, depth-1)
		}
		if par == nil {
			return nil
		}
		t.install(par)
	}
	if par.err != nil {
		return nil
	}
	t.nextID++
	return &Image{t: t, id: t.nextID, pid: pid, maps: par.maps, bins: par.bins, exe: par.exe,
		readAt: par.readAt, readNs: par.readNs, reads: 1, goInfo: par.goInfo, goDone: par.goDone, goOK: par.goOK, pm: par.pm}
}

// install makes img its process's current map.
func (t *Procs) install(img *Image) {
	t.cur[img.pid] = img
	t.all = append(t.all, img)
}

// read reads /proc/PID/maps and opens the mapped files; reads numbers the
// read (Image.reads).
func (t *Procs) read(pid int, reads int) *Image {
	t.nextID++
	img := &Image{t: t, id: t.nextID, pid: pid, readAt: time.Now(), readNs: MonotonicNs(), reads: reads}
	maps, err := proc.ReadMaps(pid)
	if err != nil {
		img.err = err
		return img
	}
	img.maps = maps
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
		img.exe = strings.TrimSuffix(exe, " (deleted)")
	}
	img.bins = make([]*binFile, len(maps))
	for i, m := range maps {
		if m.Path == VDSOPath {
			img.bins[i] = t.vdso(pid, m)
			continue
		}
		img.bins[i] = t.file(pid, m)
	}
	img.pm = t.perfMapFor(img)
	return img
}

// ID numbers the image among all this table read (from 1).
func (img *Image) ID() uint64 { return img.id }

// Pid is the image's process.
func (img *Image) Pid() int { return img.pid }

// Err is why the map could not be read (nil when it was).
func (img *Image) Err() error { return img.err }

// Exe is the path of the process's executable ("" when unknown).
func (img *Image) Exe() string { return img.exe }

// Maps are the image's executable mappings, sorted by address.
func (img *Image) Maps() []proc.Mapping { return img.maps }

// ExeBuildID is the build ID of the process's main executable (the GNU
// build ID, else the Go build ID), read from the file opened when the map
// was read; "" when it has none or was not read.
func (img *Image) ExeBuildID() string {
	for i := range img.maps {
		if m := img.Mapping(i); m.File == img.exe && m.BuildID != "" {
			return m.BuildID
		}
	}
	return ""
}

// quickRereads is how many reads of a process's map may follow each other
// at once; later ones are at least rereadGap apart.
const (
	quickRereads = 4
	rereadGap    = 20 * time.Millisecond
)

// Refresh re-reads the map of a live process after an address taken at
// sampleNs (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns) fell outside
// it, when a new read can show more: the address was taken after the map
// was read. That is the case of a library mapped since: by the dynamic
// loader in the process's first milliseconds (the first sample of a
// process, which wakes the reader, often falls in the loader before libc
// is mapped), by dlopen, or JIT code. After quickRereads reads of one
// process, rereads are rereadGap apart, so that addresses which stay
// outside (a frame-pointer walk through frameless code reads data as
// return addresses) do not reread the map with every sample. A read that
// finds no executable mapping is dropped: a process that is exiting has no
// map left some milliseconds before it becomes a zombie, and the samples
// it took before must keep the map they were taken in. It reports whether
// a new image was loaded; the process's current image (Procs.Image) is
// then the new one.
func (img *Image) Refresh(sampleNs uint64) bool {
	if sampleNs < img.readNs {
		return false
	}
	if img.reads >= quickRereads && time.Since(img.readAt) < rereadGap {
		return false
	}
	img.readAt = time.Now()
	if !alive(img.pid) {
		return false
	}
	next := img.t.read(img.pid, img.reads+1)
	if next.err != nil || len(next.maps) == 0 {
		img.reads++ // a failed read counts, so that failing ones are spaced too
		return false
	}
	img.t.install(next)
	return true
}

// file opens the file of mapping m of pid once per (device, inode): through
// /proc/PID/map_files (which works for deleted files too), else through
// /proc/PID/root so that containers' files are found.
func (t *Procs) file(pid int, m proc.Mapping) *binFile {
	key := m.FileKey()
	if key == "" || !strings.HasPrefix(m.Path, "/") {
		return nil
	}
	if f, ok := t.files[key]; ok {
		return f
	}
	f := &binFile{path: strings.TrimSuffix(m.Path, " (deleted)")}
	t.files[key] = f
	var errs []string
	for _, p := range []string{
		fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.Limit),
		fmt.Sprintf("/proc/%d/root%s", pid, f.path),
	} {
		err := f.open(p)
		if err == nil {
			return f
		}
		errs = append(errs, err.Error())
	}
	f.err = fmt.Errorf("read symbols of %s: %s", f.path, strings.Join(errs, "; "))
	return f
}

// Exited counts the processes with an image that no longer exist.
func (t *Procs) Exited() int {
	n := 0
	for pid := range t.cur {
		if !alive(pid) {
			n++
		}
	}
	return n
}

// Prune drops the images of processes that exited and the images replaced
// by newer reads: call it once the addresses taken in them are symbolized.
func (t *Procs) Prune() {
	for pid := range t.cur {
		if !alive(pid) {
			delete(t.cur, pid)
		}
	}
	keep := t.all[:0]
	for _, img := range t.all {
		if cur, ok := t.cur[img.pid]; ok && cur == img {
			keep = append(keep, img)
		}
	}
	clear(t.all[len(keep):])
	t.all = keep
	t.prunePerfMaps()
}

// Close releases the open files; the images cannot be symbolized after.
func (t *Procs) Close() {
	for _, f := range t.files {
		f.close()
	}
	for _, f := range t.vdsos {
		f.close()
	}
	for _, pm := range t.pmAll {
		pm.close()
	}
	t.files = map[string]*binFile{}
	t.vdsos = map[string]*binFile{}
	t.pmaps, t.pmAll = map[int]*perfMap{}, nil
}

// MonotonicNs reads CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
func MonotonicNs() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// alive reports whether pid exists (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// State is the field after the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
