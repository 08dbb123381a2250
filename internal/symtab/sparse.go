// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"bufio"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/klauspost/compress/zlib"
	"golang.org/x/sys/unix"
)

// A sparse read of a file's DWARF holds the compile units that hold a
// given set of addresses, and the units their inlined calls' names are
// in, instead of every unit. debug/dwarf parses the abbreviation table of
// every unit when it opens the data: glibc's debug file has 2,063 units,
// each with a table of its own (12 MiB parsed), and its .debug_info is
// 5.5 MiB inflated; a sampled C program touches a few dozen of its units.
//
// The units read keep their offsets in a buffer as long as the whole
// .debug_info, so that references between units stay valid; every run
// of units not read is one unit of padding there: a header and an empty
// partial unit entry (an abbreviation table of its own, appended to
// .debug_abbrev), which readers skip at once. The rest of the buffer is
// never written, and memory never written is not resident.

// errNotSparse says a sparse read is not possible: the whole DWARF is
// read instead.
var errNotSparse = errors.New("no sparse read")

// maxSparseRounds bounds the reads that follow references to units not
// read yet (an inlined function's abstract entry in another unit, after
// link-time optimization); past it the whole DWARF is read.
const maxSparseRounds = 6

// infoUnit is one unit of .debug_info: its header at off, its end.
type infoUnit struct {
	off, end      uint64
	read, scanned bool
}

// sparseInfo is a sparse read of .debug_info in progress.
type sparseInfo struct {
	f    *elf.File
	file io.ReaderAt
	sec  *elf.Section
	line *elf.Section // .debug_line, nil when there is none
	buf  []byte
	// maps are the buffers mapped (buf, the line programs'), outside the
	// Go heap: their pages never written stay out of memory whatever the
	// heap reused, and they do not raise the collector's goal.
	maps [][]byte
	// units are the units met so far, by offset: a pass stops after the
	// last unit it needs, and the ones after it are one padding unit.
	units []infoUnit
	size  uint64 // .debug_info's inflated size
	pad   uint64 // offset of the padding units' abbreviation table
	// targets are entries whose abstract origins and specifications are
	// to follow (missing), waiting those in units not read yet, seen
	// every entry queued; cache holds the abbreviation tables parsed.
	targets []uint64
	waiting map[uint64]bool
	seen    map[uint64]bool
	cache   map[uint64]map[uint64]abbrev
	// tail is where the padding unit over the units not met was written
	// last (0: none): cleared when it falls inside a longer padding unit.
	tail uint64
}

// listedEnd is the end of the units met so far.
func (s *sparseInfo) listedEnd() uint64 {
	if len(s.units) == 0 {
		return 0
	}
	return s.units[len(s.units)-1].end
}

// loadSparseDWARF reads f's DWARF for the compile units that hold pcs
// (found through .debug_aranges) and the units those reference for the
// names of inlined functions. It returns errNotSparse (wrapped) when it
// cannot: no .debug_aranges, 64-bit DWARF, or too many rounds of
// references.
func loadSparseDWARF(f *elf.File, file io.ReaderAt, pcs []uint64) (*dwarf.Data, error) {
	if file == nil || f.Type == elf.ET_REL || hasDebugRelocations(f) {
		return nil, fmt.Errorf("%w: relocations", errNotSparse)
	}
	s := &sparseInfo{f: f, file: file, sec: debugSection(f, "info"), line: debugSection(f, "line")}
	d, err := s.load(pcs)
	if err != nil {
		unmapAll(s.maps)
		return nil, err
	}
	// The buffers are unmapped once the data is unreachable: nothing else
	// holds them (the entries' strings are copies; tickprof keeps no
	// entry's block value).
	runtime.AddCleanup(d, unmapAll, s.maps)
	return d, nil
}

// withoutStart is pcs without the addresses in _start, the C run-time's
// entry (every C program's outermost frame): distributions build it
// without DWARF, and an address in no unit .debug_aranges lists has every
// unit it leaves out read, and .debug_info inflated to its end, on the
// chance that one of them holds it (a Python interpreter's: 195 of its
// 253 units, where its sampled addresses were in 20-30).
func (t *Table) withoutStart(pcs []uint64) []uint64 {
	out := pcs[:0:0]
	for _, pc := range pcs {
		if name, _, ok := t.Func(pc); !ok || name != "_start" {
			out = append(out, pc)
		}
	}
	return out
}

