// SPDX-License-Identifier: Apache-2.0

package python

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Raw is one frame as the BPF walk copies it (bpf/python.h struct
// py_frame): the code object's address, and the instruction (f_lasti in
// 3.8-3.10, a pointer into the code in 3.11+) in the low 56 bits with the
// frame's is_entry (3.11) or owner (3.12+) byte in the top 8; and the
// code object's stamp at sample time (Stamp).
type Raw struct {
	Code, Instr, Stamp uint64
}

// Stamp is a code object's stamp as the BPF walk takes it: the address
// of its name (co_qualname, 3.11+, else co_name) xor that of its line
// table rotated by 16 bits. A code object freed and another allocated at
// its address (module code objects are freed once imported) has another.
func Stamp(name, table uint64) uint64 { return name ^ (table<<16 | table>>48) }

// Frame is one Python frame.
type Frame struct {
	// Function is the code object's qualified name (3.11+: "Class.method",
	// "outer.<locals>.inner") or, in 3.8-3.10, its name.
	Function string
	File     string
	Line     int // 0 when the instruction has no line
	// Entry marks the outermost frame that one call of the eval loop
	// (_PyEval_EvalFrameDefault) runs: in 3.8-3.10 every frame, in 3.11+
	// the frame that call was entered with.
	Entry bool
}

// Limits on what is read of a code object: longer names and tables are
// taken as damage.
const (
	maxString = 4096
	maxTable  = 1 << 20
	maxCodes  = 1 << 16
	// maxCached bounds what one resolver keeps of the code objects it
	// read: past it the cache starts again.
	maxCached = 32 << 20
)

// Resolver turns one process's raw frames into frames, reading its code
// objects from /proc/PID/mem once each.
type Resolver struct {
	in    Interpreter
	mem   *os.File
	codes map[codeKey]*code
	// cached is the bytes the cached code objects hold.
	cached int
}

// codeKey is a code object: its address and stamp.
type codeKey struct{ addr, stamp uint64 }

// code is what a frame needs of one code object.
type code struct {
	name, file string
	first      int
	table      []byte
	err        error
}

// NewResolver opens the memory of process pid, which runs in.
func NewResolver(pid int, in Interpreter) (*Resolver, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, fmt.Errorf("open memory of process %d: %w", pid, err)
	}
	return &Resolver{in: in, mem: f, codes: map[codeKey]*code{}}, nil
}

// Close closes the process's memory.
func (r *Resolver) Close() error { return r.mem.Close() }

// Interpreter is the interpreter the resolver reads.
func (r *Resolver) Interpreter() Interpreter { return r.in }

// Frames turns a sample's raw frames (leaf first) into frames; failed
// counts frames whose code object could not be read (they are left out).
func (r *Resolver) Frames(raw []Raw) (out []Frame, failed int) {
	l := r.in.Layout
	for _, f := range raw {
		owner := int(f.Instr >> 56)
		instr := f.Instr & (1<<56 - 1)
		if l.OwnerCStack != None && owner == l.OwnerCStack {
			// The entry frame of an eval-loop call (3.12+): the frame
			// before it is the first that call runs.
			if n := len(out); n > 0 {
				out[n-1].Entry = true
			}
			continue
		}
		c := r.code(f.Code, f.Stamp)
		if c.err != nil {
			failed++
			continue
		}
		fr := Frame{Function: c.name, File: c.file, Line: r.line(c, f.Code, instr)}
		switch {
		case l.FrameOwner == None:
			fr.Entry = true
		case l.OwnerCStack == None:
			fr.Entry = owner != 0 // 3.11's is_entry
		}
		out = append(out, fr)
	}
	return out, failed
}

// line is the line of instr in code object c at addr.
func (r *Resolver) line(c *code, addr, instr uint64) int {
	l := r.in.Layout
	var line int
	switch {
	case l.Minor <= 9:
		line = lineLnotab(c.table, c.first, int(int32(instr)))
	case l.Minor == 10:
		lasti := int(int32(instr))
		if lasti < 0 {
			return c.first
		}
		line = lineTable310(c.table, c.first, 2*lasti)
	default:
		start := addr + uint64(l.CodeAdaptive)
		if instr < start {
			return c.first // not started yet
		}
		line = lineLocations(c.table, c.first, int((instr-start)/2))
	}
	return max(line, 0)
}

