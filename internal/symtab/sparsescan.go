// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The references a sparse read follows are found by a walk over the raw
// entries of the units read, which decodes only abbreviation codes and
// attribute sizes: decoding every entry with debug/dwarf (an Entry and
// its fields allocated for each) cost 1.4 s of CPU on the units a
// sampled Python interpreter touches. The walk follows the abstract
// origins and specifications of inlined calls only, and then those of
// the entries they name, entry by entry: what an inlined call's name is
// read through. Following those of every entry (the inlined calls'
// parameters and variables, every subprogram's) had a sampled Python
// interpreter's 16 units pull in 141 more.

// DWARF attributes and forms the walk knows by number.
const (
	atAbstractOrigin     = 0x31
	atSpecification      = 0x47
	tagInlinedSubroutine = 0x1d
	formRefAddr          = 0x10
	formIndirect         = 0x16
	formImplicit         = 0x21
)

// errForm says the walk met a form whose size it does not know.
var errForm = errors.New("unknown attribute form")

// attrSpec is one attribute of an abbreviation.
type attrSpec struct{ attr, form uint64 }

// abbrev is one abbreviation: the entry's tag and its attributes.
type abbrev struct {
	tag   uint64
	specs []attrSpec
}

// rawReader reads DWARF's variable-length and fixed-size values.
type rawReader struct {
	b   []byte
	p   int
	bo  binary.ByteOrder
	err error
}

func (r *rawReader) uleb() uint64 {
	var v uint64
	for s := uint(0); r.p < len(r.b); s += 7 {
		c := r.b[r.p]
		r.p++
		if s < 64 {
			v |= uint64(c&0x7f) << s
		}
		if c < 0x80 {
			return v
		}
	}
	r.err = errors.New("truncated LEB128")
	return 0
}

func (r *rawReader) skip(n int) {
	if n < 0 || r.p+n > len(r.b) {
		r.err = errors.New("truncated entry")
		r.p = len(r.b)
		return
	}
	r.p += n
}

func (r *rawReader) fixed(n int) uint64 {
	if r.p+n > len(r.b) {
		r.skip(n)
		return 0
	}
	var v uint64
	switch n {
	case 1:
		v = uint64(r.b[r.p])
	case 2:
		v = uint64(r.bo.Uint16(r.b[r.p:]))
	case 4:
		v = uint64(r.bo.Uint32(r.b[r.p:]))
	case 8:
		v = r.bo.Uint64(r.b[r.p:])
	}
	r.p += n
	return v
}

// abbrevTable parses the abbreviation table at off of .debug_abbrev.
func abbrevTable(ab []byte, off uint64, bo binary.ByteOrder) (map[uint64]abbrev, error) {
	if off >= uint64(len(ab)) {
		return nil, fmt.Errorf("abbreviation table at %#x: past the section", off)
	}
	r := &rawReader{b: ab, p: int(off), bo: bo}
	t := map[uint64]abbrev{}
	for r.err == nil {
		code := r.uleb()
		if code == 0 {
			break
		}
		tag := r.uleb()
		r.skip(1) // children
		var specs []attrSpec
		for r.err == nil {
			a, f := r.uleb(), r.uleb()
			if a == 0 && f == 0 {
				break
			}
			if f == formImplicit {
				r.uleb() // the value, in the table: nothing in the entry
			}
			specs = append(specs, attrSpec{a, f})
		}
		t[code] = abbrev{tag, specs}
	}
	return t, r.err
}

// skipForm passes over one attribute value of form f in a unit of
// version vers and address size asize (32-bit DWARF), returning it when
// it is a reference to the whole section (DW_FORM_ref_addr).
func (r *rawReader) skipForm(f uint64, vers, asize int) (ref uint64, isRef bool, err error) {
	switch f {
	case 0x19, formImplicit: // flag_present, implicit_const
	case 0x11, 0x0b, 0x0c, 0x25, 0x29: // ref1, data1, flag, strx1, addrx1
		r.skip(1)
	case 0x12, 0x05, 0x26, 0x2a: // ref2, data2, strx2, addrx2
		r.skip(2)
	case 0x27, 0x2b: // strx3, addrx3
		r.skip(3)
	case 0x13, 0x06, 0x0e, 0x17, 0x1c, 0x1d, 0x1f, 0x28, 0x2c, 0x1f20, 0x1f21:
		// ref4, data4, strp, sec_offset, ref_sup4, strp_sup, line_strp,
		// strx4, addrx4, GNU_ref_alt, GNU_strp_alt
		r.skip(4)
	case 0x14, 0x07, 0x20, 0x24: // ref8, data8, ref_sig8, ref_sup8
		r.skip(8)
	case 0x1e: // data16
		r.skip(16)
	case 0x01: // addr
		r.skip(asize)
	case formRefAddr:
		n := 4
		if vers == 2 {
			n = asize
		}
		return r.fixed(n), true, r.err
	case 0x0d, 0x0f, 0x15, 0x1a, 0x1b, 0x22, 0x23, 0x1f01, 0x1f02:
		// sdata, udata, ref_udata, strx, addrx, loclistx, rnglistx,
		// GNU_addr_index, GNU_str_index
		r.uleb()
	case 0x08: // string
		for r.p < len(r.b) && r.b[r.p] != 0 {
			r.p++
		}
		r.skip(1)
	case 0x09, 0x18: // block, exprloc
		r.skip(int(r.uleb()))
	case 0x0a: // block1
		r.skip(int(r.fixed(1)))
	case 0x03: // block2
		r.skip(int(r.fixed(2)))
	case 0x04: // block4
		r.skip(int(r.fixed(4)))
	case formIndirect:
		return r.skipForm(r.uleb(), vers, asize)
	default:
		return 0, false, fmt.Errorf("%w %#x", errForm, f)
	}
	return 0, false, r.err
}

