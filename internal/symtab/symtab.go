// SPDX-License-Identifier: Apache-2.0

// Package symtab reads the function symbols of an ELF file and answers the
// questions a profiler asks of them: where is the function with this name (as
// a file offset, which is what a uprobe needs), which function and source line
// hold this address (what a sampler needs), and what is the file (PIE or not,
// build ID, Go or not, Go version).
//
// Symbols come from .symtab and .dynsym; a stripped Go binary still carries
// its function table in .gopclntab, which is read with debug/gosym. Go names
// are the names Go prints: main.(*T).Method, net/http.(*conn).serve, and
// generic instantiations as pkg.F[...] (the binary's pkg.F[go.shape.int] is
// found under both spellings).
//
// Address lookups use sorted slices and binary search; source lines (DWARF
// or the Go line table) are loaded on first use only.
//
// For timing Go functions without uretprobes, ProbeSites disassembles a
// function (golang.org/x/arch/x86/x86asm) for its entry and RET probe
// sites, GoRuntimeOffsets locates runtime.g's goid and stack top, and
// InlinedInto tells where a function was inlined.
//
// Of third-party modules symtab imports only x/arch and x/sys (checked by
// internal/layers).
package symtab

import (
	"bytes"
	"cmp"
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Source tells where a symbol was read from.
type Source uint8

// The symbol sources, in order of preference when two name the same function.
const (
	FromSymtab    Source = iota + 1 // the .symtab section
	FromDynsym                      // the .dynsym section
	FromGoPclntab                   // the Go function table (.gopclntab)
)

func (s Source) String() string {
	switch s {
	case FromSymtab:
		return ".symtab"
	case FromDynsym:
		return ".dynsym"
	case FromGoPclntab:
		return ".gopclntab"
	}
	return "unknown"
}

// Symbol is one function of the file.
type Symbol struct {
	// Name is the name as the file spells it (for Go generics
	// pkg.F[go.shape.int]).
	Name string
	// Display is the name as Go prints it (pkg.F[...] for generics); equal
	// to Name for everything else.
	Display string
	// Value is the function's virtual address in the file (before any load
	// bias).
	Value uint64
	// Size is the function's size in bytes (0 when the file does not say).
	Size uint64
	// Global is true for global and weak symbols, false for local ones.
	Global bool
	// Source is the section the symbol was read from.
	Source Source
}

// Table holds the functions of one ELF file. It keeps the file open for
// lazily loaded line tables and for reading machine code; Close releases it.
// A Table is safe for concurrent use.
type Table struct {
	// Path is the file the table was read from.
	Path string
	// Machine is the ELF machine (elf.EM_X86_64, elf.EM_AARCH64, ...).
	Machine elf.Machine
	// Type is the ELF type: elf.ET_EXEC, or elf.ET_DYN for PIE executables
	// and shared libraries, which load at a bias.
	Type elf.Type
	// BuildID is the GNU build ID (.note.gnu.build-id) in hex, or "".
	BuildID string
	// GoBuildID is the Go build ID (.note.go.buildid), or "".
	GoBuildID string
	// IsGo is true for executables built by the Go toolchain.
	IsGo bool
	// GoVersion is the Go toolchain version from the build info ("go1.26.8"),
	// or "" when unknown.
	GoVersion string
	// GoTextStart is the address of runtime.text, the base of the Go
	// function table's PCs (0 when the file is not Go).
	GoTextStart uint64

	f      *elf.File
	file   *os.File         // the file f reads, closed by Close
	loads  []elf.ProgHeader // PT_LOAD segments
	syms   []Symbol         // every function, sorted by Value then preference
	byAddr []int            // index into syms of the preferred symbol per distinct start
	byName map[string][]int // Name and Display -> indices into syms

	lineOnce sync.Once
	lines    lineTable
	lineErr  error

	dwOnce sync.Once
	dw     *dwarf.Data
	dwErr  error
	// dwPCs, when not nil, are the only addresses whose lines and DWARF
	// entries are asked for (LimitDWARF).
	dwPCs []uint64
	// grow, when not nil, is the DWARF's growing read (GrowDWARF).
	grow *dwarfGrowth
}

// PIE reports whether the file is position independent (ET_DYN): a PIE
// executable or a shared library, whose runtime addresses carry a load bias.
func (t *Table) PIE() bool { return t.Type == elf.ET_DYN }

// Open reads the function symbols of the ELF file at path. Only a
// regular file is opened: a FIFO would block the open forever and a
// device's open can act on the device, so both are refused first by stat
// and again, after a non-blocking open, on what was opened.
func Open(path string) (*Table, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("open %s: %s is %s, not a regular file: give an executable or a shared library", path, path, fileKind(st.Mode()))
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	file := os.NewFile(uintptr(fd), path)
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() {
		file.Close()
		return nil, fmt.Errorf("open %s: not a regular file: give an executable or a shared library", path)
	}
	f, err := elf.NewFile(file)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	t, err := newTable(path, f)
	if err != nil {
		file.Close()
		return nil, err
	}
	t.file = file
	return t, nil
}

// fileKind names a file's type for errors: "a FIFO".
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// Close releases the file.
func (t *Table) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	if t.file != nil {
		if cerr := t.file.Close(); err == nil {
			err = cerr
		}
		t.file = nil
	}
	return err
}