// load is loadSparseDWARF's read.
func (s *sparseInfo) load(pcs []uint64) (*dwarf.Data, error) {
	f, file := s.f, s.file
	dat, err := readDWARFSections(f, file, "info", "line")
	if err != nil {
		return nil, err
	}
	want, listed, uncovered, err := arangesUnits(dat["aranges"], f.ByteOrder, pcs)
	if err != nil {
		return nil, err
	}
	if s.sec == nil {
		return nil, fmt.Errorf("%w: no .debug_info", errNotSparse)
	}
	s.pad = uint64(len(dat["abbrev"]))
	// The padding units' table: code 1, DW_TAG_partial_unit, with
	// children, no attributes; then the table's end.
	dat["abbrev"] = append(dat["abbrev"], 1, byte(dwarf.TagPartialUnit), 1, 0, 0, 0)
	if err := s.lineBuffer(dat); err != nil {
		return nil, err
	}
	// An address in no range listed may be start-up code without DWARF
	// (_start), or in a unit .debug_aranges leaves out (a cgo binary's
	// Go units): then every unit it leaves out is read too.
	// A pass reads up to the last unit it needs (every unit when an
	// address is in no listed range).
	limit := uint64(0)
	for off := range want {
		limit = max(limit, off)
	}
	if uncovered {
		limit = ^uint64(0)
	}
	need := func(u infoUnit) bool { return want[u.off] || uncovered && !listed[u.off] }
	for range maxSparseRounds {
		if err := s.read(need, limit, dat["abbrev"]); err != nil {
			return nil, err
		}
		d, err := s.data(dat)
		if err != nil {
			return nil, err
		}
		if len(s.waiting) == 0 {
			return d, s.readLines(d, dat["line"])
		}
		// Another pass, for the origins in units passed over.
		need, limit = func(infoUnit) bool { return false }, 0
	}
	return nil, fmt.Errorf("%w: references beyond %d rounds", errNotSparse, maxSparseRounds)
}

// readDWARFSections reads the sections of dwarfSections and
// .debug_aranges, but for those of skip, by suffix.
func readDWARFSections(f *elf.File, file io.ReaderAt, skip ...string) (map[string][]byte, error) {
	dat := map[string][]byte{}
	for _, s := range f.Sections {
		suffix, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			if suffix, ok = strings.CutPrefix(s.Name, ".zdebug_"); !ok {
				continue
			}
		}
		if slices.Contains(skip, suffix) || !slices.Contains(dwarfSections, suffix) && suffix != "aranges" || dat[suffix] != nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		b, err := sectionBytes(f, s, file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.Name, err)
		}
		dat[suffix] = b
	}
	return dat, nil
}

// debugSection is the section .debug_NAME or .zdebug_NAME.
func debugSection(f *elf.File, name string) *elf.Section {
	for _, s := range f.Sections {
		if (s.Name == ".debug_"+name || s.Name == ".zdebug_"+name) && s.Type != elf.SHT_NOBITS {
			return s
		}
	}
	return nil
}

// arangesUnits returns the offsets of the units whose address ranges in
// .debug_aranges hold each of pcs (every such unit, when ranges overlap).
func arangesUnits(ar []byte, bo binary.ByteOrder, pcs []uint64) (want, listed map[uint64]bool, uncovered bool, err error) {
	rs, listed, err := parseAranges(ar, bo)
	if err != nil {
		return nil, nil, false, err
	}
	want = map[uint64]bool{}
	for _, pc := range pcs {
		// Every range starting at or below pc that holds it (ranges of
		// two units overlap rarely, and then close together).
		found := -1
		for i := sort.Search(len(rs), func(i int) bool { return rs[i].lo > pc }) - 1; i >= 0 && (found < 0 || found-i < 64); i-- {
			if pc < rs[i].hi {
				want[rs[i].unit] = true
				if found < 0 {
					found = i
				}
			}
		}
		uncovered = uncovered || found < 0
	}
	return want, listed, uncovered, nil
}

// word reads an address of size bytes.
func word(bo binary.ByteOrder, b []byte, size int) uint64 {
	if size == 4 {
		return uint64(bo.Uint32(b))
	}
	return bo.Uint64(b)
}