// unitHead is what reading a unit's entries needs from its header.
type unitHead struct {
	vers, asize int
	tab         map[uint64]abbrev
	first       int // offset of the unit's first entry
}

// head reads the header of unit u of buf (32-bit DWARF), its abbreviation
// table from ab through cache.
func head(buf, ab []byte, u infoUnit, bo binary.ByteOrder, cache map[uint64]map[uint64]abbrev) (unitHead, error) {
	r := &rawReader{b: buf[:u.end], p: int(u.off) + 4, bo: bo}
	h := unitHead{vers: int(r.fixed(2))}
	var abOff uint64
	switch {
	case h.vers >= 2 && h.vers <= 4:
		abOff, h.asize = r.fixed(4), int(r.fixed(1))
	case h.vers == 5:
		utype := r.fixed(1)
		h.asize, abOff = int(r.fixed(1)), r.fixed(4)
		switch utype {
		case 4, 5: // skeleton, split compile: a unit ID
			r.skip(8)
		case 2, 6: // type, split type: a signature and an offset
			r.skip(12)
		}
	default:
		return h, fmt.Errorf("DWARF version %d", h.vers)
	}
	if r.err != nil {
		return h, r.err
	}
	h.first = r.p
	tab, ok := cache[abOff]
	if !ok {
		t, err := abbrevTable(ab, abOff, bo)
		if err != nil {
			return h, err
		}
		tab, cache[abOff] = t, t
	}
	h.tab = tab
	return h, nil
}

// unitRefs calls fn with the section offset of every abstract origin or
// specification of the inlined calls in the unit u of buf (32-bit DWARF),
// reading abbreviation tables from ab through cache.
func unitRefs(buf, ab []byte, u infoUnit, bo binary.ByteOrder, cache map[uint64]map[uint64]abbrev, fn func(uint64)) error {
	h, err := head(buf, ab, u, bo, cache)
	if err != nil {
		return err
	}
	r := &rawReader{b: buf[:u.end], p: h.first, bo: bo}
	for r.p < len(r.b) && r.err == nil {
		if err := entryRefs(r, h, u, tagInlinedSubroutine, fn); err != nil {
			return err
		}
	}
	return r.err
}

// entryRefs reads the entry at r and, when its tag is tag (any, for 0),
// calls fn with the section offset of its abstract origin and of its
// specification.
func entryRefs(r *rawReader, h unitHead, u infoUnit, tag uint64, fn func(uint64)) error {
	code := r.uleb()
	if code == 0 {
		return r.err
	}
	a, ok := h.tab[code]
	if !ok {
		return fmt.Errorf("abbreviation code %d at %#x not in its table", code, r.p)
	}
	follow := tag == 0 || a.tag == tag
	for _, s := range a.specs {
		if !follow || s.attr != atAbstractOrigin && s.attr != atSpecification {
			if _, _, err := r.skipForm(s.form, h.vers, h.asize); err != nil {
				return err
			}
			continue
		}
		off, ok, err := r.ref(s.form, h.vers, h.asize)
		if err != nil {
			return err
		}
		if ok {
			if s.form != formRefAddr {
				off += u.off // from the unit's header
			}
			fn(off)
		}
	}
	return r.err
}

// ref reads a reference of form f: its offset (in the section for
// DW_FORM_ref_addr, else in the unit), ok false for another form.
func (r *rawReader) ref(f uint64, vers, asize int) (uint64, bool, error) {
	var v uint64
	switch f {
	case 0x11: // ref1
		v = r.fixed(1)
	case 0x12: // ref2
		v = r.fixed(2)
	case 0x13: // ref4
		v = r.fixed(4)
	case 0x14: // ref8
		v = r.fixed(8)
	case 0x15: // ref_udata
		v = r.uleb()
	case formRefAddr:
		n := 4
		if vers == 2 {
			n = asize
		}
		v = r.fixed(n)
	case formIndirect:
		return r.ref(r.uleb(), vers, asize)
	default:
		_, _, err := r.skipForm(f, vers, asize)
		return 0, false, err
	}
	return v, r.err == nil, r.err
}
