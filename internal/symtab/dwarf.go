// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klauspost/compress/zlib"
)

// dwarfSections are the DWARF sections tickprof reads (line programs,
// the units' entries for names, ranges and inlined calls), by suffix.
// The others — location lists above all, as large as the entries in an
// optimized build's debug file — are never inflated.
var dwarfSections = []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// maxDWARFSection bounds one inflated section (the entries of the largest
// debug files tickprof has met are tens of MiB).
const maxDWARFSection = 1 << 30

// loadDWARF reads f's DWARF like elf.File.DWARF, with two differences
// that halve its cost on a large debug file (a Python interpreter's: its
// inflation was a third of a sampling run's CPU): only dwarfSections are
// read, and compressed sections are inflated with a faster zlib. A
// relocatable object, or one whose DWARF sections carry relocations, is
// left to elf.File.DWARF, which applies them.
func loadDWARF(f *elf.File, file io.ReaderAt) (*dwarf.Data, error) {
	if file == nil || f.Type == elf.ET_REL || hasDebugRelocations(f) {
		return f.DWARF()
	}
	dat := map[string][]byte{}
	for _, s := range f.Sections {
		suffix, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			if suffix, ok = strings.CutPrefix(s.Name, ".zdebug_"); !ok {
				continue
			}
		}
		if !slices.Contains(dwarfSections, suffix) || dat[suffix] != nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		b, err := sectionBytes(f, s, file)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.Name, err)
		}
		dat[suffix] = b
	}
	return newDWARF(dat, dat["info"])
}

// newDWARF makes the DWARF data of the sections dat (by name without
// ".debug_"), with info as .debug_info.
func newDWARF(dat map[string][]byte, info []byte) (*dwarf.Data, error) {
	d, err := dwarf.New(dat["abbrev"], nil, nil, info, dat["line"], nil, dat["ranges"], dat["str"])
	if err != nil {
		return nil, err
	}
	for _, suffix := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b := dat[suffix]; b != nil {
			if err := d.AddSection(".debug_"+suffix, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// hasDebugRelocations says whether a relocation section applies to a
// DWARF section.
func hasDebugRelocations(f *elf.File) bool {
	for _, r := range f.Sections {
		if (r.Type == elf.SHT_RELA || r.Type == elf.SHT_REL) && int(r.Info) < len(f.Sections) {
			n := f.Sections[r.Info].Name
			if strings.HasPrefix(n, ".debug_") || strings.HasPrefix(n, ".zdebug_") {
				return true
			}
		}
	}
	return false
}

// sectionBytes is section s's contents, inflated when compressed (an
// ELF compression header with zlib, or the older ".zdebug_" form).
func sectionBytes(f *elf.File, s *elf.Section, file io.ReaderAt) ([]byte, error) {
	if s.FileSize > maxDWARFSection {
		return nil, fmt.Errorf("%d bytes: more than %d", s.FileSize, maxDWARFSection)
	}
	raw := make([]byte, s.FileSize)
	if _, err := file.ReadAt(raw, int64(s.Offset)); err != nil {
		return nil, err
	}
	switch {
	case s.Flags&elf.SHF_COMPRESSED != 0:
		size, body, err := compressionHeader(f, raw)
		if err != nil {
			return nil, err
		}
		return inflate(body, size)
	case strings.HasPrefix(s.Name, ".zdebug_"):
		if len(raw) < 12 || string(raw[:4]) != "ZLIB" {
			return nil, errors.New("no ZLIB header")
		}
		return inflate(raw[12:], binary.BigEndian.Uint64(raw[4:12]))
	}
	return raw, nil
}

// compressionHeader reads an ELF compression header (Elf64_Chdr or
// Elf32_Chdr): the inflated size and the zlib stream after it.
func compressionHeader(f *elf.File, raw []byte) (uint64, []byte, error) {
	bo := f.ByteOrder
	var typ uint32
	var size uint64
	var n int
	if f.Class == elf.ELFCLASS64 {
		if len(raw) < 24 {
			return 0, nil, errors.New("short compression header")
		}
		typ, size, n = bo.Uint32(raw), bo.Uint64(raw[8:]), 24
	} else {
		if len(raw) < 12 {
			return 0, nil, errors.New("short compression header")
		}
		typ, size, n = bo.Uint32(raw), uint64(bo.Uint32(raw[4:])), 12
	}
	if elf.CompressionType(typ) != elf.COMPRESS_ZLIB {
		return 0, nil, fmt.Errorf("compression %v: only zlib is read", elf.CompressionType(typ))
	}
	return size, raw[n:], nil
}

// inflate inflates a zlib stream of the given inflated size.
func inflate(body []byte, size uint64) ([]byte, error) {
	if size > maxDWARFSection {
		return nil, fmt.Errorf("inflated size %d: more than %d", size, maxDWARFSection)
	}
	r, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return out, nil
}
