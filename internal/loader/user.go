// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/internal/proc"

	"github.com/tickprof/tickprof/internal/symtab"
)

// SymbolError is a symbol missing from a binary, with the closest names.
type SymbolError struct {
	Symbol  string
	Binary  string
	Closest []string
	// Hint says why the symbol is missing when the binary tells (a Go
	// function inlined into its callers, see GoNotFoundHint).
	Hint string
}

func (e *SymbolError) Error() string {
	msg := fmt.Sprintf("symbol %q not found in %s", e.Symbol, e.Binary)
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	if len(e.Closest) > 0 {
		msg += "; closest: " + strings.Join(e.Closest, ", ")
	} else if e.Hint == "" {
		msg += "; list its functions with nm -D or nm"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrSymbolNotFound) true.
func (e *SymbolError) Unwrap() error { return ErrSymbolNotFound }

// ResolveUser turns one -u argument (SYMBOL, LIB:SYMBOL, PATH:SYMBOL, with
// globs in SYMBOL) into specs for process pid (0: no process; then the
// binary must be a PATH). A glob expands to at most maxProbes functions.
func ResolveUser(pid int, arg string, maxProbes int) ([]Spec, error) {
	binPart, sym := proc.SplitTarget(arg)
	if sym == "" {
		return nil, fmt.Errorf("target %q names no symbol: use SYMBOL, LIB:SYMBOL or PATH:SYMBOL", arg)
	}
	path, display, err := proc.ResolveBinary(pid, binPart)
	if err != nil {
		return nil, err
	}
	t, err := openSymbols(path, display)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	syms, glob, err := findSymbols(t, arg, sym, path, display, maxProbes)
	if err != nil {
		return nil, err
	}
	prefix := ""
	if binPart != "" {
		prefix = filepath.Base(display) + ":"
	}
	out, err := userSpecs(t, syms, path, display, prefix, glob)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &SymbolError{Symbol: sym, Binary: display, Closest: t.Closest(sym, 5)}
	}
	distinctNames(out, prefix)
	return out, nil
}

// openSymbols opens the symbol table of the binary at path (display is
// how the user named it).
func openSymbols(path, display string) (*symtab.Table, error) {
	t, err := symtab.Open(path)
	if err == nil {
		return t, nil
	}
	var fe *elf.FormatError
	if errors.As(err, &fe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%s is not an ELF executable or library: give the binary that holds the function", display)
	}
	return nil, fmt.Errorf("read symbols of %s: %w (check that the file exists and is readable)", display, err)
}

// findSymbols looks sym up in t, or expands it as a glob (then glob is
// arg) to at most maxProbes functions.
func findSymbols(t *symtab.Table, arg, sym, path, display string, maxProbes int) (syms []symtab.Symbol, glob string, err error) {
	if strings.ContainsAny(sym, "*?[") {
		syms, err = t.Glob(sym, maxProbes)
		if err != nil {
			return nil, "", fmt.Errorf("%w (raise the most probes a glob may expand to)", err)
		}
		if len(syms) == 0 {
			return nil, "", &SymbolError{Symbol: sym, Binary: display, Closest: t.Closest(strings.Trim(sym, "*?"), 5)}
		}
		return syms, arg, nil
	}
	syms = t.Lookup(sym)
	if len(syms) == 0 {
		se := &SymbolError{Symbol: sym, Binary: display, Closest: t.Closest(sym, 5)}
		if t.IsGo {
			se.Hint = GoNotFoundHint(path, sym)
		}
		return nil, "", se
	}
	return syms, "", nil
}