func newTable(path string, f *elf.File) (*Table, error) {
	t := &Table{Path: path, Machine: f.Machine, Type: f.Type, f: f, byName: map[string][]int{}}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, p.ProgHeader)
		}
	}
	t.BuildID, t.GoBuildID = BuildIDs(f)

	pcln := f.Section(".gopclntab")
	if pcln == nil {
		pcln = f.Section(".data.rel.ro.gopclntab")
	}
	t.IsGo = pcln != nil || f.Section(".go.buildinfo") != nil
	if t.IsGo {
		if bi, err := buildinfo.ReadFile(path); err == nil {
			t.GoVersion = bi.GoVersion
		}
	}

	var syms []Symbol
	if s, err := f.Symbols(); err == nil {
		syms = appendFuncs(syms, s, FromSymtab)
	} else if !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("read .symtab of %s: %w", path, err)
	}
	if s, err := f.DynamicSymbols(); err == nil {
		syms = appendFuncs(syms, s, FromDynsym)
	} else if !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("read .dynsym of %s: %w", path, err)
	}
	if t.IsGo {
		t.GoTextStart = goTextStart(f, syms, pcln)
	}
	if t.IsGo && !hasSource(syms, FromSymtab) && pcln != nil {
		tab, err := t.goTable(pcln)
		if err != nil {
			return nil, fmt.Errorf("read Go function table of %s: %w", path, err)
		}
		for i := range tab.Funcs {
			fn := &tab.Funcs[i]
			syms = append(syms, Symbol{Name: fn.Name, Value: fn.Entry, Size: fn.End - fn.Entry, Global: true, Source: FromGoPclntab})
		}
	}
	for i := range syms {
		syms[i].Display = syms[i].Name
		if t.IsGo {
			syms[i].Display = GoDisplayName(syms[i].Name)
		}
	}
	t.index(syms)
	return t, nil
}

func hasSource(syms []Symbol, src Source) bool {
	for i := range syms {
		if syms[i].Source == src {
			return true
		}
	}
	return false
}

func appendFuncs(dst []Symbol, src []elf.Symbol, from Source) []Symbol {
	for _, s := range src {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC && elf.ST_TYPE(s.Info) != elf.STT_GNU_IFUNC {
			continue
		}
		if s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Name == "" {
			continue
		}
		b := elf.ST_BIND(s.Info)
		dst = append(dst, Symbol{Name: s.Name, Value: s.Value, Size: s.Size, Global: b == elf.STB_GLOBAL || b == elf.STB_WEAK, Source: from})
	}
	return dst
}

