// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// ErrNoReturn is returned by ProbeSites for a function without a return
// instruction: it ends in a tail jump or only panics, so no exit probe can
// see it return.
var ErrNoReturn = errors.New("has no return instruction")

// ProbeSites are the addresses at which to probe a Go function to time it
// without a uretprobe (which corrupts Go stacks): one entry probe and one
// probe on every return instruction. At every site the stack pointer is
// what it was on entry (it points at the return address), so the distance
// from the goroutine's stack top identifies the call at entry and at exit.
type ProbeSites struct {
	// Entry is the virtual address of the entry probe.
	Entry uint64
	// EntryCheck is true when Entry is the conditional jump of the
	// stack-bound check (JBE on amd64): it executes again after
	// runtime.morestack grows the stack, so the probe must ignore the
	// firings where the jump will be taken (CF or ZF set in the flags). The
	// kernel emulates this jump instead of single-stepping the first
	// instruction (the comparison), which is several times cheaper.
	EntryCheck bool
	// EntryInsn is the probed entry instruction, disassembled.
	EntryInsn string
	// Returns are the virtual addresses of the return instructions.
	Returns []uint64
	// Exits are where to put the exit probes: one per return, on the
	// POP RBP just before the RET (NOPs aside) where every path to the RET
	// runs it
	// (there the frame pointer still holds the function's own frame, so a
	// stack walked from it includes the caller), else on the RET.
	Exits []ExitSite
	// TailJumps are the targets of jumps out of the function (tail calls).
	// Calls that leave through one of them are not seen by the exit probes.
	TailJumps []uint64
}

// ExitSite is one exit probe.
type ExitSite struct {
	// Addr is the virtual address of the probed instruction.
	Addr uint64
	// SPAdjust is what to add to SP there to get SP at the RET (where it
	// points at the return address, as at the entry probe): 8 on the
	// POP RBP before a RET, 0 on a RET.
	SPAdjust uint64
}

// x86 flags tested by JBE.
const (
	FlagCF = 1 << 0 // carry
	FlagZF = 1 << 6 // zero
)

// ProbeSites disassembles function s and returns where to put its entry
// and return probes. Only amd64 is supported so far; arm64 would decode
// with golang.org/x/arch/arm64/arm64asm the same way (RET, and the
// stack-bound check's B.LS).
func (t *Table) ProbeSites(s Symbol) (ProbeSites, error) {
	if t.Machine != elf.EM_X86_64 {
		return ProbeSites{}, fmt.Errorf("%s: probing Go functions on %v is not supported yet (amd64 only)", t.Path, t.Machine)
	}
	code, err := t.Code(s)
	if err != nil {
		return ProbeSites{}, err
	}
	return t.probeSitesIn(s, code)
}

// probeSitesIn is ProbeSites on the function's code bytes.
func (t *Table) probeSitesIn(s Symbol, code []byte) (ProbeSites, error) {
	insts, err := decodeAMD64(code, s.Value)
	if err != nil {
		return ProbeSites{}, fmt.Errorf("disassemble %s in %s: %w", s.Display, t.Path, err)
	}
	var ps ProbeSites
	end := s.Value + s.Size
	for _, in := range insts {
		switch {
		case in.Op == x86asm.RET:
			ps.Returns = append(ps.Returns, in.pc)
		case in.Op == x86asm.JMP:
			if tgt, ok := in.target(); ok && (tgt < s.Value || tgt >= end) {
				ps.TailJumps = append(ps.TailJumps, tgt)
			}
		}
	}
	if len(ps.Returns) == 0 {
		why := "it only panics or loops forever"
		if len(ps.TailJumps) > 0 {
			name, _, ok := t.Func(ps.TailJumps[0])
			if !ok {
				name = fmt.Sprintf("%#x", ps.TailJumps[0])
			}
			why = "it ends in a tail jump to " + name + ": time that function instead"
		}
		return ProbeSites{}, fmt.Errorf("%s in %s %w (%s)", s.Display, t.Path, ErrNoReturn, why)
	}
	ps.Entry, ps.EntryCheck, ps.EntryInsn = t.entrySite(s, insts)
	for i, in := range insts {
		if in.Op != x86asm.RET {
			continue
		}
		ps.Exits = append(ps.Exits, exitSite(insts, code, s.Value, i))
	}
	return ps, nil
}

