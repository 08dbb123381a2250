// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"fmt"
)

// DWARF expression operations used by unwind rules (DWARF 5 §2.5): glibc's
// signal trampoline describes the interrupted registers with
// DW_OP_breg7 offsets into the signal frame, and PLT entries compute their
// CFA from the instruction pointer.
const (
	opAddr       = 0x03
	opDeref      = 0x06
	opConst1u    = 0x08
	opConst1s    = 0x09
	opConst2u    = 0x0a
	opConst2s    = 0x0b
	opConst4u    = 0x0c
	opConst4s    = 0x0d
	opConst8u    = 0x0e
	opConst8s    = 0x0f
	opConstu     = 0x10
	opConsts     = 0x11
	opDup        = 0x12
	opDrop       = 0x13
	opOver       = 0x14
	opSwap       = 0x16
	opAbs        = 0x19
	opAnd        = 0x1a
	opDiv        = 0x1b
	opMinus      = 0x1c
	opMod        = 0x1d
	opMul        = 0x1e
	opNeg        = 0x1f
	opNot        = 0x20
	opOr         = 0x21
	opPlus       = 0x22
	opPlusUconst = 0x23
	opShl        = 0x24
	opShr        = 0x25
	opShra       = 0x26
	opXor        = 0x27
	opEq         = 0x29
	opGe         = 0x2a
	opGt         = 0x2b
	opLe         = 0x2c
	opLt         = 0x2d
	opNe         = 0x2e
	opLit0       = 0x30
	opLit31      = 0x4f
	opReg0       = 0x50
	opBreg0      = 0x70
	opBreg31     = 0x8f
	opBregx      = 0x92
	opNop        = 0x96
)

// constOperand returns the operand size of DW_OP_addr or a DW_OP_constNu/s
// and whether it is signed (moot at 8 bytes).
func constOperand(op byte) (n int, signed bool) {
	switch op {
	case opConst1u, opConst1s:
		return 1, op == opConst1s
	case opConst2u, opConst2s:
		return 2, op == opConst2s
	case opConst4u, opConst4s:
		return 4, op == opConst4s
	}
	return 8, false
}

// readConst reads the little-endian operand b, sign-extended when signed.
func readConst(b []byte, signed bool) uint64 {
	var v uint64
	for j := len(b) - 1; j >= 0; j-- {
		v = v<<8 | uint64(b[j])
	}
	if shift := 64 - 8*len(b); signed && shift > 0 {
		v = uint64(int64(v<<shift) >> shift)
	}
	return v
}

// evalExpr evaluates a DWARF expression with the registers of the frame and
// the stack copy; initial, if set, is pushed first (the CFA, for register
// rules).
func evalExpr(e []byte, regs *regFile, mem memory, initial *uint64) (uint64, error) {
	var s exprStack
	if initial != nil {
		s.push(*initial)
	}
	for i := 0; i < len(e); {
		op := e[i]
		i++
		n, err := s.step(op, e[i:], regs, mem)
		if err != nil {
			return 0, err
		}
		i += n
	}
	return s.pop()
}

// exprStack is the stack of a DWARF expression being evaluated.
type exprStack struct{ st []uint64 }

func (s *exprStack) push(v ...uint64) { s.st = append(s.st, v...) }

func (s *exprStack) pop() (uint64, error) {
	if len(s.st) == 0 {
		return 0, fmt.Errorf("expression stack underflow")
	}
	v := s.st[len(s.st)-1]
	s.st = s.st[:len(s.st)-1]
	return v, nil
}

func errTruncated() error { return fmt.Errorf("truncated expression") }

// step runs operation op, whose operands start at rest, and returns the
// operand bytes it used.
func (s *exprStack) step(op byte, rest []byte, regs *regFile, mem memory) (int, error) {
	switch {
	case op >= opLit0 && op <= opLit31:
		s.push(uint64(op - opLit0))
		return 0, nil
	case op >= opBreg0 && op <= opBreg31 || op == opBregx:
		return s.breg(op, rest, regs)
	}
	switch op {
	case opNop:
		return 0, nil
	case opAddr, opConst1u, opConst1s, opConst2u, opConst2s, opConst4u, opConst4s, opConst8u, opConst8s:
		n, signed := constOperand(op)
		if n > len(rest) {
			return 0, errTruncated()
		}
		s.push(readConst(rest[:n], signed))
		return n, nil
	case opConstu, opPlusUconst, opConsts:
		return s.leb(op, rest)
	case opDup, opDrop, opOver, opSwap, opDeref, opAbs, opNeg, opNot:
		return 0, s.unary(op, mem)
	}
	return 0, s.binary(op)
}