// index sorts and deduplicates syms and builds the name and address indexes.
func (t *Table) index(syms []Symbol) {
	sort.SliceStable(syms, func(i, j int) bool {
		a, b := &syms[i], &syms[j]
		if a.Value != b.Value {
			return a.Value < b.Value
		}
		return better(a, b)
	})
	// Drop the .dynsym copy of a .symtab symbol (same name, same address).
	out := syms[:0]
	seen := map[string]bool{}
	var at uint64
	for _, s := range syms {
		if s.Value != at {
			clear(seen)
			at = s.Value
		}
		if seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	t.syms = out
	for i := range t.syms {
		s := &t.syms[i]
		if i == 0 || s.Value != t.syms[i-1].Value {
			t.byAddr = append(t.byAddr, i)
		}
		t.byName[s.Name] = append(t.byName[s.Name], i)
		if s.Display != s.Name {
			t.byName[s.Display] = append(t.byName[s.Display], i)
		}
	}
}

// better orders two symbols at the same address: the one to show first.
func better(a, b *Symbol) bool {
	if a.Global != b.Global {
		return a.Global
	}
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	au, bu := strings.HasPrefix(a.Name, "_"), strings.HasPrefix(b.Name, "_")
	if au != bu {
		return !au
	}
	if (a.Size == 0) != (b.Size == 0) {
		return a.Size != 0
	}
	return a.Name < b.Name
}

// Symbols returns every function, sorted by address. The slice must not be
// modified.
func (t *Table) Symbols() []Symbol { return t.syms }

// Lookup returns the functions named name, as the file spells it or as Go
// prints it (pkg.F[...] names every instantiation of a generic function).
// C files can hold several local functions of one name; the result is sorted
// by address and empty when nothing matches.
func (t *Table) Lookup(name string) []Symbol {
	idx := t.byName[name]
	out := make([]Symbol, 0, len(idx))
	for _, i := range idx {
		out = append(out, t.syms[i])
	}
	return out
}

// Glob returns the functions whose name (or Go display name) matches pattern
// in path.Match syntax, except that '*' and '?' also match '/' so that
// 'net/http.*' works. At most max symbols are returned: more matches is an
// error saying how many there were. Brackets start a character class; write
// \[ for a literal one. A pattern that is itself a function's name matches
// just that name (Go names hold '*' and brackets: main.(*T).Method,
// pkg.F[...]).
func (t *Table) Glob(pattern string, max int) ([]Symbol, error) {
	if exact := t.Lookup(pattern); len(exact) > 0 {
		if len(exact) > max {
			return nil, fmt.Errorf("%q names %d functions in %s, more than the limit of %d: raise the limit", pattern, len(exact), t.Path, max)
		}
		return exact, nil
	}
	const slash = "\x00"
	p := strings.ReplaceAll(pattern, "/", slash)
	if _, err := path.Match(p, ""); err != nil {
		return nil, fmt.Errorf("bad glob %q: %w: write a shell pattern such as 'sqlite3_*' or 'main.(*T).*'", pattern, err)
	}
	var out []Symbol
	n := 0
	for i := range t.syms {
		s := &t.syms[i]
		ok, _ := path.Match(p, strings.ReplaceAll(s.Name, "/", slash))
		if !ok && s.Display != s.Name {
			ok, _ = path.Match(p, strings.ReplaceAll(s.Display, "/", slash))
		}
		if !ok {
			continue
		}
		n++
		if len(out) < max {
			out = append(out, *s)
		}
	}
	if n > max {
		return nil, fmt.Errorf("pattern %q matches %d functions in %s, more than the limit of %d: narrow the pattern or raise the limit", pattern, n, t.Path, max)
	}
	return out, nil
}

// FileOffset converts a virtual address of the file to its offset in the
// file, through the PT_LOAD program headers. A uprobe is attached at a file
// offset.
func (t *Table) FileOffset(addr uint64) (uint64, error) {
	for _, p := range t.loads {
		if addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("address %#x of %s is in no loadable segment", addr, t.Path)
}

// VAddr converts a file offset (as /proc/PID/maps gives: runtime address -
// mapping start + mapping offset) to the file's virtual address.
func (t *Table) VAddr(off uint64) (uint64, bool) {
	for _, p := range t.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// Code returns the machine code of a function: Size bytes from its address.
func (t *Table) Code(s Symbol) ([]byte, error) {
	if s.Size == 0 {
		return nil, fmt.Errorf("function %s in %s has no size", s.Display, t.Path)
	}
	off, err := t.FileOffset(s.Value)
	if err != nil {
		return nil, err
	}
	if t.f == nil {
		return nil, fmt.Errorf("read code of %s: table of %s is closed", s.Display, t.Path)
	}
	for _, p := range t.f.Progs {
		if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value+s.Size <= p.Vaddr+p.Filesz {
			b := make([]byte, s.Size)
			if _, err := p.ReadAt(b, int64(s.Value-p.Vaddr)); err != nil {
				return nil, fmt.Errorf("read code of %s at offset %#x in %s: %w", s.Display, off, t.Path, err)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("function %s (%#x+%d) crosses the end of its segment in %s", s.Display, s.Value, s.Size, t.Path)
}

// Func returns the function holding the virtual address addr: its name as
// Go prints it (the symbol name for other languages) and its start. A symbol
// without a size covers addresses up to the next symbol.
func (t *Table) Func(addr uint64) (name string, start uint64, ok bool) {
	s, ok := t.FuncSymbol(addr)
	if !ok {
		return "", 0, false
	}
	return s.Display, s.Value, true
}

// FuncSymbol is Func returning the whole symbol.
func (t *Table) FuncSymbol(addr uint64) (Symbol, bool) {
	k := sort.Search(len(t.byAddr), func(i int) bool { return t.syms[t.byAddr[i]].Value > addr }) - 1
	if k < 0 {
		return Symbol{}, false
	}
	s := t.syms[t.byAddr[k]]
	if s.Size != 0 {
		return s, addr < s.Value+s.Size
	}
	// Unsized: take the widest sized alias at this address, else up to the next symbol.
	for i := t.byAddr[k]; i < len(t.syms) && t.syms[i].Value == s.Value; i++ {
		if t.syms[i].Size != 0 {
			return t.syms[i], addr < s.Value+t.syms[i].Size
		}
	}
	// addr is below the next symbol's start (k is the last start <= addr).
	if !t.inExecSegment(addr) {
		return Symbol{}, false
	}
	return s, true
}

func (t *Table) inExecSegment(addr uint64) bool {
	for _, p := range t.loads {
		if p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			return true
		}
	}
	return false
}

// GoDisplayName returns a Go symbol name as Go prints it: the contents of
// every top-level bracket pair (generic type arguments, or go.shape types)
// replaced by "...", as in pkg.F[...] and pkg.(*List[...]).Push.
func GoDisplayName(name string) string {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return name
	}
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[...")
			}
			depth++
		case r == ']' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteByte(']')
			}
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FileBuildIDs is BuildIDs of the ELF file at path.
func FileBuildIDs(path string) (gnu, gobuild string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	gnu, gobuild = BuildIDs(f)
	return gnu, gobuild, nil
}

// BuildIDs reads the GNU build ID (lower-case hex) and the Go build ID from
// the ELF file's note sections; either is "" when the file has none.
func BuildIDs(f *elf.File) (gnu, gobuild string) {
	for data := range sectionsOf(f, elf.SHT_NOTE) {
		for len(data) >= 12 {
			namesz := f.ByteOrder.Uint32(data[0:])
			descsz := f.ByteOrder.Uint32(data[4:])
			typ := f.ByteOrder.Uint32(data[8:])
			nameEnd := 12 + align4(namesz)
			descEnd := nameEnd + align4(descsz)
			if uint64(len(data)) < descEnd || namesz == 0 {
				break
			}
			name := string(bytes.TrimRight(data[12:12+namesz], "\x00"))
			desc := data[nameEnd : nameEnd+uint64(descsz)]
			switch {
			case name == "GNU" && typ == 3: // NT_GNU_BUILD_ID
				gnu = hex.EncodeToString(desc)
			case name == "Go" && typ == 4: // ELF_NOTE_GOBUILDID_TAG
				gobuild = string(desc)
			}
			data = data[descEnd:]
		}
	}
	return gnu, gobuild
}

func align4(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }

// sectionsOf yields the contents of f's sections of type typ, passing over
// those it cannot read.
func sectionsOf(f *elf.File, typ elf.SectionType) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, s := range f.Sections {
			if s.Type != typ {
				continue
			}
			data, err := s.Data()
			if err != nil {
				continue
			}
			if !yield(data) {
				return
			}
		}
	}
}

// goTextStart finds runtime.text, the base of the Go function table's PCs:
// the symbol when present, else the pclntab header's textStart (Go 1.18+),
// else (PIE, where that word is relocated at load time) the addend of its
// dynamic relocation, else the start of .text. In cgo and externally linked
// binaries .text starts with C code, so .text is a last resort.
func goTextStart(f *elf.File, syms []Symbol, pcln *elf.Section) uint64 {
	for i := range syms {
		if syms[i].Name == "runtime.text" {
			return syms[i].Value
		}
	}
	// runtime.text is a local non-function symbol in some builds.
	if all, err := f.Symbols(); err == nil {
		for _, s := range all {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	text := uint64(0)
	if s := f.Section(".text"); s != nil {
		text = s.Addr
	}
	if pcln == nil {
		return text
	}
	hdr := make([]byte, 8+3*8)
	if _, err := pcln.ReadAt(hdr, 0); err != nil {
		return text
	}
	magic := f.ByteOrder.Uint32(hdr)
	if magic != 0xfffffff0 && magic != 0xfffffff1 { // Go 1.18 and 1.20 magics
		return text
	}
	ptr := uint64(hdr[7])
	if ptr != 4 && ptr != 8 { // the header's pointer size: a damaged table
		return text
	}
	field := 8 + 2*ptr
	var v uint64
	if ptr == 8 {
		v = f.ByteOrder.Uint64(hdr[field:])
	} else {
		v = uint64(f.ByteOrder.Uint32(hdr[field:]))
	}
	if v != 0 {
		return v
	}
	if a, ok := relaAddend(f, pcln.Addr+field); ok && a != 0 {
		return a
	}
	if ptr == 8 {
		if v, ok := moduledataText(f, pcln.Addr); ok {
			return v
		}
	}
	return text
}

// Offsets in the runtime's moduledata (Go 1.16 and later, 64-bit): the
// pcHeader pointer at 0, six slices, findfunctab, minpc, maxpc, then text.
const (
	moduledataText64  = 8 + 6*24 + 3*8
	moduledataMinPC64 = 8 + 6*24 + 8
)

// moduledataText finds runtime.firstmoduledata, whose first word points to
// the pclntab, and returns its text field. Externally linked binaries leave
// the pclntab header's textStart zero, and stripped ones have no
// runtime.text symbol; the moduledata is what the runtime itself uses.
func moduledataText(f *elf.File, pclnAddr uint64) (uint64, bool) {
	if v, ok := moduledataStored(f, pclnAddr); ok {
		return v, true
	}
	return moduledataRelocated(f, pclnAddr)
}

// moduledataStored looks for the pclntab's address stored directly in a
// writable section (non-PIE).
func moduledataStored(f *elf.File, pclnAddr uint64) (uint64, bool) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_WRITE == 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for off := 0; off+8 <= len(data); off += 8 {
			if f.ByteOrder.Uint64(data[off:]) == pclnAddr {
				if v, ok := moduledataTextAt(f, s.Addr+uint64(off)); ok {
					return v, true
				}
			}
		}
	}
	return 0, false
}

// moduledataRelocated looks for the pclntab's address relocated at load
// time (PIE): a relocation whose addend is the pclntab.
func moduledataRelocated(f *elf.File, pclnAddr uint64) (uint64, bool) {
	if f.Class != elf.ELFCLASS64 {
		return 0, false
	}
	for data := range sectionsOf(f, elf.SHT_RELA) {
		for ; len(data) >= 24; data = data[24:] {
			if f.ByteOrder.Uint64(data[16:]) == pclnAddr {
				if v, ok := moduledataTextAt(f, f.ByteOrder.Uint64(data)); ok {
					return v, true
				}
			}
		}
	}
	return 0, false
}

// moduledataTextAt returns the text field of a moduledata candidate at md,
// if its text and minpc fields are plausible (minpc at most 1 GiB above
// text).
func moduledataTextAt(f *elf.File, md uint64) (uint64, bool) {
	text, ok1 := elfWord(f, md+moduledataText64)
	minpc, ok2 := elfWord(f, md+moduledataMinPC64)
	if ok1 && ok2 && text != 0 && minpc >= text && minpc-text < 1<<30 {
		return text, true
	}
	return 0, false
}

// elfWord reads the 64-bit word at addr from the file's PROGBITS sections,
// or, where the file holds zero, the addend of its relocation.
func elfWord(f *elf.File, addr uint64) (uint64, bool) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || addr < s.Addr || addr+8 > s.Addr+s.Size {
			continue
		}
		var b [8]byte
		if _, err := s.ReadAt(b[:], int64(addr-s.Addr)); err != nil {
			return 0, false
		}
		if v := f.ByteOrder.Uint64(b[:]); v != 0 {
			return v, true
		}
		return relaAddend(f, addr)
	}
	return 0, false
}

