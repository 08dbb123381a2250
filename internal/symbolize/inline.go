// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"debug/dwarf"
	"sort"
)

// inlineFrame is one function a program counter is inside of because it was
// inlined: the function and the position of the call in its caller.
type inlineFrame struct {
	Function string
	File     string // of the call site, in the caller
	Line     int64
}

// inliner finds the inlined calls around a program counter from DWARF
// (DW_TAG_inlined_subroutine), which symtab does not read: Go and C
// compilers both describe inlining there. Each compile unit's subprograms are
// indexed by address on first use.
type inliner struct {
	d     *dwarf.Data
	units map[dwarf.Offset]*unitIndex
	names map[dwarf.Offset]string
	// cus finds the compile unit of an address (cuIndex), built on the
	// first lookup.
	cus *cuIndex
	// trees holds the inlined calls of the subprograms met, by the
	// subprogram's offset (inlTree).
	trees map[dwarf.Offset]*inlTree
}

// unitIndex holds a compile unit's subprograms sorted by start address and
// its file table.
type unitIndex struct {
	subs  []subRange
	files []*dwarf.LineFile
}

type subRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

// newInliner reads the inlined calls of DWARF data d.
func newInliner(d *dwarf.Data) *inliner {
	return &inliner{d: d, units: map[dwarf.Offset]*unitIndex{}, names: map[dwarf.Offset]string{}, trees: map[dwarf.Offset]*inlTree{}}
}

// regrown takes up d, the same file's DWARF with more units read
// (symtab.Table.GrowDWARF): the units read before keep their offsets, so
// their indexes, names and trees hold; the index of the units' ranges is
// built again, on the next lookup, to hold the units read since.
func (in *inliner) regrown(d *dwarf.Data) {
	if d != in.d {
		in.d, in.cus = d, nil
	}
}

// frames returns the inlined bodies pc lies in, innermost first: each with
// its function name and the call site (file, line) in the function it was
// inlined into, which is frames[i+1] or, for the last, the real function
// that holds pc.
func (in *inliner) frames(pc uint64) []inlineFrame {
	r := in.d.Reader()
	cu, err := in.seekPC(r, pc)
	if err != nil || cu == nil {
		return nil
	}
	u := in.unit(cu)
	if u == nil {
		return nil
	}
	i := sort.Search(len(u.subs), func(i int) bool { return u.subs[i].lo > pc }) - 1
	if i < 0 || pc >= u.subs[i].hi {
		return nil
	}
	chain := in.tree(r, u.subs[i].off).chain(pc)
	out := make([]inlineFrame, 0, len(chain))
	for k := len(chain) - 1; k >= 0; k-- {
		r.Seek(chain[k])
		e, err := r.Next()
		if err != nil || e == nil {
			return nil
		}
		fr := inlineFrame{Function: in.name(e)}
		if fi, ok := e.Val(dwarf.AttrCallFile).(int64); ok && fi >= 0 && int(fi) < len(u.files) && u.files[fi] != nil {
			fr.File = u.files[fi].Name
		}
		if ln, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
			fr.Line = ln
		}
		out = append(out, fr)
	}
	return out
}

// hasRanges reports whether e has addresses of its own.
func hasRanges(e *dwarf.Entry) bool {
	return e.Val(dwarf.AttrLowpc) != nil || e.Val(dwarf.AttrRanges) != nil
}

// name returns the name of an inlined subroutine: its own, else its
// abstract origin's, following the origin's own origin or specification
// (a C++ method's declaration) a few steps.
func (in *inliner) name(e *dwarf.Entry) string {
	for range 4 {
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			return n
		}
		off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return ""
			}
		}
		if n, ok := in.names[off]; ok {
			return n
		}
		r := in.d.Reader()
		r.Seek(off)
		o, err := r.Next()
		if err != nil || o == nil {
			return ""
		}
		if n, ok := o.Val(dwarf.AttrLinkageName).(string); ok && o.Val(dwarf.AttrName) == nil {
			in.names[off] = n
			return n
		}
		if n, ok := o.Val(dwarf.AttrName).(string); ok {
			in.names[off] = n
			return n
		}
		e = o
	}
	return ""
}

// unit indexes the subprograms of compile unit cu.
func (in *inliner) unit(cu *dwarf.Entry) *unitIndex {
	if u, ok := in.units[cu.Offset]; ok {
		return u
	}
	u := &unitIndex{}
	in.units[cu.Offset] = u
	if lr, err := in.d.LineReader(cu); err == nil && lr != nil {
		u.files = lr.Files()
	}
	if !cu.Children {
		return u
	}
	r := in.d.Reader()
	r.Seek(cu.Offset)
	if _, err := r.Next(); err != nil {
		return u
	}
	for {
		e, err := r.Next()
		if err != nil || e == nil || e.Tag == 0 {
			break
		}
		if e.Tag == dwarf.TagSubprogram {
			if rs, err := in.d.Ranges(e); err == nil {
				for _, rg := range rs {
					u.subs = append(u.subs, subRange{lo: rg[0], hi: rg[1], off: e.Offset})
				}
			}
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	sort.Slice(u.subs, func(i, j int) bool { return u.subs[i].lo < u.subs[j].lo })
	return u
}
