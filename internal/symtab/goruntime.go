// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// GoOffsets are the byte offsets of the runtime.g fields a probe reads to
// tell goroutines apart.
type GoOffsets struct {
	// Goid is the offset of runtime.g.goid (the goroutine ID).
	Goid uint64
	// StackHi is the offset of runtime.g.stack.hi (the stack top).
	StackHi uint64
	// Source says where the offsets came from: "DWARF", or the Go
	// version whose known layout was used.
	Source string
}

// goidByVersion is runtime.g's goid offset on 64-bit platforms, by the
// first Go minor version with that layout, for binaries without DWARF.
// Go 1.23 added g.syscallbp before goid (+8); in Go 1.25 the fields before
// it shrank by 8 bytes again. The entries were checked against the DWARF of
// binaries built by go1.22.12, go1.23.12, go1.24.13, go1.25.0 and go1.26.8
// (goprobe_test.go checks the current toolchain); 1.17 to 1.21 are taken
// to have the layout of 1.22 (not checked here).
var goidByVersion = []struct {
	minor int
	goid  uint64
}{
	{17, 152},
	{23, 160},
	{25, 152},
}

// GoRuntimeOffsets returns the offsets of runtime.g.goid and
// runtime.g.stack.hi: from the binary's DWARF when present, else from the
// layout of its Go version (Go 1.17 or later: the register ABI, with g in
// R14 on amd64).
func (t *Table) GoRuntimeOffsets() (GoOffsets, error) {
	if !t.IsGo {
		return GoOffsets{}, fmt.Errorf("%s is not a Go executable", t.Path)
	}
	if t.f != nil {
		if d, err := t.f.DWARF(); err == nil {
			if off, err := dwarfGOffsets(d); err == nil {
				return off, nil
			}
		}
	}
	minor, ok := goMinor(t.GoVersion)
	if !ok {
		return GoOffsets{}, fmt.Errorf("%s has no DWARF and no readable Go version (%q): cannot locate the goroutine ID; rebuild without -ldflags=-w", t.Path, t.GoVersion)
	}
	if minor < goidByVersion[0].minor {
		return GoOffsets{}, fmt.Errorf("%s was built by %s: tickprof times Go programs built by Go 1.17 or later (register ABI)", t.Path, t.GoVersion)
	}
	var goid uint64
	for _, v := range goidByVersion {
		if minor >= v.minor {
			goid = v.goid
		}
	}
	return GoOffsets{Goid: goid, StackHi: 8, Source: t.GoVersion + " layout"}, nil
}

// goMinor parses "go1.26.8" (or "go1.26rc1", "devel go1.27-...") into 26.
func goMinor(v string) (int, bool) {
	i := strings.Index(v, "go1.")
	if i < 0 {
		return 0, false
	}
	s := v[i+len("go1."):]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, err := strconv.Atoi(s[:j])
	return n, err == nil
}

// dwarfGOffsets reads runtime.g's goid and stack members and
// runtime.stack's hi member.
func dwarfGOffsets(d *dwarf.Data) (GoOffsets, error) {
	r := d.Reader()
	var goid, stack, hi int64 = -1, -1, -1
	for {
		e, err := r.Next()
		if err != nil {
			return GoOffsets{}, err
		}
		if e == nil {
			break
		}
		if e.Tag != dwarf.TagStructType {
			if e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if name != "runtime.g" && name != "runtime.stack" {
			r.SkipChildren()
			continue
		}
		for {
			m, err := r.Next()
			if err != nil {
				return GoOffsets{}, err
			}
			if m == nil || m.Tag == 0 {
				break
			}
			mn, _ := m.Val(dwarf.AttrName).(string)
			loc, ok := m.Val(dwarf.AttrDataMemberLoc).(int64)
			if !ok {
				continue
			}
			switch {
			case name == "runtime.g" && mn == "goid":
				goid = loc
			case name == "runtime.g" && mn == "stack":
				stack = loc
			case name == "runtime.stack" && mn == "hi":
				hi = loc
			}
		}
		if goid >= 0 && stack >= 0 && hi >= 0 {
			return GoOffsets{Goid: uint64(goid), StackHi: uint64(stack + hi), Source: "DWARF"}, nil
		}
	}
	return GoOffsets{}, errors.New("runtime.g not described in DWARF")
}

// InlinedInto returns the functions into which the function name (as the
// file spells it or as Go prints it) was inlined, according to DWARF
// (DW_TAG_inlined_subroutine). A call inlined there runs no instruction of
// the function's own code, so no probe on it sees that call. It returns an
// error when the file has no DWARF.
func (t *Table) InlinedInto(name string) ([]string, error) {
	m, err := t.InlinedIntoAll([]string{name})
	return m[name], err
}

// InlinedIntoAll is InlinedInto for several functions in one pass over the
// DWARF (about 0.3 s for a 10 MB Go binary here).
func (t *Table) InlinedIntoAll(names []string) (map[string][]string, error) {
	if t.f == nil {
		return nil, fmt.Errorf("table of %s is closed", t.Path)
	}
	d, err := t.f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("%s has no DWARF to tell where functions were inlined: %w", t.Path, err)
	}
	sc := &inlineScan{match: t.inlineMatcher(names), abstract: map[dwarf.Offset]string{}}
	if err := sc.read(d); err != nil {
		return nil, fmt.Errorf("read DWARF of %s: %w", t.Path, err)
	}
	return t.inlinedCallers(sc), nil
}

