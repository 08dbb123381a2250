// SPDX-License-Identifier: Apache-2.0

// Package usdt reads the statically defined tracing probes (USDT, SystemTap
// SDT) of an ELF file: the .note.stapsdt notes that programs built with
// <sys/sdt.h> or dtrace carry (PostgreSQL, the JVM, Node.js, CPython built
// --with-dtrace). Each note names a probe (provider and name), its address
// (a nop the probe replaces), the semaphore the program tests before
// computing the probe's arguments (0 when it has none), and the argument
// specifications, which say where each argument lies when the nop runs.
//
// It owns the notes' format, the addresses' adjustment for prelinking (the
// .stapsdt.base section), their conversion to file offsets for uprobes,
// and the parsing of the x86-64 argument specifications. It imports only
// the standard library.
package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Probe is one USDT probe of a file.
type Probe struct {
	Provider, Name string
	// PC is the probe's virtual address, Semaphore its semaphore's (0:
	// none), both adjusted for prelinking.
	PC, Semaphore uint64
	// Offset is PC's file offset (where a uprobe goes), SemaphoreOffset
	// the semaphore's (the uprobe's reference counter offset; 0: none).
	Offset, SemaphoreOffset uint64
	// ArgSpec is the arguments' specification as written ("8@%rbp
	// 8@%r12 -4@%eax"); Args the arguments parsed from it.
	ArgSpec string
	Args    []Arg
}

// String is "provider:name".
func (p Probe) String() string { return p.Provider + ":" + p.Name }

// ArgKind says where an argument's value is.
type ArgKind int

// The argument kinds.
const (
	// ArgConst is a constant: Value.
	ArgConst ArgKind = iota
	// ArgReg is the value of register Reg.
	ArgReg
	// ArgMem is the value in memory at Reg + Value.
	ArgMem
)

// Arg is one argument of a probe.
type Arg struct {
	Kind ArgKind
	// Size is the argument's size in bytes (1, 2, 4 or 8); Signed says
	// it is signed (a negative size in the specification).
	Size   int
	Signed bool
	// Reg is the register's name as pt_regs spells it ("ax", "r12"),
	// for ArgReg and ArgMem; RegOffset its offset in struct pt_regs.
	Reg       string
	RegOffset int
	// Value is the constant (ArgConst) or the memory offset (ArgMem).
	Value int64
}

// ErrNoProbes is wrapped by the error of a file without USDT probes.
var ErrNoProbes = errors.New("no USDT probes")

// Read returns the USDT probes of the ELF file at path, in the order of
// its notes.
func Read(path string) ([]Probe, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read USDT probes of %s: %w", path, err)
	}
	defer f.Close()
	probes, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("read USDT probes of %s: %w", path, err)
	}
	return probes, nil
}

