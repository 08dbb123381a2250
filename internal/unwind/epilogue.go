// SPDX-License-Identifier: Apache-2.0

package unwind

// An epilogue is code that returns at once: from the frame's next
// instruction on, it only moves the stack pointer, may pop rbp, and
// returns. Its caller is then found exactly from the stack pointer, with no
// call frame information and no frame pointer. CPython's perf trampolines
// (-X perf, 3.12 and 3.13: "sub $8,%rsp; call *%rcx; add $8,%rsp; ret",
// written into anonymous memory without unwind information) are such
// frames at their return address, and so are many JIT stubs.

// epilogue decodes code (the bytes at the frame's next instruction) as one
// of
//
//	ret                     c3
//	add $imm8,%rsp; ret     48 83 c4 ib c3
//	add $imm32,%rsp; ret    48 81 c4 id c3
//	pop %rbp; ret           5d c3
//	add $imm8,%rsp; pop %rbp; ret
//
// and returns the bytes above the stack pointer where rbp was saved (popBP)
// and where the return address is.
func epilogue(code []byte) (bpAt, raAt uint64, popBP, ok bool) {
	off := uint64(0)
	switch {
	case len(code) >= 4 && code[0] == 0x48 && code[1] == 0x83 && code[2] == 0xc4 && code[3] < 0x80:
		off, code = uint64(code[3]), code[4:]
	case len(code) >= 7 && code[0] == 0x48 && code[1] == 0x81 && code[2] == 0xc4 && code[6] < 0x80:
		off = uint64(code[3]) | uint64(code[4])<<8 | uint64(code[5])<<16 | uint64(code[6])<<24
		code = code[7:]
	}
	if len(code) >= 2 && code[0] == 0x5d && code[1] == 0xc3 {
		return off, off + 8, true, true
	}
	if len(code) >= 1 && code[0] == 0xc3 {
		return 0, off, false, true
	}
	return 0, 0, false, false
}

// stepEpilogue unwinds a frame of m without call frame information whose
// code returns at once (epilogue); look is the frame's address as step
// has it (a return address less one).
func stepEpilogue(m *Module, look uint64, exact bool, rf *regFile, mem memory) (next regFile, ok bool) {
	pc := look
	if !exact {
		pc++
	}
	code, ok := m.Code(pc)
	if !ok {
		return next, false
	}
	bpAt, raAt, popBP, ok := epilogue(code)
	if !ok {
		return next, false
	}
	sp := rf.v[regSP]
	ra, ok := mem.word(sp + raAt)
	if !ok {
		return next, false
	}
	next = *rf
	next.known &= calleeSaved
	if popBP {
		bp, ok := mem.word(sp + bpAt)
		if !ok {
			return next, false
		}
		next.set(regBP, bp)
	}
	next.set(regSP, sp+raAt+8)
	next.set(regRA, ra)
	return next, true
}
