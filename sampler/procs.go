package sampler

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/unwind"
)

// procTable holds what is known of every sampled process: its memory map as
// it was when first seen (and after each exec) and the mapped files, opened
// while the process lived.
type procTable struct {
	cur    map[int]*procImage
	all    []*procImage
	files  map[string]*binFile
	vdsos  map[string]*binFile // vDSO images by SHA-256 of their bytes
	nextID uint64
	// debug finds separate debug files (DEBUGINFOD_URLS and friends).
	debug *debuginfo.Finder
	// parents notes each fork seen (fork), by child.
	parents map[int]forkNote
}

// forkNote is a fork the sampling program reported.
type forkNote struct {
	parent int
	at     time.Time
}

// procImage is one memory map of one process.
type procImage struct {
	t      *procTable
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
	// once (goDone); goOK says it was found; goNoted that the BPF
	// program was told.
	goInfo                goCgo
	goDone, goOK, goNoted bool
}

// binFile is one mapped file with its symbol table.
type binFile struct {
	path  string // as the process names it
	table *symtab.Table
	err   error
	// f stays open so that DWARF inline information can be read at the
	// end, after the process may have exited.
	f          *os.File
	inl        *inliner
	inlChecked bool
	// vdsoNames, for a vDSO, names each function by its __vdso_ alias
	// (by start address).
	vdsoNames map[uint64]string
	// cfi is the file's call frame information (read on first use);
	// debugPath a separate debug file of the same build, if found.
	cfi       *unwind.Table
	cfiErr    error
	cfiDone   bool
	debugPath string
	// dbg holds the symbols of the separate debug file (debugfiles.go).
	dbg     *symtab.Table
	dbgErr  error
	dbgDone bool
	// goTLS is a Go executable's runtime.tlsg offset (gocgo.go).
	goTLS              int64
	goTLSOK, goTLSDone bool
}

// inliner returns the file's DWARF inline reader, or nil.
func (b *binFile) inliner() *inliner {
	if !b.inlChecked {
		b.inlChecked = true
		if b.f != nil {
			b.inl = newInliner(b.f)
		}
	}
	return b.inl
}

func newProcTable() *procTable {
	return &procTable{cur: map[int]*procImage{}, files: map[string]*binFile{}, vdsos: map[string]*binFile{}, debug: debuginfo.FromEnv(),
		parents: map[int]forkNote{}}
}

// image returns the current memory map of pid, reading it on first sight.
func (t *procTable) image(pid int) *procImage {
	if img, ok := t.cur[pid]; ok {
		return img
	}
	return t.load(pid, 1)
}

// exec notes that pid replaced its image: its next sample reads the new
// map (by then the dynamic loader has usually mapped the libraries; later
// ones are picked up by refresh).
func (t *procTable) exec(pid int) {
	delete(t.cur, pid)
}

// load reads the map of pid (read) and makes it the process's current one.
// A forked child gone before its map could be read takes its parent's
// (inherit).
func (t *procTable) load(pid int, reads int) *procImage {
	img := t.read(pid, reads)
	if img.err != nil {
		if inh := t.inherit(pid, 4); inh != nil {
			img = inh
		}
	}
	t.install(img)
	return img
}

// fork notes that parent forked child. A child that runs and exits before
// its first sample is read has no map left to read: it is then known by
// its parent's, which it shares until it execs. (A new thread is reported
// too; its ID never carries samples, and its note is pruned.)
func (t *procTable) fork(child, parent int) {
	if len(t.parents) >= maxForkNotes {
		t.pruneForks(10 * time.Second)
	}
	t.parents[child] = forkNote{parent: parent, at: time.Now()}
}

// maxForkNotes bounds the fork notes of a long run that is not cut into
// windows (which prune them).
const maxForkNotes = 1 << 16

// inherit returns a copy of the current image of pid's parent for pid
// (the parent's read first if need be, up to depth ancestors), or nil.
func (t *procTable) inherit(pid, depth int) *procImage {
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
	return &procImage{t: t, id: t.nextID, pid: pid, maps: par.maps, bins: par.bins, exe: par.exe,
		readAt: par.readAt, readNs: par.readNs, reads: 1, goInfo: par.goInfo, goDone: par.goDone, goOK: par.goOK}
}

// pruneForks forgets fork notes older than maxAge.
func (t *procTable) pruneForks(maxAge time.Duration) {
	for pid, n := range t.parents {
		if time.Since(n.at) > maxAge {
			delete(t.parents, pid)
		}
	}
}

// install makes img its process's current map.
func (t *procTable) install(img *procImage) {
	t.cur[img.pid] = img
	t.all = append(t.all, img)
}