// Parse returns the USDT probes of an opened ELF file.
func Parse(f *elf.File) ([]Probe, error) {
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%w: only x86-64 ELF files are read", ErrNoProbes)
	}
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		return nil, fmt.Errorf("%w: the file has no .note.stapsdt section", ErrNoProbes)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .note.stapsdt: %w", err)
	}
	var baseAddr uint64
	if b := f.Section(".stapsdt.base"); b != nil {
		baseAddr = b.Addr
	}
	var out []Probe
	for len(data) >= 12 {
		nsz, dsz, typ := f.ByteOrder.Uint32(data), f.ByteOrder.Uint32(data[4:]), f.ByteOrder.Uint32(data[8:])
		nameEnd := 12 + align4(uint64(nsz))
		end := nameEnd + align4(uint64(dsz))
		if end > uint64(len(data)) || nameEnd > uint64(len(data)) {
			return nil, errors.New("truncated .note.stapsdt")
		}
		name := data[12 : 12+nsz]
		desc := data[nameEnd : nameEnd+uint64(dsz)]
		data = data[end:]
		if typ != 3 || string(bytes.TrimRight(name, "\x00")) != "stapsdt" {
			continue
		}
		p, err := parseNote(desc, f.ByteOrder, baseAddr)
		if err != nil {
			return nil, err
		}
		if p.Offset, err = fileOffset(f, p.PC); err != nil {
			return nil, fmt.Errorf("probe %s: %w", p, err)
		}
		if p.Semaphore != 0 {
			if p.SemaphoreOffset, err = fileOffset(f, p.Semaphore); err != nil {
				return nil, fmt.Errorf("semaphore of probe %s: %w", p, err)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the file's .note.stapsdt holds none", ErrNoProbes)
	}
	return out, nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// parseNote reads one note's description: pc, base and semaphore
// addresses, then provider, name and arguments as NUL-terminated strings.
func parseNote(desc []byte, bo binary.ByteOrder, baseAddr uint64) (Probe, error) {
	if len(desc) < 24 {
		return Probe{}, errors.New("short stapsdt note")
	}
	pc, base, sem := bo.Uint64(desc), bo.Uint64(desc[8:]), bo.Uint64(desc[16:])
	strs := strings.SplitN(string(desc[24:]), "\x00", 4)
	if len(strs) < 3 {
		return Probe{}, errors.New("stapsdt note without provider, name and arguments")
	}
	p := Probe{Provider: strs[0], Name: strs[1], ArgSpec: strs[2], PC: pc, Semaphore: sem}
	if baseAddr != 0 && base != 0 {
		// Prelinking moved the file: its addresses moved as .stapsdt.base
		// did from where the note says it was.
		p.PC += baseAddr - base
		if sem != 0 {
			p.Semaphore += baseAddr - base
		}
	}
	args, err := ParseArgs(p.ArgSpec)
	if err != nil {
		return Probe{}, fmt.Errorf("probe %s: %w", p, err)
	}
	p.Args = args
	return p, nil
}

// fileOffset converts a virtual address to its offset in the file, through
// the loadable segment (or, for a semaphore in .probes, the section) that
// holds it.
func fileOffset(f *elf.File, addr uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	for _, s := range f.Sections {
		if s.Addr != 0 && addr >= s.Addr && addr < s.Addr+s.Size && s.Type != elf.SHT_NOBITS {
			return addr - s.Addr + s.Offset, nil
		}
	}
	return 0, fmt.Errorf("address %#x is in no loaded part of the file", addr)
}

// ParseArgs parses an x86-64 argument specification: space-separated
// SIZE@OPERAND, SIZE one of ±1, ±2, ±4, ±8 (negative: signed), OPERAND a
// register (%rdi, %eax), a constant ($42) or memory at a register plus an
// offset (-20(%rbp), (%rax)). Indexed memory operands are refused.
func ParseArgs(spec string) ([]Arg, error) {
	var out []Arg
	for _, f := range strings.Fields(spec) {
		a, err := parseArg(f)
		if err != nil {
			return nil, fmt.Errorf("argument %d (%q): %w", len(out), f, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func parseArg(s string) (Arg, error) {
	var a Arg
	sz, op, ok := strings.Cut(s, "@")
	if !ok {
		return a, errors.New("want SIZE@OPERAND")
	}
	n, err := strconv.Atoi(sz)
	if err != nil {
		return a, fmt.Errorf("bad size %q", sz)
	}
	if n < 0 {
		a.Signed, n = true, -n
	}
	if n != 1 && n != 2 && n != 4 && n != 8 {
		return a, fmt.Errorf("size %d is not 1, 2, 4 or 8", n)
	}
	a.Size = n
	switch {
	case strings.HasPrefix(op, "$"):
		a.Kind = ArgConst
		a.Value, err = strconv.ParseInt(op[1:], 0, 64)
		if err != nil {
			return a, fmt.Errorf("bad constant %q", op)
		}
		return a, nil
	case strings.HasPrefix(op, "%"):
		a.Kind = ArgReg
		a.Reg, a.RegOffset, err = register(op[1:])
		return a, err
	}
	off, reg, ok := strings.Cut(op, "(")
	if !ok || !strings.HasSuffix(reg, ")") {
		return a, fmt.Errorf("unknown operand %q", op)
	}
	reg = strings.TrimSuffix(reg, ")")
	if strings.Contains(reg, ",") {
		return a, fmt.Errorf("indexed memory operand %q is not supported", op)
	}
	a.Kind = ArgMem
	if off != "" {
		if a.Value, err = strconv.ParseInt(off, 0, 64); err != nil {
			return a, fmt.Errorf("bad offset %q", off)
		}
	}
	if !strings.HasPrefix(reg, "%") {
		return a, fmt.Errorf("unknown operand %q", op)
	}
	a.Reg, a.RegOffset, err = register(reg[1:])
	return a, err
}

// ptRegs is the order of struct pt_regs on x86-64 (8 bytes each).
var ptRegs = []string{"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8",
	"ax", "cx", "dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"}

// register maps an x86-64 register name of any width (rax, eax, ax, al,
// r12, r12d, r12w, r12b, rip) to its pt_regs name and offset. The value
// read is the whole register; the argument's size truncates it.
func register(r string) (string, int, error) {
	name := ""
	switch {
	case strings.HasPrefix(r, "r") && len(r) >= 2 && r[1] >= '0' && r[1] <= '9':
		name = strings.TrimRight(r, "dwb") // r8d, r12w, r15b
	default:
		base := map[string]string{
			"rax": "ax", "eax": "ax", "ax": "ax", "al": "ax", "ah": "ax",
			"rbx": "bx", "ebx": "bx", "bx": "bx", "bl": "bx", "bh": "bx",
			"rcx": "cx", "ecx": "cx", "cx": "cx", "cl": "cx", "ch": "cx",
			"rdx": "dx", "edx": "dx", "dx": "dx", "dl": "dx", "dh": "dx",
			"rsi": "si", "esi": "si", "si": "si", "sil": "si",
			"rdi": "di", "edi": "di", "di": "di", "dil": "di",
			"rbp": "bp", "ebp": "bp", "bp": "bp", "bpl": "bp",
			"rsp": "sp", "esp": "sp", "sp": "sp", "spl": "sp",
			"rip": "ip",
		}
		name = base[r]
	}
	if strings.HasSuffix(r, "h") && len(r) == 2 {
		return "", 0, fmt.Errorf("register %%%s (a high byte) is not supported", r)
	}
	for i, n := range ptRegs {
		if n == name {
			return name, 8 * i, nil
		}
	}
	return "", 0, fmt.Errorf("unknown register %%%s", r)
}

// Find returns the probe provider:name of probes; an error lists the
// file's probes of that provider when there is none.
func Find(probes []Probe, provider, name string) (Probe, error) {
	var names []string
	for _, p := range probes {
		if p.Provider == provider && p.Name == name {
			return p, nil
		}
		if p.Provider == provider {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		var provs []string
		seen := map[string]bool{}
		for _, p := range probes {
			if !seen[p.Provider] {
				seen[p.Provider] = true
				provs = append(provs, p.Provider)
			}
		}
		return Probe{}, fmt.Errorf("no USDT provider %q (the file has: %s)", provider, strings.Join(provs, ", "))
	}
	return Probe{}, fmt.Errorf("no USDT probe %s:%s (%s has: %s)", provider, name, provider, strings.Join(names, ", "))
}

// pairSuffixes are the entry and return suffixes of the probe pairs that
// programs ship: CPython's function__entry/function__return, PostgreSQL's
// query__start/query__done, the JVM's method__entry/method__return.
var pairSuffixes = [][2]string{
	{"__entry", "__return"}, {"__start", "__done"}, {"__start", "__end"}, {"__begin", "__end"},
	{"-entry", "-return"}, {"-start", "-done"}, {"_entry", "_return"}, {"_start", "_done"},
}

// Pair finds the entry and return probes a target names: "ENTRY,RETURN",
// or a stem that, with one of the usual suffix pairs (__entry/__return,
// __start/__done, ...), names both.
func Pair(probes []Probe, provider, names string) (entry, ret Probe, err error) {
	if e, r, ok := strings.Cut(names, ","); ok {
		if entry, err = Find(probes, provider, e); err != nil {
			return entry, ret, err
		}
		ret, err = Find(probes, provider, r)
		return entry, ret, err
	}
	for _, s := range pairSuffixes {
		e, err1 := Find(probes, provider, names+s[0])
		r, err2 := Find(probes, provider, names+s[1])
		if err1 == nil && err2 == nil {
			return e, r, nil
		}
	}
	if _, err := Find(probes, provider, names); err != nil {
		return entry, ret, err
	}
	return entry, ret, fmt.Errorf("USDT probe %s:%s is one probe: timing needs an entry and a return probe, written %s:ENTRY,RETURN", provider, names, provider)
}
