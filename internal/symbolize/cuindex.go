// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"debug/dwarf"
	"sort"
)

// cuIndex holds the address ranges of every unit of a file's DWARF, sorted,
// to find the unit of an address by a binary search. dwarf.Reader.SeekPC
// decodes each unit's entry and its ranges again on every call, from the
// first unit on: on a Python interpreter's debug file (253 units, the
// ranges of link-time-optimized units in .debug_rnglists) that was a tenth
// of a sampled run's CPU.
type cuIndex struct {
	ranges []cuRange
	// seek says the index cannot stand for SeekPC (two units' ranges
	// overlap, or a unit's ranges could not be read): every lookup is
	// SeekPC's.
	seek bool
}

// cuRange is one address range [lo, hi) of the unit whose entry is at off.
type cuRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

// newCUIndex reads the ranges of every unit of d.
func newCUIndex(d *dwarf.Data) *cuIndex {
	x := &cuIndex{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return &cuIndex{seek: true}
		}
		if e == nil {
			break
		}
		rs, err := d.Ranges(e)
		if err != nil {
			return &cuIndex{seek: true}
		}
		for _, rg := range rs {
			if rg[0] < rg[1] {
				x.ranges = append(x.ranges, cuRange{lo: rg[0], hi: rg[1], off: e.Offset})
			}
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	sort.Slice(x.ranges, func(i, j int) bool { return x.ranges[i].lo < x.ranges[j].lo })
	// Each range's end becomes the furthest end of the ranges up to it,
	// with that range's unit: a unit's ranges may nest, and a range that
	// starts inside another unit's is an overlap.
	for i := 1; i < len(x.ranges); i++ {
		p, c := x.ranges[i-1], &x.ranges[i]
		if c.lo < p.hi && c.off != p.off {
			return &cuIndex{seek: true}
		}
		if p.hi > c.hi {
			c.hi, c.off = p.hi, p.off
		}
	}
	return x
}

// seekPC is r.SeekPC(pc) of a new reader r: the entry of the first unit
// whose ranges hold pc, with r positioned after it; through the index
// when the units' ranges do not overlap.
func (in *inliner) seekPC(r *dwarf.Reader, pc uint64) (*dwarf.Entry, error) {
	if in.cus == nil {
		in.cus = newCUIndex(in.d)
	}
	x := in.cus
	if x.seek {
		return r.SeekPC(pc)
	}
	i := sort.Search(len(x.ranges), func(i int) bool { return x.ranges[i].lo > pc }) - 1
	if i < 0 || pc >= x.ranges[i].hi {
		return nil, dwarf.ErrUnknownPC
	}
	r.Seek(x.ranges[i].off)
	return r.Next()
}