// relaAddend returns the addend of the RELA relocation at addr, if any.
func relaAddend(f *elf.File, addr uint64) (uint64, bool) {
	if f.Class != elf.ELFCLASS64 {
		return 0, false
	}
	for data := range sectionsOf(f, elf.SHT_RELA) {
		for len(data) >= 24 {
			if f.ByteOrder.Uint64(data) == addr {
				return f.ByteOrder.Uint64(data[16:]), true
			}
			data = data[24:]
		}
	}
	return 0, false
}

// goTable parses the Go function and line table, after checking that
// the function count its header states fits in the table: debug/gosym
// allocates a Func per stated function before reading any, and a damaged
// or hostile binary (one mapped by a sampled process, say) stating 2^40
// functions ended tickprof with "out of memory".
func (t *Table) goTable(pcln *elf.Section) (*gosym.Table, error) {
	data, err := pcln.Data()
	if err != nil {
		return nil, err
	}
	if err := checkPclnHeader(data, t.f.ByteOrder); err != nil {
		return nil, err
	}
	return gosym.NewTable(nil, gosym.NewLineTable(data, t.GoTextStart))
}

// checkPclnHeader checks a Go line table's header: a known magic, a
// pointer size of 4 or 8, and no more functions than function-table
// entries fit in the table (8 bytes each since Go 1.18, two pointers
// before).
func checkPclnHeader(data []byte, bo binary.ByteOrder) error {
	if len(data) < 16 {
		return errors.New("the Go line table is too short")
	}
	ptr := int(data[7])
	if ptr != 4 && ptr != 8 || len(data) < 8+ptr {
		return fmt.Errorf("the Go line table states a pointer size of %d: damaged", ptr)
	}
	entry := uint64(2 * ptr)
	switch bo.Uint32(data) {
	case 0xfffffff0, 0xfffffff1: // Go 1.18, Go 1.20
		entry = 8
	case 0xfffffffa, 0xfffffffb: // Go 1.16, Go 1.2
	default:
		return fmt.Errorf("the Go line table has an unknown magic %#x", bo.Uint32(data))
	}
	nfunc := uint64(bo.Uint32(data[8:]))
	if ptr == 8 {
		nfunc = bo.Uint64(data[8:])
	}
	if nfunc > uint64(len(data))/entry {
		return fmt.Errorf("the Go line table states %d functions in %d bytes: damaged", nfunc, len(data))
	}
	return nil
}