// read reads /proc/PID/maps and opens the mapped files; reads numbers the
// read (procImage.reads).
func (t *procTable) read(pid int, reads int) *procImage {
	t.nextID++
	img := &procImage{t: t, id: t.nextID, pid: pid, readAt: time.Now(), readNs: monotonicNs(), reads: reads}
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
	return img
}

// isCallTo reports whether ra is a return address right after a direct
// call (call rel32) of the function holding leaf, both runtime addresses of
// this image.
func (img *procImage) isCallTo(ra, leaf uint64) bool {
	start, ok := img.funcStart(leaf)
	if !ok || ra < 5 {
		return false
	}
	k := [2]uint64{ra, start}
	if v, ok := img.calls[k]; ok {
		return v
	}
	v := img.callTarget(ra) == start
	if img.calls == nil {
		img.calls = map[[2]uint64]bool{}
	}
	img.calls[k] = v
	return v
}

// funcStart returns the runtime start address of the function holding addr.
func (img *procImage) funcStart(addr uint64) (uint64, bool) {
	mi, ok := proc.FindMapping(img.maps, addr)
	if !ok || img.bins[mi] == nil || img.bins[mi].table == nil {
		return 0, false
	}
	m, tab := img.maps[mi], img.bins[mi].table
	va, ok := tab.VAddr(addr - m.Start + m.Offset)
	if !ok {
		return 0, false
	}
	_, start, ok := tab.Func(va)
	if !ok || start > va {
		return 0, false
	}
	return addr - (va - start), true
}

// callTarget decodes the instruction ending at ra as call rel32 and returns
// its target, or 0.
func (img *procImage) callTarget(ra uint64) uint64 {
	mi, ok := proc.FindMapping(img.maps, ra-5)
	if !ok || ra > img.maps[mi].Limit || img.bins[mi] == nil || img.bins[mi].f == nil {
		return 0
	}
	m := img.maps[mi]
	var code [5]byte
	if _, err := img.bins[mi].f.ReadAt(code[:], int64(ra-5-m.Start+m.Offset)); err != nil || code[0] != 0xe8 {
		return 0
	}
	rel := int32(uint32(code[1]) | uint32(code[2])<<8 | uint32(code[3])<<16 | uint32(code[4])<<24)
	return ra + uint64(int64(rel))
}

// quickRereads is how many reads of a process's map may follow each other
// at once; later ones are at least rereadGap apart.
const (
	quickRereads = 4
	rereadGap    = 20 * time.Millisecond
)

// refresh re-reads the map of a live process after a user address of the
// sample taken at sampleNs (CLOCK_MONOTONIC) fell outside it, when a new
// read can show more: the sample was taken after the map was read. That is
// the case of a library mapped since: by the dynamic loader in the
// process's first milliseconds (the first sample of a process, which wakes
// the reader, often falls in the loader before libc is mapped), by dlopen,
// or JIT code. After quickRereads reads of one process, rereads are
// rereadGap apart, so that addresses which stay outside (a frame-pointer
// walk through frameless code reads data as return addresses) do not
// reread the map with every sample. A read that finds no executable
// mapping is dropped: a process that is exiting has no map left some
// milliseconds before it becomes a zombie, and the samples it took before
// must keep the map they were taken in. It reports whether a new image was
// loaded.
func (img *procImage) refresh(sampleNs uint64) bool {
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
func (t *procTable) file(pid int, m proc.Mapping) *binFile {
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
		tab, err := symtab.Open(p)
		if err == nil {
			f.table = tab
			if fh, err := os.Open(p); err == nil {
				f.f = fh
			}
			return f
		}
		errs = append(errs, err.Error())
	}
	f.err = fmt.Errorf("read symbols of %s: %s", f.path, strings.Join(errs, "; "))
	return f
}

// exited counts the sampled processes that no longer exist.
func (t *procTable) exited() int {
	n := 0
	for pid := range t.cur {
		if !alive(pid) {
			n++
		}
	}
	return n
}

func (t *procTable) close() {
	for _, f := range t.files {
		f.close()
	}
	for _, f := range t.vdsos {
		f.close()
	}
	t.files = map[string]*binFile{}
	t.vdsos = map[string]*binFile{}
}

// close releases the file's symbol table and open file.
func (b *binFile) close() {
	if b.table != nil {
		b.table.Close()
	}
	if b.dbg != nil {
		b.dbg.Close()
	}
	if b.f != nil {
		b.f.Close()
	}
}

// monotonicNs reads CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns.
func monotonicNs() uint64 {
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
