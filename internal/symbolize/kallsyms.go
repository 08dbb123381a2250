// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// KernelSym is one kernel text symbol from /proc/kallsyms.
type KernelSym struct {
	Addr   uint64
	Name   string
	Module string // "" for the core kernel
}

// Kallsyms is the kernel's text symbols sorted by address, held compactly
// (about 14 bytes a symbol beside its name): the 80,000 or so text
// symbols of a distribution kernel were 15 MiB as strings and structs,
// a sampling run's largest allocation.
type Kallsyms struct {
	addrs []uint64
	// Symbol i's name is names[off[i]:off[i+1]]; its module is
	// modules[mod[i]] ("" for the core kernel).
	names   []byte
	off     []uint32
	mod     []uint16
	modules []string
	// lo and hi are the lowest and highest text symbol addresses (of
	// all the kernel's, in a table read for some addresses only).
	lo, hi uint64
}

// ReadKallsyms reads /proc/kallsyms. It fails when the addresses are hidden
// (all zero: not root, or kernel.kptr_restrict=2).
func ReadKallsyms() (*Kallsyms, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("open /proc/kallsyms: %w", err)
	}
	defer f.Close()
	k, err := ParseKallsyms(f)
	if err != nil {
		return nil, err
	}
	return k, nil
}

// ParseKallsyms parses kallsyms text ("addr type name [module]"), keeping text
// symbols (types t, T, w, W).
func ParseKallsyms(r io.Reader) (*Kallsyms, error) {
	var raw Kallsyms
	raw.modules = []string{""}
	modIndex := map[string]uint16{"": 0}
	err := eachTextSym(r, func(addr uint64, name, mod []byte) error {
		m, err := raw.module(modIndex, mod)
		if err != nil {
			return err
		}
		if len(raw.names)+len(name) > math.MaxUint32 {
			return fmt.Errorf("kallsyms names exceed 4 GiB")
		}
		raw.addrs = append(raw.addrs, addr)
		raw.off = append(raw.off, uint32(len(raw.names)))
		raw.names = append(raw.names, name...)
		raw.mod = append(raw.mod, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	raw.off = append(raw.off, uint32(len(raw.names)))
	return raw.sorted(), nil
}

// module is the index of module mod in k.modules, added on first use.
func (k *Kallsyms) module(index map[string]uint16, mod []byte) (uint16, error) {
	if len(mod) == 0 {
		return 0, nil
	}
	if i, ok := index[string(mod)]; ok {
		return i, nil
	}
	if len(k.modules) > math.MaxUint16 {
		return 0, fmt.Errorf("kallsyms names more than %d modules", math.MaxUint16)
	}
	i := uint16(len(k.modules))
	k.modules = append(k.modules, string(mod))
	index[string(mod)] = i
	return i, nil
}

// eachTextSym calls fn with each text symbol of kallsyms text (types t,
// T, w, W; name and mod are valid during the call only). It fails on an
// address it cannot parse, on no text symbols, and when every address is
// zero (hidden).
func eachTextSym(r io.Reader, fn func(addr uint64, name, mod []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	nonzero, any := false, false
	for sc.Scan() {
		addr, addrOK, typ, name, mod, ok := kallsymsLine(sc.Bytes())
		if !ok {
			continue
		}
		switch typ {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		if !addrOK {
			return fmt.Errorf("parse kallsyms address in %q", sc.Bytes())
		}
		nonzero = nonzero || addr != 0
		any = true
		if err := fn(addr, name, mod); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read kallsyms: %w", err)
	}
	if !any {
		return fmt.Errorf("kallsyms holds no text symbols")
	}
	if !nonzero {
		return fmt.Errorf("kernel symbol addresses are hidden (run as root, or set kernel.kptr_restrict=0)")
	}
	return nil
}

// kallsymsLine splits a kallsyms line ("addr type name [module]", fields
// apart by spaces or tabs) without allocating: the address (addrOK false when
// it is not a hexadecimal number of at most 16 digits), the type, the
// name and the module without its brackets ("" for none). ok is false for
// a line of fewer than three fields.
func kallsymsLine(b []byte) (addr uint64, addrOK bool, typ byte, name, mod []byte, ok bool) {
	var f [4][]byte
	n := 0
	for i := 0; i < len(b) && n < len(f); {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		if j > i {
			f[n] = b[i:j]
			n++
		}
		i = j
	}
	if n < 3 || len(f[1]) != 1 {
		return 0, false, 0, nil, nil, false
	}
	addr, addrOK = hexAddr(f[0])
	if n > 3 {
		mod = bytes.Trim(f[3], "[]")
	}
	return addr, addrOK, f[1][0], f[2], mod, true
}

// hexAddr parses up to 16 hexadecimal digits.
func hexAddr(h []byte) (uint64, bool) {
	if len(h) == 0 || len(h) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// sorted is k with its symbols in address order (stable: of symbols at
// one address, the first listed stays first), names packed in that order.
func (k *Kallsyms) sorted() *Kallsyms {
	n := len(k.addrs)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(i, j int) bool { return k.addrs[order[i]] < k.addrs[order[j]] })
	out := &Kallsyms{addrs: make([]uint64, n), names: make([]byte, 0, len(k.names)),
		off: make([]uint32, n+1), mod: make([]uint16, n), modules: k.modules}
	for i, j := range order {
		out.addrs[i], out.mod[i] = k.addrs[j], k.mod[j]
		out.off[i] = uint32(len(out.names))
		out.names = append(out.names, k.names[k.off[j]:k.off[j+1]]...)
	}
	out.off[n] = uint32(len(out.names))
	out.lo, out.hi = out.addrs[0], out.addrs[n-1]
	return out
}

// sym is symbol i.
func (k *Kallsyms) sym(i int) KernelSym {
	return KernelSym{Addr: k.addrs[i], Name: string(k.names[k.off[i]:k.off[i+1]]), Module: k.modules[k.mod[i]]}
}

// Lookup returns the symbol holding addr: the last symbol starting at or
// below it.
func (k *Kallsyms) Lookup(addr uint64) (KernelSym, bool) {
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > addr }) - 1
	if i < 0 {
		return KernelSym{}, false
	}
	return k.sym(i), true
}

// Range returns the lowest and highest symbol addresses.
func (k *Kallsyms) Range() (lo, hi uint64) {
	return k.lo, k.hi
}

// EachKallsym calls fn with the fields of each line of /proc/kallsyms
// (address, type, name and, for a module's symbol, the module) until fn
// returns false.
func EachKallsym(fn func(f []string) bool) error {
	return EachFields("/proc/kallsyms", fn)
}

// EachFields calls fn with the fields of each line of the file at path
// until fn returns false.
func EachFields(path string, fn func(f []string) bool) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if !fn(strings.Fields(sc.Text())) {
			break
		}
	}
	return sc.Err()
}