// breg pushes a register plus a signed offset (DW_OP_breg0..31, bregx).
func (s *exprStack) breg(op byte, rest []byte, regs *regFile) (int, error) {
	reg, used := uint64(op-opBreg0), 0
	if op == opBregx {
		r, n := uleb(rest)
		if n == 0 {
			return 0, errTruncated()
		}
		reg, used = r, n
	}
	off, n := sleb(rest[used:])
	if n == 0 {
		return 0, errTruncated()
	}
	v, ok := regs.get(reg)
	if !ok {
		return 0, fmt.Errorf("register %d unknown", reg)
	}
	s.push(v + uint64(off))
	return used + n, nil
}

// leb runs the operations with one LEB128 operand: constu, consts and
// plus_uconst.
func (s *exprStack) leb(op byte, rest []byte) (int, error) {
	if op == opConsts {
		v, n := sleb(rest)
		if n == 0 {
			return 0, errTruncated()
		}
		s.push(uint64(v))
		return n, nil
	}
	v, n := uleb(rest)
	if n == 0 {
		return 0, errTruncated()
	}
	if op == opPlusUconst {
		a, err := s.pop()
		if err != nil {
			return 0, err
		}
		v += a
	}
	s.push(v)
	return n, nil
}

// unary runs the operations on the stack's top: dup, drop, over, swap,
// deref (a word of the stack copy), abs, neg, not.
func (s *exprStack) unary(op byte, mem memory) error {
	a, err := s.pop()
	if err != nil {
		return err
	}
	switch op {
	case opDup:
		s.push(a, a)
	case opOver, opSwap:
		b, err := s.pop()
		if err != nil {
			return err
		}
		if op == opOver {
			s.push(b, a, b)
		} else {
			s.push(a, b)
		}
	case opDeref:
		v, ok := mem.word(a)
		if !ok {
			return fmt.Errorf("read %#x: outside the stack copy", a)
		}
		s.push(v)
	case opAbs:
		if int64(a) < 0 {
			a = -a
		}
		s.push(a)
	case opNeg:
		s.push(-a)
	case opNot:
		s.push(^a)
	}
	return nil
}

// binary runs an operation on the two top entries (a below b).
func (s *exprStack) binary(op byte) error {
	b, err := s.pop()
	if err != nil {
		return err
	}
	a, err := s.pop()
	if err != nil {
		return err
	}
	v, err := binop(op, a, b)
	if err != nil {
		return err
	}
	s.push(v)
	return nil
}

func binop(op byte, a, b uint64) (uint64, error) {
	switch op {
	case opAnd:
		return a & b, nil
	case opOr:
		return a | b, nil
	case opXor:
		return a ^ b, nil
	case opPlus:
		return a + b, nil
	case opMinus:
		return a - b, nil
	case opMul:
		return a * b, nil
	case opDiv, opMod:
		if b == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		if op == opMod {
			return a % b, nil
		}
		return uint64(int64(a) / int64(b)), nil
	case opShl:
		return a << b, nil
	case opShr:
		return a >> b, nil
	case opShra:
		return uint64(int64(a) >> b), nil
	case opEq, opGe, opGt, opLe, opLt, opNe:
		x, y := int64(a), int64(b)
		if map[byte]bool{opEq: x == y, opGe: x >= y, opGt: x > y, opLe: x <= y, opLt: x < y, opNe: x != y}[op] {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("unsupported DWARF operation %#x", op)
}

// leb128 reads the LEB128 number at the start of b: its bits, how many
// bits it has, its last byte, and the bytes it takes (0 when b ends first
// or it runs past 64 bits).
func leb128(b []byte) (v uint64, bits uint, last byte, n int) {
	for i, c := range b {
		v |= uint64(c&0x7f) << bits
		bits += 7
		if c&0x80 == 0 {
			return v, bits, c, i + 1
		}
		if bits >= 64 {
			break
		}
	}
	return 0, 0, 0, 0
}

func uleb(b []byte) (uint64, int) {
	v, _, _, n := leb128(b)
	return v, n
}

// sleb reads a signed LEB128 number: leb128 sign-extended from its last
// byte's bit 6.
func sleb(b []byte) (int64, int) {
	v, bits, last, n := leb128(b)
	if n > 0 && bits < 64 && last&0x40 != 0 {
		v |= ^uint64(0) << bits
	}
	return int64(v), n
}
