// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"debug/dwarf"
	"debug/elf"
	"reflect"
	"sort"
	"testing"
)

// The inlined calls found through a subprogram's inlTree are those a walk
// of its entries for each address finds (walkFrames, how they were found
// before), at addresses spread over the functions of testdata/c/inlined.c
// built -O2 -g and of libc's and Python 3.11's debug files when installed
// (every 64th byte of Python's evaluation loop, thousands of inlined
// calls deep in lexical blocks).
func TestInlTreeAgreesWithWalk(t *testing.T) {
	for _, p := range append([]string{inlinedBinary(t)}, installedDebugFiles(t)...) {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.DWARF()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		syms, _ := f.Symbols()
		var pcs []uint64
		funcs := 0
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
				continue
			}
			funcs++
			step := max(1, s.Size/3)
			if s.Name == "_PyEval_EvalFrameDefault" {
				step = 64
			} else if len(syms) > 400 && funcs%20 != 0 {
				continue
			}
			for pc := s.Value; pc < s.Value+s.Size; pc += step {
				pcs = append(pcs, pc)
			}
		}
		f.Close()
		in, ref := newInliner(d), newInliner(d)
		inlined := 0
		for _, pc := range pcs {
			got, want := in.frames(pc), walkFrames(ref, pc)
			if (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %#x: tree gave %+v, walk %+v", p, pc, got, want)
			}
			if len(got) > 0 {
				inlined++
			}
		}
		if inlined == 0 {
			t.Errorf("%s: none of %d addresses is in an inlined call", p, len(pcs))
		}
		t.Logf("%s: %d addresses, %d in inlined calls", p, len(pcs), inlined)
	}
}

// walkFrames is inliner.frames walking the subprogram's entries for pc.
func walkFrames(in *inliner, pc uint64) []inlineFrame {
	r := in.d.Reader()
	cu, err := r.SeekPC(pc)
	if err != nil || cu == nil {
		return nil
	}
	u := in.unit(cu)
	i := sort.Search(len(u.subs), func(i int) bool { return u.subs[i].lo > pc }) - 1
	if i < 0 || pc >= u.subs[i].hi {
		return nil
	}
	r.Seek(u.subs[i].off)
	sub, err := r.Next()
	if err != nil || sub == nil || !sub.Children {
		return nil
	}
	var chain []*dwarf.Entry
	for depth := 1; depth > 0; {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			depth--
			continue
		}
		if e.Tag == dwarf.TagInlinedSubroutine || e.Tag == dwarf.TagLexDwarfBlock {
			rs, _ := in.d.Ranges(e)
			in := false
			for _, r := range rs {
				in = in || pc >= r[0] && pc < r[1]
			}
			if in || e.Tag == dwarf.TagLexDwarfBlock && !hasRanges(e) {
				if e.Tag == dwarf.TagInlinedSubroutine {
					chain = append(chain, e)
				}
				if e.Children {
					depth++
				}
				continue
			}
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	out := make([]inlineFrame, 0, len(chain))
	for k := len(chain) - 1; k >= 0; k-- {
		e := chain[k]
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