// Line returns the source file and line of the instruction at the virtual
// address addr: from the Go line table for Go binaries, else from DWARF. The
// tables are loaded on the first call. ok is false when the file has no line
// information for addr.
func (t *Table) Line(addr uint64) (file string, line int, ok bool) {
	t.lineOnce.Do(t.loadLines)
	if t.lines == nil {
		return "", 0, false
	}
	return t.lines.line(addr)
}

// DWARF returns the file's DWARF data, read (and decompressed) on the
// first call and shared by every later one, Line's included.
func (t *Table) DWARF() (*dwarf.Data, error) {
	t.dwOnce.Do(func() {
		if t.f == nil {
			t.dwErr = fmt.Errorf("table of %s is closed", t.Path)
			return
		}
		var file io.ReaderAt // nil: a table not read from a file of its own
		if t.file != nil {
			file = t.file
		}
		if t.grow != nil {
			if d, err := t.grow.load(t.f, file); err == nil {
				t.dw = d
				return
			}
		}
		if t.dwPCs != nil {
			if d, err := loadSparseDWARF(t.f, file, t.withoutStart(t.dwPCs)); err == nil {
				t.dw = d
				return
			}
			// Whatever stopped the sparse read, the whole DWARF serves.
		}
		t.dw, t.dwErr = loadDWARF(t.f, file)
	})
	return t.dw, t.dwErr
}

