// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"bytes"
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Echo is where the echo of an entry probe goes: the next instruction,
// which every call reaches right after the probed one (docs/overhead.md).
type Echo struct {
	// Skip is the number of bytes from the probed instruction to the echo.
	Skip uint64
	// SPDelta is how many bytes the probed instruction moves the stack
	// pointer down: at the echo, sp plus SPDelta is the entry's sp.
	SPDelta uint64
}

// EchoSite returns the echo of an entry probe on the instruction at the
// start of code (the function's bytes from the probe on). It fails for an
// instruction the next one does not follow (a jump, a call, a return) or
// whose effect on the stack pointer is not a constant push or subtraction.
// A conditional jump is echoed on its fall-through, the path a call takes
// through a stack-bound check (Go's entry probe sits on its JBE).
func EchoSite(code []byte) (Echo, error) {
	if bytes.HasPrefix(code, endbr64) {
		if len(code) <= len(endbr64) {
			return Echo{}, fmt.Errorf("the function ends with the probed endbr64")
		}
		return Echo{Skip: uint64(len(endbr64))}, nil // unknown to x86asm
	}
	in, err := x86asm.Decode(code, 64)
	if err != nil {
		return Echo{}, fmt.Errorf("decode the probed instruction: %w", err)
	}
	if endsBlock(in.Op) && !isJcc(in.Op) {
		return Echo{}, fmt.Errorf("the probed instruction %v does not fall through to the next", in)
	}
	e := Echo{Skip: uint64(in.Len)}
	switch {
	case in.Op == x86asm.PUSH:
		e.SPDelta = 8
	case in.Op == x86asm.SUB && isSPReg(in.Args[0]):
		imm, ok := in.Args[1].(x86asm.Imm)
		if !ok || imm < 0 {
			return Echo{}, fmt.Errorf("the probed instruction %v moves the stack pointer by a register", in)
		}
		e.SPDelta = uint64(imm)
	case touchesSPWrite(in):
		return Echo{}, fmt.Errorf("the probed instruction %v moves the stack pointer", in)
	}
	if uint64(len(code)) <= e.Skip {
		return Echo{}, fmt.Errorf("the function ends with the probed instruction %v", in)
	}
	return e, nil
}

// isSPReg reports whether a is the 64-bit stack pointer.
func isSPReg(a x86asm.Arg) bool {
	r, ok := a.(x86asm.Reg)
	return ok && r == x86asm.RSP
}

// touchesSPWrite reports whether in may change the stack pointer: a stack
// instruction, or rsp as its destination.
func touchesSPWrite(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.POP, x86asm.PUSHF, x86asm.POPF, x86asm.PUSHFQ, x86asm.POPFQ,
		x86asm.ENTER, x86asm.LEAVE:
		return true
	}
	if r, ok := in.Args[0].(x86asm.Reg); ok && isSP(r) {
		return true
	}
	return false
}