// inlineMatcher returns a function giving the asked name a DWARF name
// stands for (as spelled, or as Go prints it), and whether it was asked.
func (t *Table) inlineMatcher(names []string) func(string) (string, bool) {
	want := map[string]string{} // DWARF spelling or display name -> asked name
	for _, n := range names {
		want[n] = n
	}
	return func(n string) (string, bool) {
		if a, ok := want[n]; ok {
			return a, true
		}
		if t.IsGo {
			a, ok := want[GoDisplayName(n)]
			return a, ok
		}
		return "", false
	}
}

// inlineScan gathers, in one pass over DWARF, the abstract subprograms of
// the wanted functions and the concrete functions that inline anything.
type inlineScan struct {
	match func(string) (string, bool)
	// abstract maps the offsets of the wanted functions' abstract
	// subprograms (DW_AT_inline) to the asked name.
	abstract map[dwarf.Offset]string
	fns      []inliner // concrete functions with inlined subroutines
	cur      *inliner  // the concrete function being read
}

// inliner is a concrete function and the abstract origins of the
// subroutines inlined into it.
type inliner struct {
	name    string
	origins []dwarf.Offset
}

// read walks d's entries, tracking their depth: compile units at 0,
// functions at 1.
func (sc *inlineScan) read(d *dwarf.Data) error {
	r := d.Reader()
	depth := 0 // of the next entry
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			depth--
			continue
		}
		level := depth
		if e.Children {
			depth++
		}
		sc.entry(level, e)
	}
	sc.flush()
	return nil
}

// entry takes one DWARF entry at its depth.
func (sc *inlineScan) entry(level int, e *dwarf.Entry) {
	if level <= 1 {
		sc.flush()
	}
	switch {
	case level == 1 && e.Tag == dwarf.TagSubprogram:
		n, _ := e.Val(dwarf.AttrName).(string)
		if _, ok := e.Val(dwarf.AttrInline).(int64); ok {
			if a, ok := sc.match(n); ok {
				sc.abstract[e.Offset] = a
			}
			return
		}
		sc.cur = &inliner{name: n}
	case level > 1 && e.Tag == dwarf.TagInlinedSubroutine && sc.cur != nil:
		if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
			sc.cur.origins = append(sc.cur.origins, o)
		}
	}
}

// flush ends the concrete function being read, keeping it if it inlines
// anything.
func (sc *inlineScan) flush() {
	if sc.cur != nil && len(sc.cur.origins) > 0 {
		sc.fns = append(sc.fns, *sc.cur)
	}
	sc.cur = nil
}

// inlinedCallers maps each asked name to the sorted, distinct functions
// (as Go prints them, in a Go binary) it was inlined into.
func (t *Table) inlinedCallers(sc *inlineScan) map[string][]string {
	out := map[string][]string{}
	seen := map[[2]string]bool{}
	for _, f := range sc.fns {
		for _, o := range f.origins {
			a, ok := sc.abstract[o]
			if !ok {
				continue
			}
			n := f.name
			if t.IsGo {
				n = GoDisplayName(n)
			}
			if !seen[[2]string{a, n}] {
				seen[[2]string{a, n}] = true
				out[a] = append(out[a], n)
			}
		}
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}