// LimitDWARF says that only the virtual addresses pcs will be asked about
// (Line, and the entries of DWARF's data): the DWARF is then read for the
// compile units that hold them (and those their entries name as abstract
// origins) when .debug_aranges says which, not for every unit. Lines and
// entries of other addresses may then be missing. It has no effect once
// the DWARF is read, and must not be called while another goroutine uses
// the table.
func (t *Table) LimitDWARF(pcs []uint64) {
	t.dwPCs = slices.Clone(pcs)
}

// LineErr reports why line information is unavailable, after Line was called.
func (t *Table) LineErr() error { return t.lineErr }

type lineTable interface {
	line(addr uint64) (string, int, bool)
}

func (t *Table) loadLines() {
	if t.f == nil {
		t.lineErr = fmt.Errorf("table of %s is closed", t.Path)
		return
	}
	if t.IsGo {
		pcln := t.f.Section(".gopclntab")
		if pcln == nil {
			pcln = t.f.Section(".data.rel.ro.gopclntab")
		}
		if pcln != nil {
			tab, err := t.goTable(pcln)
			if err == nil {
				t.lines = goLines{tab}
				return
			}
			t.lineErr = fmt.Errorf("read Go line table of %s: %w", t.Path, err)
		}
	}
	d, err := t.DWARF()
	if err != nil {
		t.lineErr = fmt.Errorf("no line information in %s: %w", t.Path, err)
		return
	}
	dl, err := readDWARFLines(d)
	if err != nil {
		t.lineErr = fmt.Errorf("read DWARF lines of %s: %w", t.Path, err)
		return
	}
	t.lines = dl
}

