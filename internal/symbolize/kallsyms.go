// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// KernelSym is one kernel text symbol from /proc/kallsyms.
type KernelSym struct {
	Addr   uint64
	Name   string
	Module string // "" for the core kernel
}

// Kallsyms is the kernel's text symbols sorted by address.
type Kallsyms struct {
	syms []KernelSym
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
	var syms []KernelSym
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	nonzero := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		switch fields[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("parse kallsyms address %q: %w", fields[0], err)
		}
		if addr != 0 {
			nonzero = true
		}
		s := KernelSym{Addr: addr, Name: fields[2]}
		if len(fields) > 3 {
			s.Module = strings.Trim(fields[3], "[]")
		}
		syms = append(syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	if len(syms) == 0 {
		return nil, fmt.Errorf("kallsyms holds no text symbols")
	}
	if !nonzero {
		return nil, fmt.Errorf("kernel symbol addresses are hidden (run as root, or set kernel.kptr_restrict=0)")
	}
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr })
	return &Kallsyms{syms: syms}, nil
}

// Lookup returns the symbol holding addr: the last symbol starting at or
// below it.
func (k *Kallsyms) Lookup(addr uint64) (KernelSym, bool) {
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].Addr > addr }) - 1
	if i < 0 {
		return KernelSym{}, false
	}
	return k.syms[i], true
}

// Range returns the lowest and highest symbol addresses.
func (k *Kallsyms) Range() (lo, hi uint64) {
	return k.syms[0].Addr, k.syms[len(k.syms)-1].Addr
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