// exitSite picks the exit probe for the RET insts[i] of a function whose
// code starts at base. The kernel single-steps both RET and POP RBP, so:
//
//   - an instruction the kernel emulates right before the RET (a one-byte
//     NOP, as in POP RBP; NOP; RET, about 3% of the RETs of a large Go
//     binary) takes the probe when no branch lands on the RET itself: SP
//     there is SP at the RET (SPAdjust 0);
//   - else the POP RBP before the RET (NOPs aside) where every path to the
//     RET runs it (the frame pointer there still holds the function's own
//     frame, so a stack walked from it includes the caller);
//   - else the RET.
func exitSite(insts []inst, code []byte, base uint64, i int) ExitSite {
	in := insts[i]
	if i > 0 {
		p := insts[i-1]
		if p.Op == x86asm.NOP && p.pc >= base && KernelEmulates(code[p.pc-base:]) && !branchTargetIn(insts, in.pc, in.pc) {
			return ExitSite{Addr: p.pc}
		}
	}
	j := i - 1
	for j >= 0 && insts[j].Op == x86asm.NOP { // alignment padding
		j--
	}
	if j >= 0 && isPopRBP(insts[j].Inst) && !branchTargetIn(insts, insts[j].pc+1, in.pc) {
		return ExitSite{Addr: insts[j].pc, SPAdjust: 8}
	}
	return ExitSite{Addr: in.pc}
}

// inst is a decoded instruction and its address.
type inst struct {
	x86asm.Inst
	pc uint64
}

// target returns the destination of a direct (relative) branch or call.
func (in inst) target() (uint64, bool) {
	if r, ok := in.Args[0].(x86asm.Rel); ok {
		return uint64(int64(in.pc) + int64(in.Len) + int64(r)), true
	}
	return 0, false
}

func decodeAMD64(code []byte, pc uint64) ([]inst, error) {
	var out []inst
	for off := 0; off < len(code); {
		in, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			// Padding after the last instruction (Go pads with INT3)
			// ends the function; anything else is an error.
			if allPadding(code[off:]) {
				break
			}
			return nil, fmt.Errorf("at %#x: %w", pc+uint64(off), err)
		}
		out = append(out, inst{in, pc + uint64(off)})
		off += in.Len
	}
	return out, nil
}

func allPadding(b []byte) bool {
	for _, c := range b {
		if c != 0xcc && c != 0x00 {
			return false
		}
	}
	return true
}

// entrySite picks the entry probe: the stack-bound check's JBE when the
// prologue is the usual CMP/JBE pair, else the instruction after the last
// jump to the morestack call; without a stack check, the first branch of
// the straight-line code from the entry; else the first instruction. The
// instructions skipped (a comparison, a load or two) are a few nanoseconds
// left out of the measured interval; a single-stepped probe would add
// about 14 us to it.
func (t *Table) entrySite(s Symbol, insts []inst) (addr uint64, check bool, text string) {
	site := func(in inst, check bool) (uint64, bool, string) { return in.pc, check, in.Inst.String() }
	first := insts[0]
	morestack := t.morestackCall(insts)
	if morestack == 0 {
		// No stack check (a leaf or NOSPLIT function). Its first
		// instruction is often one the kernel must single-step; the first
		// branch of the straight-line code from the entry is emulated, and
		// every call reaches it with SP unchanged.
		if in, ok := firstBranch(insts); ok {
			return site(in, false)
		}
		return site(first, false)
	}
	lastCheck, nChecks := prologueChecks(insts, morestack)
	if lastCheck < 0 || lastCheck+1 >= len(insts) {
		return site(first, false)
	}
	if nChecks == 1 && insts[lastCheck].Op == x86asm.JBE {
		return site(insts[lastCheck], true)
	}
	next := insts[lastCheck+1]
	if branchTargetIn(insts, next.pc, next.pc) {
		return site(first, false)
	}
	return site(next, false)
}

// morestackCall returns the address of the morestack call: CALL
// runtime.morestack* (morestack_noctxt, morestackc) near the end of the
// function; 0 if there is none.
func (t *Table) morestackCall(insts []inst) uint64 {
	var morestack uint64
	for _, in := range insts {
		if in.Op != x86asm.CALL {
			continue
		}
		if tgt, ok := in.target(); ok {
			if name, start, ok := t.Func(tgt); ok && start == tgt && strings.HasPrefix(name, "runtime.morestack") {
				morestack = in.pc
			}
		}
	}
	return morestack
}