type goLines struct{ tab *gosym.Table }

func (g goLines) line(addr uint64) (string, int, bool) {
	file, line, fn := g.tab.PCToLine(addr)
	return file, line, fn != nil && line != 0
}

// dwarfLines answers line lookups from the line programs of the compile
// units that hold the addresses asked about, each decoded on first use:
// a sampled program touches a few of a library's units, and decoding
// every unit's program was half of a sampling run's CPU on a Python
// interpreter with its debug file (libpython's line programs).
type dwarfLines struct {
	d *dwarf.Data
	// units are the compile units' address ranges, by start.
	units []unitRange
	// mu guards tables, the units decoded so far (by index in entries).
	mu      sync.Mutex
	entries []*dwarf.Entry
	tables  map[int]*rowTable
}

// unitRange is one address range of a compile unit (entries[unit]).
type unitRange struct {
	lo, hi uint64
	unit   int
}

// rowTable is one or more line programs' rows, sorted by address.
type rowTable struct {
	addrs []uint64
	files []int32 // index into names; -1 marks an end of sequence
	lines []int32
	names []string
}

// readDWARFLines indexes d's compile units by address. A unit without
// address ranges has its line program decoded now, into the table of
// unit -1, which every lookup outside the indexed ranges consults.
func readDWARFLines(d *dwarf.Data) (*dwarfLines, error) {
	dl := &dwarfLines{d: d, tables: map[int]*rowTable{}}
	rest := &lineTableBuilder{dl: &rowTable{}, nameIdx: map[string]int32{}}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		r.SkipChildren()
		if e.Tag != dwarf.TagCompileUnit {
			continue
		}
		ranges, err := d.Ranges(e)
		if err != nil || len(ranges) == 0 {
			if err := addUnitLines(d, e, rest); err != nil {
				return nil, err
			}
			continue
		}
		i := len(dl.entries)
		dl.entries = append(dl.entries, e)
		for _, rg := range ranges {
			if rg[1] > rg[0] {
				dl.units = append(dl.units, unitRange{rg[0], rg[1], i})
			}
		}
	}
	slices.SortFunc(dl.units, func(a, b unitRange) int { return cmp.Compare(a.lo, b.lo) })
	dl.tables[-1] = rest.finish()
	return dl, nil
}