// sectionStream streams section sec from the start, inflating it when
// compressed, with its inflated size.
func (s *sparseInfo) sectionStream(sec *elf.Section) (io.Reader, func(), uint64, error) {
	if sec.FileSize > maxDWARFSection {
		return nil, nil, 0, fmt.Errorf("%s: %d bytes: more than %d", sec.Name, sec.FileSize, maxDWARFSection)
	}
	raw := io.NewSectionReader(s.file, int64(sec.Offset), int64(sec.FileSize))
	var size uint64
	var skip int64
	switch {
	case sec.Flags&elf.SHF_COMPRESSED != 0:
		hdr := make([]byte, 24)
		n, _ := io.ReadFull(raw, hdr)
		sz, body, err := compressionHeader(s.f, hdr[:n])
		if err != nil {
			return nil, nil, 0, fmt.Errorf("read %s: %w", sec.Name, err)
		}
		size, skip = sz, int64(n-len(body))
	case strings.HasPrefix(sec.Name, ".zdebug_"):
		hdr := make([]byte, 12)
		if _, err := io.ReadFull(raw, hdr); err != nil || string(hdr[:4]) != "ZLIB" {
			return nil, nil, 0, fmt.Errorf("read %s: no ZLIB header", sec.Name)
		}
		size, skip = binary.BigEndian.Uint64(hdr[4:]), 12
	default:
		return bufio.NewReaderSize(raw, 64<<10), func() {}, sec.FileSize, nil
	}
	if size > maxDWARFSection {
		return nil, nil, 0, fmt.Errorf("read %s: inflated size %d: more than %d", sec.Name, size, maxDWARFSection)
	}
	z, err := zlib.NewReader(bufio.NewReaderSize(io.NewSectionReader(s.file, int64(sec.Offset)+skip, int64(sec.FileSize)-skip), 64<<10))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read %s: %w", sec.Name, err)
	}
	return z, func() { z.Close() }, size, nil
}

// read streams .debug_info from its start, copying the units need holds
// into the buffer, up to the unit that holds offset limit, and lists the
// units it meets. The origins of each unit's inlined calls are followed
// as it is read (follow): the units ahead that hold them are read in the
// same pass, and those passed over already are left in s.waiting for
// another.
func (s *sparseInfo) read(need func(infoUnit) bool, limit uint64, ab []byte) error {
	r, done, size, err := s.sectionStream(s.sec)
	if err != nil {
		return err
	}
	defer done()
	if s.buf == nil {
		s.size = size
		if s.buf, err = s.alloc(size + padUnitSize + 1); err != nil { // written only where units are read
			return err
		}
	}
	// pend holds the origins waiting, sorted: each unit that holds one is
	// read.
	pend := slices.Sorted(maps.Keys(s.waiting))
	if len(pend) > 0 {
		limit = max(limit, pend[len(pend)-1])
	}
	var off uint64
	for k := 0; off < size && off <= limit; k++ {
		u, hdr, err := s.unitHeader(r, off, size)
		if err != nil {
			return err
		}
		n := u.end - off - 4
		if k == len(s.units) {
			s.units = append(s.units, u)
		}
		in := 0 // origins waiting in u
		for in < len(pend) && pend[in] < u.end {
			in++
		}
		var ready []uint64
		switch {
		case s.units[k].read || !need(u) && in == 0:
			if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
				return fmt.Errorf("read %s at %#x: %w", s.sec.Name, off, err)
			}
			off = u.end
			if !s.units[k].read || in == 0 {
				continue
			}
			// Origins waiting in a unit read since they were queued.
			ready = pend[:in]
		default:
			s.units[k].read = true
			copy(s.buf[off:], hdr[:])
			if _, err := io.ReadFull(r, s.buf[off+4:u.end]); err != nil {
				return fmt.Errorf("read %s at %#x: %w", s.sec.Name, off, err)
			}
			off = u.end
			ready = s.waitingIn(u, pend[:in])
		}
		ahead, err := s.follow(ab, ready, off)
		if err != nil {
			return err
		}
		pend = pend[in:]
		if len(ahead) > 0 {
			pend = slices.Compact(slices.Sorted(slices.Values(append(pend, ahead...))))
			limit = max(limit, pend[len(pend)-1])
		}
	}
	return nil
}

