// SPDX-License-Identifier: Apache-2.0

package unwind

import "testing"

// TestEvalExprConsts checks the fixed-size constant operations: each
// operand read little-endian, the signed ones sign-extended, and a
// truncated operand refused.
func TestEvalExprConsts(t *testing.T) {
	for _, c := range []struct {
		name string
		e    []byte
		want uint64
	}{
		{"const1u", []byte{opConst1u, 0xff}, 0xff},
		{"const1s", []byte{opConst1s, 0xff}, ^uint64(0)},
		{"const1s positive", []byte{opConst1s, 0x7f}, 0x7f},
		{"const2u", []byte{opConst2u, 0x34, 0x82}, 0x8234},
		{"const2s", []byte{opConst2s, 0xfe, 0xff}, ^uint64(1)},
		{"const4u", []byte{opConst4u, 0x78, 0x56, 0x34, 0x92}, 0x92345678},
		{"const4s", []byte{opConst4s, 0x00, 0x00, 0x00, 0x80}, 0xffffffff80000000},
		{"const8u", []byte{opConst8u, 1, 2, 3, 4, 5, 6, 7, 0x88}, 0x8807060504030201},
		{"const8s", []byte{opConst8s, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ^uint64(0)},
		{"addr", []byte{opAddr, 0x10, 0x20, 0, 0, 0, 0, 0, 0}, 0x2010},
		{"const2s then const1u", []byte{opConst2s, 0x01, 0x00, opConst1u, 7}, 7},
	} {
		got, err := evalExpr(c.e, nil, memory{}, nil)
		if err != nil || got != c.want {
			t.Errorf("%s: %#x, %v; want %#x", c.name, got, err, c.want)
		}
	}
	for _, op := range []byte{opConst1u, opConst1s, opConst2u, opConst2s, opConst4u, opConst4s, opConst8u, opConst8s, opAddr} {
		if _, err := evalExpr([]byte{op}, nil, memory{}, nil); err == nil {
			t.Errorf("op %#x without its operand: no error", op)
		}
	}
}

// TestLEB128 checks the LEB128 readers on the DWARF standard's examples
// (section 7.6) and on truncated and over-long input.
func TestLEB128(t *testing.T) {
	for _, c := range []struct {
		b []byte
		u uint64
		s int64
		n int
	}{
		{[]byte{2}, 2, 2, 1},
		{[]byte{0x7e}, 126, -2, 1},
		{[]byte{0xff, 0}, 127, 127, 2},
		{[]byte{0x81, 0x7f}, 16257, -127, 2},
		{[]byte{0x80, 1}, 128, 128, 2},
		{[]byte{0x80, 0x7f}, 16256, -128, 2},
		{[]byte{0xe5, 0x8e, 0x26, 0xaa}, 624485, 624485, 3},
		{[]byte{0x80}, 0, 0, 0},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, 0, 0},
	} {
		if u, n := uleb(c.b); u != c.u || n != c.n {
			t.Errorf("uleb(% x) = %d, %d; want %d, %d", c.b, u, n, c.u, c.n)
		}
		if s, n := sleb(c.b); s != c.s || n != c.n {
			t.Errorf("sleb(% x) = %d, %d; want %d, %d", c.b, s, n, c.s, c.n)
		}
	}
}