// addUnitLines adds the rows of unit e's line program to b.
func addUnitLines(d *dwarf.Data, e *dwarf.Entry, b *lineTableBuilder) error {
	lr, err := d.LineReader(e)
	if err != nil || lr == nil {
		return err
	}
	return b.addUnit(lr)
}

// unitOf is the index of the compile unit whose ranges hold addr, or -1.
func (dl *dwarfLines) unitOf(addr uint64) int {
	k := sort.Search(len(dl.units), func(i int) bool { return dl.units[i].lo > addr })
	// Ranges may overlap (rarely): the latest-starting range that holds
	// addr wins, as the sorted rows of every unit used to.
	for k--; k >= 0; k-- {
		if u := dl.units[k]; addr < u.hi {
			return u.unit
		}
	}
	return -1
}

// table is unit i's decoded line table (-1: the units without ranges).
func (dl *dwarfLines) table(i int) *rowTable {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if t, ok := dl.tables[i]; ok {
		return t
	}
	b := &lineTableBuilder{dl: &rowTable{}, nameIdx: map[string]int32{}}
	if err := addUnitLines(dl.d, dl.entries[i], b); err != nil {
		b.rows = nil // a unit whose program cannot be read has no lines
	}
	t := b.finish()
	dl.tables[i] = t
	return t
}

func (dl *dwarfLines) line(addr uint64) (string, int, bool) {
	if u := dl.unitOf(addr); u >= 0 {
		if f, l, ok := dl.table(u).line(addr); ok {
			return f, l, true
		}
	}
	return dl.table(-1).line(addr)
}

// lineTableBuilder gathers the rows of every compile unit's line table,
// with the file names interned.
type lineTableBuilder struct {
	dl      *rowTable
	nameIdx map[string]int32
	rows    []lineRow
}

// lineRow is one row of a line table; file -1 ends a sequence.
type lineRow struct {
	addr uint64
	file int32
	line int32
}

// addUnit adds the rows of one compile unit's line table.
func (b *lineTableBuilder) addUnit(lr *dwarf.LineReader) error {
	var le dwarf.LineEntry
	for {
		if err := lr.Next(&le); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if le.EndSequence {
			b.rows = append(b.rows, lineRow{le.Address, -1, 0})
			continue
		}
		name := ""
		if le.File != nil {
			name = le.File.Name
		}
		fi, ok := b.nameIdx[name]
		if !ok {
			fi = int32(len(b.dl.names))
			b.nameIdx[name] = fi
			b.dl.names = append(b.dl.names, name)
		}
		b.rows = append(b.rows, lineRow{le.Address, fi, int32(le.Line)})
	}
}

// finish sorts the rows by address and stores them in the table.
func (b *lineTableBuilder) finish() *rowTable {
	rows, dl := b.rows, b.dl
	// At one address an end of sequence sorts before the start of the next.
	slices.SortStableFunc(rows, func(a, b lineRow) int {
		if c := cmp.Compare(a.addr, b.addr); c != 0 {
			return c
		}
		switch {
		case a.file < 0 && b.file >= 0:
			return -1
		case b.file < 0 && a.file >= 0:
			return 1
		}
		return 0
	})
	dl.addrs = make([]uint64, len(rows))
	dl.files = make([]int32, len(rows))
	dl.lines = make([]int32, len(rows))
	for i, r := range rows {
		dl.addrs[i], dl.files[i], dl.lines[i] = r.addr, r.file, r.line
	}
	return dl
}

func (dl *rowTable) line(addr uint64) (string, int, bool) {
	k := sort.Search(len(dl.addrs), func(i int) bool { return dl.addrs[i] > addr }) - 1
	if k < 0 || dl.files[k] < 0 || dl.lines[k] == 0 {
		return "", 0, false
	}
	return dl.names[dl.files[k]], int(dl.lines[k]), true
}