// firstBranch returns the first branch of the straight-line code from the
// entry, if it is not the first instruction and nothing branches back into
// the code before it; it gives up at a write to SP, a call, a return or
// after 16 instructions.
func firstBranch(insts []inst) (inst, bool) {
	first := insts[0]
	for i, in := range insts {
		if isJcc(in.Op) || in.Op == x86asm.JMP {
			if i > 0 && !branchTargetIn(insts, first.pc+1, in.pc) {
				return in, true
			}
			break
		}
		if writesSP(in.Inst) || in.Op == x86asm.CALL || in.Op == x86asm.RET || i >= 16 {
			break
		}
	}
	return inst{}, false
}

// prologueChecks finds the conditional jumps in the prologue into the
// morestack block: the index of the last (-1 for none) and how many. The
// prologue ends at the first instruction that is neither a comparison, a
// load nor such a jump.
func prologueChecks(insts []inst, morestack uint64) (lastCheck, nChecks int) {
	lastCheck = -1
	for i, in := range insts {
		if in.pc >= morestack {
			break
		}
		if isJcc(in.Op) {
			tgt, ok := in.target()
			if !ok || tgt <= in.pc || tgt > morestack || !straight(insts, tgt, morestack) {
				break
			}
			lastCheck, nChecks = i, nChecks+1
			continue
		}
		if writesSP(in.Inst) || !prologueOp(in.Op) {
			break
		}
	}
	return lastCheck, nChecks
}

// straight reports whether the instructions from from up to to contain no
// branch (the spill-and-call block before runtime.morestack).
func straight(insts []inst, from, to uint64) bool {
	found := false
	for _, in := range insts {
		if in.pc == from {
			found = true
		}
		if in.pc < from || in.pc >= to {
			continue
		}
		if isJcc(in.Op) || in.Op == x86asm.JMP || in.Op == x86asm.RET || in.Op == x86asm.CALL {
			return false
		}
	}
	return found
}

// branchTargetIn reports whether a direct branch of the function jumps into
// [lo, hi].
func branchTargetIn(insts []inst, lo, hi uint64) bool {
	for _, in := range insts {
		if isJcc(in.Op) || in.Op == x86asm.JMP {
			if tgt, ok := in.target(); ok && tgt >= lo && tgt <= hi {
				return true
			}
		}
	}
	return false
}

func isPopRBP(in x86asm.Inst) bool {
	r, ok := in.Args[0].(x86asm.Reg)
	return in.Op == x86asm.POP && ok && r == x86asm.RBP
}

func isJcc(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE,
		x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO,
		x86asm.JP, x86asm.JS:
		return true
	}
	return false
}

// prologueOp reports whether op may appear in a Go stack-check prologue.
func prologueOp(op x86asm.Op) bool {
	switch op {
	case x86asm.CMP, x86asm.MOV, x86asm.LEA, x86asm.SUB, x86asm.TEST:
		return true
	}
	return false
}

// writesSP reports whether the instruction changes the stack pointer.
func writesSP(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.PUSH, x86asm.POP, x86asm.CALL, x86asm.RET, x86asm.ENTER, x86asm.LEAVE:
		return true
	case x86asm.CMP, x86asm.TEST:
		return false
	}
	if r, ok := in.Args[0].(x86asm.Reg); ok && (r == x86asm.RSP || r == x86asm.ESP || r == x86asm.SP) {
		return true
	}
	return false
}

// EntrySite is where to put an entry-only probe on Go function s (one
// that may never return, such as runtime.execute): its virtual address,
// and check as ProbeSites.EntryCheck (the stack check's JBE: the probe
// must ignore the firings where the jump to runtime.morestack is taken).
// At the site every register but the flags holds its value at entry.
func (t *Table) EntrySite(s Symbol) (addr uint64, check bool, err error) {
	if t.Machine != elf.EM_X86_64 {
		return 0, false, fmt.Errorf("%s: probing Go functions on %v is not supported yet (amd64 only)", t.Path, t.Machine)
	}
	code, err := t.Code(s)
	if err != nil {
		return 0, false, err
	}
	insts, err := decodeAMD64(code, s.Value)
	if err != nil || len(insts) == 0 {
		return 0, false, fmt.Errorf("disassemble %s in %s: %w", s.Display, t.Path, err)
	}
	addr, check, _ = t.entrySite(s, insts)
	return addr, check, nil
}