// userSpecs makes one spec per distinct function address of syms, with
// the file offset its probes go on.
func userSpecs(t *symtab.Table, syms []symtab.Symbol, path, display, prefix, glob string) ([]Spec, error) {
	kind := KindUser
	if t.IsGo {
		kind = KindGoUser
	}
	seen := map[uint64]bool{}
	var out []Spec
	for _, s := range syms {
		if s.Value == 0 || seen[s.Value] {
			continue // undefined, or an alias of a function already taken
		}
		seen[s.Value] = true
		off, err := t.FileOffset(s.Value)
		if err != nil {
			return nil, fmt.Errorf("symbol %s in %s: %w", s.Name, display, err)
		}
		var stepped string
		if kind == KindUser {
			// The entry probe (and the uretprobe on the same address)
			// goes on the first instruction the kernel emulates when
			// that is safe (symtab.NativeEntrySite): past endbr64,
			// register moves and tests that leave rsp alone.
			if e, err := t.NativeEntrySite(s); err == nil {
				off += e.Skip
				stepped = e.Why
			}
		}
		out = append(out, Spec{
			Kind: kind, Name: prefix + s.Display, Binary: path, File: display, Symbol: s.Name,
			Offset: off, Addr: s.Value, Size: s.Size, Stepped: stepped, Glob: glob,
		})
	}
	return out, nil
}

// distinctNames gives targets that would share a name distinct ones: first
// the symbol as the binary spells it (the instantiations of a generic
// function, shown alike as pkg.F[...], are pkg.F[go.shape.int] and
// pkg.F[go.shape.string]), then the address (several local functions of
// one name).
func distinctNames(specs []Spec, prefix string) {
	for _, rename := range []func(*Spec) string{
		func(s *Spec) string { return prefix + s.Symbol },
		func(s *Spec) string { return fmt.Sprintf("%s@%#x", s.Name, s.Addr) },
	} {
		count := map[string]int{}
		for _, s := range specs {
			count[s.Name]++
		}
		for i := range specs {
			if count[specs[i].Name] > 1 {
				specs[i].Name = rename(&specs[i])
			}
		}
	}
}

// attachUser attaches the entry and exit programs to native user
// functions: a uprobe and a uretprobe per target, the target index as
// cookie and the process as filter; one multi-uprobe link per binary and
// side where the kernel has them (attachUprobes). Every exit is attached
// before any entry: a call that enters while its exit is not attached yet
// would leave an entry that never pops (and a later exit would pop it,
// long after); an exit without an entry is only counted as an orphan.
func attachUser(s *Session, ts []*Target) error {
	reqs := make([]uprobeReq, len(ts))
	for i, t := range ts {
		reqs[i] = uprobeReq{t: t, binary: t.Spec.Binary, offset: t.Spec.Offset, cookie: uint64(t.Index)}
	}
	var entryMulti, exitMulti *ebpf.Program
	if m := s.multiObjects(); m != nil {
		entryMulti, exitMulti = m.TpUentryMulti, m.TpUexitMulti
	} else if err := s.reserveSingleLinks(2 * len(ts)); err != nil {
		return err
	} else if err := s.singlePrograms(); err != nil {
		return err
	}
	return s.linkUprobes(func() error {
		if err := s.attachUprobes(s.ctx, reqs, true, false, s.objs.TpUexit, exitMulti); err != nil {
			return err
		}
		return s.attachUprobes(s.ctx, reqs, false, true, s.objs.TpUentry, entryMulti)
	})
}

// uprobeError explains why a uprobe on t (at off, bound to process pid
// when not 0) could not be attached: a process gone is said so (the
// kernel's ESRCH reads as "does not exist", as a kernel without uprobes
// does).
func uprobeError(t *Target, off uint64, pid int, err error) error {
	if pid != 0 {
		if cerr := proc.CheckProcess(pid); cerr != nil {
			return fmt.Errorf("attach to %s: %w", t.Name, cerr)
		}
	}
	if errors.Is(err, link.ErrNotSupported) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("attach to %s: %w", t.Name, ErrNoUprobes)
	}
	if errors.Is(err, os.ErrPermission) {
		return proc.UprobeAttachError(t.Name, err)
	}
	return fmt.Errorf("attach a uprobe to %s (%s offset %#x): %w", t.Name, t.Spec.Binary, off, linkErr(err))
}