// unitHeader reads the length of the unit at off from r: the unit, and
// the length's bytes.
func (s *sparseInfo) unitHeader(r io.Reader, off, size uint64) (infoUnit, [4]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return infoUnit{}, hdr, fmt.Errorf("read %s at %#x: %w", s.sec.Name, off, err)
	}
	n := uint64(s.f.ByteOrder.Uint32(hdr[:]))
	if n >= 0xfffffff0 || off+4+n > size {
		return infoUnit{}, hdr, fmt.Errorf("%w: unit length %#x at %#x", errNotSparse, n, off)
	}
	return infoUnit{off: off, end: off + 4 + n}, hdr, nil
}

// padUnitSize is a padding unit's header (DWARF 4, 32-bit) and its entry.
// One more padding unit, with the null entry that ends its children,
// follows the last unit: a reader skips a unit's entries at once only
// when another unit follows (dwarf.Reader.SkipChildren), and otherwise
// decodes every one (0.4 s on the last unit of a Python interpreter's).
const padUnitSize = 12

// data writes a padding unit over each run of units not read and opens
// the buffer as DWARF with the other sections of dat.
func (s *sparseInfo) data(dat map[string][]byte) (*dwarf.Data, error) {
	asize := byte(8)
	if s.f.Class == elf.ELFCLASS32 {
		asize = 4
	}
	bo := s.f.ByteOrder
	pad := func(lo, hi uint64) {
		p := s.buf[lo:]
		bo.PutUint32(p, uint32(hi-lo-4))
		bo.PutUint16(p[4:], 4)
		bo.PutUint32(p[6:], uint32(s.pad))
		p[10], p[11] = asize, 1
	}
	end := uint64(len(s.buf))
	pad(end-padUnitSize-1, end)
	if k := s.unitAt(s.tail); s.tail != 0 && (k < 0 || !s.units[k].read) {
		clear(s.buf[s.tail : s.tail+padUnitSize])
	}
	s.tail = 0
	for i := 0; i < len(s.units); {
		if s.units[i].read {
			i++
			continue
		}
		j := i
		for j < len(s.units) && !s.units[j].read {
			j++
		}
		lo, hi := s.units[i].off, s.units[j-1].end
		if j == len(s.units) && hi < s.size {
			hi, s.tail = s.size, lo // with the units not met
		}
		if hi-lo < padUnitSize || hi-lo-4 >= 0xfffffff0 {
			return nil, fmt.Errorf("%w: a gap of %d bytes", errNotSparse, hi-lo)
		}
		pad(lo, hi)
		i = j
	}
	if n := len(s.units); n > 0 && s.units[n-1].read && s.units[n-1].end < s.size {
		lo := s.units[n-1].end
		if s.size-lo < padUnitSize || s.size-lo-4 >= 0xfffffff0 {
			return nil, fmt.Errorf("%w: a gap of %d bytes", errNotSparse, s.size-lo)
		}
		pad(lo, s.size)
		s.tail = lo
	}
	return newDWARF(dat, s.buf)
}

// unitAt is the index of the unit holding offset off, or -1.
func (s *sparseInfo) unitAt(off uint64) int {
	k := sort.Search(len(s.units), func(i int) bool { return s.units[i].off > off }) - 1
	if k < 0 || off >= s.units[k].end {
		return -1
	}
	return k
}

// waitingIn is the origins waiting in u (just read): those of pend, and
// those queued in this pass after pend was taken (in a unit met in an
// earlier pass, not read then).
func (s *sparseInfo) waitingIn(u infoUnit, pend []uint64) []uint64 {
	ready := slices.Clone(pend)
	for off := range s.waiting {
		if off >= u.off && off < u.end && !slices.Contains(pend, off) {
			ready = append(ready, off)
		}
	}
	return ready
}

