// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// Table is the call frame information of one ELF file: the frame
// description entries of its .eh_frame and .debug_frame, sorted by
// address, and the file's loadable segments to turn file offsets into its
// virtual addresses. It is safe for concurrent use.
type Table struct {
	fdes  frame.FrameDescriptionEntries
	loads []elf.ProgHeader
	plts  [][2]uint64 // [start, end) of the .plt* sections
	entry uint64      // the ELF entry point (e_entry), 0 if none
	// Sources names the sections the entries came from.
	Sources []string

	mu   sync.Mutex
	rows map[uint64]*row // by virtual address
}

// row is the unwind rule at one address: how to compute the canonical frame
// address and where the caller's registers are.
type row struct {
	ok     bool
	reason string
	signal bool // a signal trampoline's frame ('S' augmentation)
	cfa    frame.DWRule
	regs   map[uint64]frame.DWRule
	raReg  uint64
}

// ErrNoCFI says a file has neither .eh_frame nor .debug_frame.
var ErrNoCFI = errors.New("no call frame information (.eh_frame or .debug_frame)")

// NewTable reads the call frame information of the ELF file r. debug, if
// not nil, is a separate debug file of the same build whose .debug_frame
// adds to r's entries. A file without any is returned with ErrNoCFI and a
// usable (empty) table.
func NewTable(r io.ReaderAt, debug io.ReaderAt) (*Table, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("read ELF: %w", err)
	}
	t := &Table{rows: map[uint64]*row{}, entry: f.Entry}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, p.ProgHeader)
		}
	}
	for _, s := range f.Sections {
		if s.Name == ".plt" || s.Name == ".plt.sec" || s.Name == ".plt.got" {
			t.plts = append(t.plts, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	ptr := 8
	if f.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	var errs []error
	for _, name := range []string{".eh_frame", ".debug_frame"} {
		if err := t.addSection(f, name, ptr); err != nil {
			errs = append(errs, err)
		}
	}
	if debug != nil {
		if df, err := elf.NewFile(debug); err == nil {
			if err := t.addSection(df, ".debug_frame", ptr); err != nil {
				errs = append(errs, err)
			}
			df.Close()
		}
	}
	sort.SliceStable(t.fdes, func(i, j int) bool { return t.fdes[i].Begin() < t.fdes[j].Begin() })
	if len(t.fdes) == 0 {
		if len(errs) > 0 {
			return t, errors.Join(errs...)
		}
		return t, ErrNoCFI
	}
	return t, nil
}

// addSection adds the entries of the call frame information section name
// of f (.eh_frame or .debug_frame; ptr is the address size), if f has it.
func (t *Table) addSection(f *elf.File, name string, ptr int) error {
	s := f.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	ehAddr := uint64(0)
	if name == ".eh_frame" {
		ehAddr = s.Addr
		if ehAddr == 0 {
			ehAddr = s.Offset // relocatable: any nonzero base parses as .eh_frame
		}
	}
	fdes, err := parse(data, f.ByteOrder, ptr, ehAddr)
	if err != nil {
		return fmt.Errorf("parse %s: %w", name, err)
	}
	t.fdes = append(t.fdes, fdes...)
	t.Sources = append(t.Sources, name)
	return nil
}

// parse runs Delve's parser, which panics on some malformed input.
func parse(data []byte, order binary.ByteOrder, ptr int, ehAddr uint64) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed call frame information: %v", r)
		}
	}()
	return frame.Parse(data, order, 0, ptr, ehAddr)
}

// Entries is the number of frame description entries.
func (t *Table) Entries() int { return len(t.fdes) }

// VAddr turns a file offset into the file's virtual address.
func (t *Table) VAddr(off uint64) (uint64, bool) {
	for _, p := range t.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// inPLT reports whether the virtual address lies in a PLT section.
func (t *Table) inPLT(va uint64) bool {
	for _, p := range t.plts {
		if va >= p[0] && va < p[1] {
			return true
		}
	}
	return false
}

// fde returns the entry covering va, or nil. Entries may overlap when
// .eh_frame and .debug_frame both describe a function: the last one
// starting at or before va that covers it wins.
func (t *Table) fde(va uint64) *frame.FrameDescriptionEntry {
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].Begin() > va })
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if t.fdes[j].Cover(va) {
			return t.fdes[j]
		}
	}
	return nil
}

// rowAt returns the unwind rule at virtual address va, cached.
func (t *Table) rowAt(va uint64) *row {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.rows[va]; ok {
		return r
	}
	r := t.compute(va)
	t.rows[va] = r
	return r
}

func (t *Table) compute(va uint64) (r *row) {
	fde := t.fde(va)
	if fde == nil {
		return &row{reason: "no unwind entry"}
	}
	defer func() {
		if p := recover(); p != nil {
			r = &row{reason: fmt.Sprintf("malformed unwind entry: %v", p)}
		}
	}()
	fc, err := fde.EstablishFrame(va)
	if err != nil {
		return &row{reason: "unwind entry: " + err.Error()}
	}
	r = &row{ok: true, cfa: fc.CFA, regs: fc.Regs, raReg: fc.RetAddrReg}
	for _, c := range fde.CIE.Augmentation {
		if c == 'S' {
			r.signal = true
		}
	}
	return r
}

// NewTableDebug is NewTable with the separate debug file at debugPath
// (none when it is empty or cannot be opened).
func NewTableDebug(r io.ReaderAt, debugPath string) (*Table, error) {
	if debugPath != "" {
		if dbg, err := os.Open(debugPath); err == nil {
			defer dbg.Close()
			return NewTable(r, dbg)
		}
	}
	return NewTable(r, nil)
}