// code reads the code object at addr with stamp once: an error when its
// stamp is not the one the sample took (it was freed since, or the frame
// was being set up).
func (r *Resolver) code(addr, stamp uint64) *code {
	k := codeKey{addr, stamp}
	if c, ok := r.codes[k]; ok {
		return c
	}
	if len(r.codes) >= maxCodes || r.cached >= maxCached {
		clear(r.codes)
		r.cached = 0
	}
	c := r.readCode(addr, stamp)
	r.codes[k] = c
	r.cached += len(c.name) + len(c.file) + len(c.table) + 64
	return c
}

func (r *Resolver) readCode(addr, stamp uint64) *code {
	l := r.in.Layout
	nameAt := l.CodeName
	if l.HasQualname() {
		nameAt = l.CodeQualname
	}
	c := &code{}
	var first [4]byte
	name, err := r.word(addr + uint64(nameAt))
	if err != nil {
		return &code{err: err}
	}
	table, err := r.word(addr + uint64(l.CodeLineTable))
	if err != nil {
		return &code{err: err}
	}
	if Stamp(name, table) != stamp {
		return &code{err: fmt.Errorf("code object %#x changed since the sample", addr)}
	}
	if c.name, err = r.unicodeAt(addr + uint64(nameAt)); err != nil {
		return &code{err: fmt.Errorf("code object %#x name: %w", addr, err)}
	}
	if c.file, err = r.unicodeAt(addr + uint64(l.CodeFilename)); err != nil {
		return &code{err: fmt.Errorf("code object %#x file: %w", addr, err)}
	}
	if err := r.read(addr+uint64(l.CodeFirstLine), first[:]); err != nil {
		return &code{err: err}
	}
	c.first = int(int32(binary.LittleEndian.Uint32(first[:])))
	if c.table, err = r.bytesAt(addr + uint64(l.CodeLineTable)); err != nil {
		return &code{err: fmt.Errorf("code object %#x line table: %w", addr, err)}
	}
	return c
}

func (r *Resolver) read(addr uint64, b []byte) error {
	if addr == 0 || addr >= 1<<63 {
		return fmt.Errorf("read %#x: not a user address", addr)
	}
	_, err := r.mem.ReadAt(b, int64(addr))
	return err
}

func (r *Resolver) word(addr uint64) (uint64, error) {
	var b [8]byte
	if err := r.read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// bytesAt reads the bytes object whose address is at ptr.
func (r *Resolver) bytesAt(ptr uint64) ([]byte, error) {
	l := r.in.Layout
	obj, err := r.word(ptr)
	if err != nil {
		return nil, err
	}
	n, err := r.word(obj + uint64(l.BytesSize))
	if err != nil {
		return nil, err
	}
	if n > maxTable {
		return nil, fmt.Errorf("bytes object of %d bytes", n)
	}
	b := make([]byte, n)
	return b, r.read(obj+uint64(l.BytesData), b)
}

// unicodeAt reads the compact str object whose address is at ptr.
func (r *Resolver) unicodeAt(ptr uint64) (string, error) {
	l := r.in.Layout
	obj, err := r.word(ptr)
	if err != nil {
		return "", err
	}
	var hdr [4]byte
	n, err := r.word(obj + uint64(l.UnicodeLength))
	if err != nil {
		return "", err
	}
	if err := r.read(obj+uint64(l.UnicodeState), hdr[:]); err != nil {
		return "", err
	}
	state := binary.LittleEndian.Uint32(hdr[:])
	kind, compact, ascii := int(state>>2)&7, state>>5&1 == 1, state>>6&1 == 1
	switch {
	case !compact:
		return "", errors.New("str object not compact")
	case n > maxString:
		return "", fmt.Errorf("str object of %d characters", n)
	case kind != 1 && kind != 2 && kind != 4:
		return "", fmt.Errorf("str object of kind %d", kind)
	}
	at := obj + uint64(l.UnicodeCompactData)
	if ascii {
		at = obj + uint64(l.UnicodeASCIIData)
	}
	b := make([]byte, int(n)*kind)
	if err := r.read(at, b); err != nil {
		return "", err
	}
	return decode(b, kind), nil
}

// decode turns a str object's characters (kind bytes each: Latin-1,
// UCS-2, UCS-4 code points) into a string.
func decode(b []byte, kind int) string {
	rs := make([]rune, 0, len(b)/kind)
	for i := 0; i+kind <= len(b); i += kind {
		switch kind {
		case 1:
			rs = append(rs, rune(b[i]))
		case 2:
			rs = append(rs, rune(binary.LittleEndian.Uint16(b[i:])))
		default:
			rs = append(rs, rune(binary.LittleEndian.Uint32(b[i:])))
		}
	}
	return string(rs)
}
