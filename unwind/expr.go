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
	var st []uint64
	if initial != nil {
		st = append(st, *initial)
	}
	pop := func() (uint64, error) {
		if len(st) == 0 {
			return 0, fmt.Errorf("expression stack underflow")
		}
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v, nil
	}
	for i := 0; i < len(e); {
		op := e[i]
		i++
		need := func(n int) error {
			if i+n > len(e) {
				return fmt.Errorf("truncated expression")
			}
			return nil
		}
		switch {
		case op >= opLit0 && op <= opLit31:
			st = append(st, uint64(op-opLit0))
			continue
		case op >= opBreg0 && op <= opBreg31 || op == opBregx:
			reg := uint64(op - opBreg0)
			if op == opBregx {
				r, n := uleb(e[i:])
				if n == 0 {
					return 0, fmt.Errorf("truncated expression")
				}
				reg, i = r, i+n
			}
			off, n := sleb(e[i:])
			if n == 0 {
				return 0, fmt.Errorf("truncated expression")
			}
			i += n
			v, ok := regs.get(reg)
			if !ok {
				return 0, fmt.Errorf("register %d unknown", reg)
			}
			st = append(st, v+uint64(off))
			continue
		}
		switch op {
		case opNop:
		case opAddr, opConst1u, opConst1s, opConst2u, opConst2s, opConst4u, opConst4s, opConst8u, opConst8s:
			n, signed := constOperand(op)
			if err := need(n); err != nil {
				return 0, err
			}
			st = append(st, readConst(e[i:i+n], signed))
			i += n
		case opConstu, opPlusUconst:
			v, n := uleb(e[i:])
			if n == 0 {
				return 0, fmt.Errorf("truncated expression")
			}
			i += n
			if op == opConstu {
				st = append(st, v)
			} else {
				a, err := pop()
				if err != nil {
					return 0, err
				}
				st = append(st, a+v)
			}
		case opConsts:
			v, n := sleb(e[i:])
			if n == 0 {
				return 0, fmt.Errorf("truncated expression")
			}
			i += n
			st = append(st, uint64(v))
		case opDup, opDrop, opOver, opSwap, opDeref, opAbs, opNeg, opNot:
			a, err := pop()
			if err != nil {
				return 0, err
			}
			switch op {
			case opDup:
				st = append(st, a, a)
			case opDrop:
			case opOver:
				b, err := pop()
				if err != nil {
					return 0, err
				}
				st = append(st, b, a, b)
			case opSwap:
				b, err := pop()
				if err != nil {
					return 0, err
				}
				st = append(st, a, b)
			case opDeref:
				v, ok := mem.word(a)
				if !ok {
					return 0, fmt.Errorf("read %#x: outside the stack copy", a)
				}
				st = append(st, v)
			case opAbs:
				if int64(a) < 0 {
					a = -a
				}
				st = append(st, a)
			case opNeg:
				st = append(st, -a)
			case opNot:
				st = append(st, ^a)
			}
		default:
			b, err := pop()
			if err != nil {
				return 0, err
			}
			a, err := pop()
			if err != nil {
				return 0, err
			}
			var v uint64
			switch op {
			case opAnd:
				v = a & b
			case opOr:
				v = a | b
			case opXor:
				v = a ^ b
			case opPlus:
				v = a + b
			case opMinus:
				v = a - b
			case opMul:
				v = a * b
			case opDiv:
				if b == 0 {
					return 0, fmt.Errorf("division by zero")
				}
				v = uint64(int64(a) / int64(b))
			case opMod:
				if b == 0 {
					return 0, fmt.Errorf("division by zero")
				}
				v = a % b
			case opShl:
				v = a << b
			case opShr:
				v = a >> b
			case opShra:
				v = uint64(int64(a) >> b)
			case opEq, opGe, opGt, opLe, opLt, opNe:
				x, y := int64(a), int64(b)
				t := map[byte]bool{opEq: x == y, opGe: x >= y, opGt: x > y, opLe: x <= y, opLt: x < y, opNe: x != y}[op]
				if t {
					v = 1
				}
			default:
				return 0, fmt.Errorf("unsupported DWARF operation %#x", op)
			}
			st = append(st, v)
		}
	}
	return pop()
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
