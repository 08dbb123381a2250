// SPDX-License-Identifier: Apache-2.0

package python

// lineLnotab is the line of byte offset addr in a 3.8 or 3.9 code object
// (co_lnotab: pairs of an address increment and a signed line increment;
// Objects/lnotab_notes.txt, PyCode_Addr2Line).
func lineLnotab(tab []byte, first, addr int) int {
	line, a := first, 0
	for i := 0; i+1 < len(tab); i += 2 {
		a += int(tab[i])
		if a > addr {
			break
		}
		line += int(int8(tab[i+1]))
	}
	return line
}

// lineTable310 is the line of byte offset addr in a 3.10 code object
// (co_linetable: pairs of a byte length and a signed line delta, -128
// meaning no line; PEP 626, Objects/codeobject.c's advance); -1 for an
// instruction without a line.
func lineTable310(tab []byte, first, addr int) int {
	line, end := first, 0
	for i := 0; i+1 < len(tab); i += 2 {
		start := end
		end += int(tab[i])
		cur := -1
		if d := int8(tab[i+1]); d != -128 {
			line += int(d)
			cur = line
		}
		if start <= addr && addr < end {
			return cur
		}
	}
	return -1
}

// lineLocations is the line of code unit unit in a 3.11+ code object
// (co_linetable, CPython's location table: entries of 1-8 code units,
// each with a line delta by its kind); -1 for an instruction without a
// line.
func lineLocations(tab []byte, first, unit int) int {
	line, end := first, 0
	for i := 0; i < len(tab); {
		b := tab[i]
		if b&0x80 == 0 {
			return -1 // not at an entry's first byte: damaged
		}
		code := int(b>>3) & 15
		start := end
		end += int(b&7) + 1
		var delta int
		switch {
		case code == 13 || code == 14:
			delta, _ = svarint(tab, i+1)
		case code >= 10 && code <= 12:
			delta = code - 10
		}
		line += delta
		if start <= unit && unit < end {
			if code == 15 {
				return -1
			}
			return line
		}
		for i++; i < len(tab) && tab[i]&0x80 == 0; i++ {
		}
	}
	return -1
}

// svarint reads the location table's signed varint at i: 6-bit groups,
// least significant first, 0x40 marking another, the sign in bit 0.
func svarint(tab []byte, i int) (int, int) {
	v, shift := 0, 0
	for ; i < len(tab) && shift < 32; i++ {
		v |= int(tab[i]&0x3f) << shift
		shift += 6
		if tab[i]&0x40 == 0 {
			i++
			break
		}
	}
	if v&1 != 0 {
		return -(v >> 1), i
	}
	return v >> 1, i
}