// follow follows the abstract origins and specifications of the inlined
// calls in the units read and not scanned yet, and theirs in turn, by any
// form of reference: the entries an inlined call's name is read through.
// ready are origins waiting (s.waiting) in units now read; pos is where
// the pass reading .debug_info stands. An origin in a unit not read waits
// in s.waiting; those at or past pos are returned, for the pass to read
// their units. scanned marks the units followed; each entry is followed
// once.
func (s *sparseInfo) follow(ab []byte, ready []uint64, pos uint64) (ahead []uint64, err error) {
	bo := s.f.ByteOrder
	if s.seen == nil {
		s.seen, s.waiting, s.cache = map[uint64]bool{}, map[uint64]bool{}, map[uint64]map[uint64]abbrev{}
	}
	for k := range s.units {
		u := s.units[k]
		if !u.read || u.scanned {
			continue
		}
		s.units[k].scanned = true
		if err := unitRefs(s.buf, ab, u, bo, s.cache, s.queue); err != nil {
			return nil, fmt.Errorf("%w: unit at %#x: %v", errNotSparse, u.off, err)
		}
	}
	for _, off := range ready {
		delete(s.waiting, off)
		s.targets = append(s.targets, off)
	}
	end := s.listedEnd()
	for len(s.targets) > 0 {
		off := s.targets[len(s.targets)-1]
		s.targets = s.targets[:len(s.targets)-1]
		k := s.unitAt(off)
		switch {
		case k >= 0 && s.units[k].read:
			if err := s.entryRefs(ab, k, off); err != nil {
				return nil, err
			}
		case k >= 0:
			s.waiting[off] = true
			if off >= pos {
				ahead = append(ahead, off)
			}
		case off >= end && off < s.size:
			s.waiting[off] = true
			ahead = append(ahead, off)
		}
	}
	return ahead, nil
}

// queue adds the entry at off to those to follow, unless it was already.
func (s *sparseInfo) queue(off uint64) {
	if !s.seen[off] {
		s.seen[off] = true
		s.targets = append(s.targets, off)
	}
}

// entryRefs queues the abstract origin and specification of the entry
// at off, in unit k (read).
func (s *sparseInfo) entryRefs(ab []byte, k int, off uint64) error {
	u := s.units[k]
	h, err := head(s.buf, ab, u, s.f.ByteOrder, s.cache)
	if err == nil && off >= uint64(h.first) {
		r := &rawReader{b: s.buf[:u.end], p: int(off), bo: s.f.ByteOrder}
		err = entryRefs(r, h, u, 0, s.queue)
	}
	if err != nil {
		return fmt.Errorf("%w: entry at %#x: %v", errNotSparse, off, err)
	}
	return nil
}

// lineBuffer puts a buffer as long as .debug_line in dat, written by
// readLines only where the units read have their line programs.
func (s *sparseInfo) lineBuffer(dat map[string][]byte) error {
	if s.line == nil {
		return nil
	}
	_, done, size, err := s.sectionStream(s.line)
	if err != nil {
		return err
	}
	done()
	dat["line"], err = s.alloc(size)
	return err
}

// readLines copies the line programs of d's compile units from
// .debug_line into its buffer, in one pass.
func (s *sparseInfo) readLines(d *dwarf.Data, line []byte) error {
	if line == nil {
		return nil
	}
	var offs []uint64
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		r.SkipChildren()
		if off, ok := e.Val(dwarf.AttrStmtList).(int64); ok && off >= 0 {
			offs = append(offs, uint64(off))
		}
	}
	slices.Sort(offs)
	offs = slices.Compact(offs)
	if len(offs) == 0 {
		return nil
	}
	lr, done, size, err := s.sectionStream(s.line)
	if err != nil {
		return err
	}
	defer done()
	var at uint64
	for _, off := range offs {
		if off < at || off+4 > size {
			return fmt.Errorf("%w: line program at %#x", errNotSparse, off)
		}
		if _, err := io.CopyN(io.Discard, lr, int64(off-at)); err != nil {
			return fmt.Errorf("read %s at %#x: %w", s.line.Name, off, err)
		}
		if _, err := io.ReadFull(lr, line[off:off+4]); err != nil {
			return fmt.Errorf("read %s at %#x: %w", s.line.Name, off, err)
		}
		n := uint64(s.f.ByteOrder.Uint32(line[off:]))
		if n >= 0xfffffff0 || off+4+n > size {
			return fmt.Errorf("%w: line program length %#x at %#x", errNotSparse, n, off)
		}
		if _, err := io.ReadFull(lr, line[off+4:off+4+n]); err != nil {
			return fmt.Errorf("read %s at %#x: %w", s.line.Name, off, err)
		}
		at = off + 4 + n
	}
	return nil
}

// alloc maps n bytes of zeroed memory (memory written only).
func (s *sparseInfo) alloc(n uint64) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes for DWARF: %w", n, err)
	}
	s.maps = append(s.maps, b)
	return b, nil
}

// unmapAll unmaps the buffers of a sparse read.
func unmapAll(maps [][]byte) {
	for _, b := range maps {
		unix.Munmap(b)
	}
}
