// SPDX-License-Identifier: Apache-2.0

package symbolize

import "debug/dwarf"

// inlTree is a subprogram's inlined calls and lexical blocks, read once
// with their address ranges, in the order a walk of its entries meets
// them. Walking the entries again for each address cost most of a Python
// interpreter's symbolization: its evaluation loop is one subprogram of
// thousands of inlined calls, and every sampled address in it decoded
// them all, with their range lists.
type inlTree struct {
	nodes []inlNode
}

// inlNode is one inlined call (DW_TAG_inlined_subroutine) or lexical
// block of an inlTree.
type inlNode struct {
	ranges [][2]uint64
	off    dwarf.Offset // the entry
	// skip is the index of the node after this one's subtree.
	skip    int32
	inlined bool
	// open marks a lexical block without addresses of its own (GCC emits
	// those): it may still hold inlined calls, and is always entered.
	open bool
}

// tree returns the inlTree of the subprogram at off, read with r once.
func (in *inliner) tree(r *dwarf.Reader, off dwarf.Offset) *inlTree {
	if t, ok := in.trees[off]; ok {
		return t
	}
	t := &inlTree{}
	in.trees[off] = t
	r.Seek(off)
	if sub, err := r.Next(); err == nil && sub != nil && sub.Children {
		t.read(in.d, r)
	}
	return t
}

// read appends the inlined calls and lexical blocks among the entries r
// reads next, to the end of their parent's children, with theirs.
func (t *inlTree) read(d *dwarf.Data, r *dwarf.Reader) {
	for {
		e, err := r.Next()
		if err != nil || e == nil || e.Tag == 0 {
			return
		}
		if e.Tag != dwarf.TagInlinedSubroutine && e.Tag != dwarf.TagLexDwarfBlock {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		n := inlNode{off: e.Offset, inlined: e.Tag == dwarf.TagInlinedSubroutine}
		n.open = !n.inlined && !hasRanges(e)
		if rs, err := d.Ranges(e); err == nil {
			n.ranges = rs
		}
		i := len(t.nodes)
		t.nodes = append(t.nodes, n)
		if e.Children {
			t.read(d, r)
		}
		t.nodes[i].skip = int32(len(t.nodes))
	}
}

// chain returns the entries of the inlined calls that hold pc, outermost
// first: the walk enters each call or block whose ranges hold pc (and
// each open block) and passes over the others with what they hold.
func (t *inlTree) chain(pc uint64) []dwarf.Offset {
	var out []dwarf.Offset
	for i := 0; i < len(t.nodes); {
		n := &t.nodes[i]
		if !n.open && !n.holds(pc) {
			i = int(n.skip)
			continue
		}
		if n.inlined {
			out = append(out, n.off)
		}
		i++
	}
	return out
}

func (n *inlNode) holds(pc uint64) bool {
	for _, r := range n.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}
