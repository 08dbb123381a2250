// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"bytes"
	"debug/elf"

	"golang.org/x/arch/x86/x86asm"
)

// NativeEntry is where to put the entry probe (a uprobe and, on the same
// address, the uretprobe) of a native function.
type NativeEntry struct {
	// Skip is the number of bytes from the function's start to the probed
	// instruction.
	Skip uint64
	// Insn is the probed instruction, disassembled.
	Insn string
	// Emulated says the kernel emulates the probed instruction instead of
	// single-stepping it (KernelEmulates).
	Emulated bool
	// Skipped lists the instructions left before the probe.
	Skipped []string
	// Why says why the probe stays on a single-stepped instruction, when
	// it does.
	Why string
}

// endbr64 is the CET landing pad some compilers put first in a function.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// maxEntrySkip bounds how far into the entry block the entry probe may
// move: the instructions skipped run outside the measured interval.
const maxEntrySkip = 8

// NativeEntrySite returns where to put the entry probe of native (C, C++,
// Rust...) function s so that the kernel emulates the probed instruction
// instead of single-stepping it (on this machine a stepped uprobe costs
// about 10 us more than an emulated one, and the cost grows with load).
//
// The probe moves forward over a prefix of the entry block, to the first
// instruction the kernel emulates, when that is safe:
//
//   - The prefix runs unprobed, which is correct for any instruction: the
//     probe fires before the instruction it sits on, whatever ran before it.
//     The prefix's few nanoseconds are left out of the measured time.
//   - The uretprobe sits on the same address (one breakpoint for both) and
//     hijacks the return address at [rsp] when it fires
//     (arch_uretprobe_hijack_return_addr). So no skipped instruction may
//     change rsp or write through it: SUB/ADD/AND on rsp, PUSH, POP, CALL,
//     ENTER, LEAVE, any write with rsp as destination. The probed
//     instruction itself may (a PUSH): the probe fires before it runs, with
//     [rsp] still the return address. A function that starts with
//     `sub $N,%rsp` therefore keeps its probe on that (stepped)
//     instruction.
//   - Every call must pass through the probe exactly once: the prefix is
//     straight-line code (no branch, call or return before the probe) and
//     no direct branch of the function lands inside it or on the probe
//     (a loop back into the entry block would fire the probe again without
//     a new call).
//
// endbr64 is skipped like any other instruction that leaves rsp alone.
// Instructions emulated on x86-64 (arch/x86/kernel/uprobes.c,
// branch_setup_xol_ops and push_setup_xol_ops, unchanged through 6.18):
// PUSH of a general register, NOP (0x90 with prefixes), JMP and CALL
// relative, and conditional jumps.
func (t *Table) NativeEntrySite(s Symbol) (NativeEntry, error) {
	code, err := t.Code(s)
	if err != nil {
		return NativeEntry{}, err
	}
	if t.Machine != elf.EM_X86_64 {
		return NativeEntry{Why: "entry placement is implemented for amd64 only"}, nil
	}
	return nativeEntrySite(code, s.Value, s.Size), nil
}

func nativeEntrySite(code []byte, start, size uint64) NativeEntry {
	var insts []inst
	for off := 0; off < len(code); {
		if bytes.HasPrefix(code[off:], endbr64) {
			// x86asm does not know endbr64; it is a 4-byte no-op here.
			insts = append(insts, inst{x86asm.Inst{Op: x86asm.NOP, Len: len(endbr64)}, start + uint64(off)})
			off += len(endbr64)
			continue
		}
		in, err := x86asm.Decode(code[off:], 64)
		if err != nil || in.Op == 0 {
			break // keep what decoded: the entry block is all we need
		}
		insts = append(insts, inst{in, start + uint64(off)})
		off += in.Len
	}
	if len(insts) == 0 {
		return NativeEntry{Why: "the first instruction does not decode"}
	}
	first := NativeEntry{Insn: insts[0].Inst.String(), Emulated: KernelEmulates(code)}
	if first.Emulated {
		return first
	}
	if bytes.HasPrefix(code, endbr64) && len(insts) > 1 && !branchTargetIn(insts, start+1, insts[1].pc) {
		// Where no emulated instruction can take the probe, it still
		// goes past endbr64, as it always did: both are stepped, and
		// the landing pad is left out of the measured time.
		first = NativeEntry{Skip: uint64(len(endbr64)), Insn: insts[1].Inst.String(),
			Emulated: KernelEmulates(code[len(endbr64):]), Skipped: []string{"endbr64"}}
		if first.Emulated {
			return first
		}
	}
	var skipped []string
	for i, in := range insts {
		if i > maxEntrySkip {
			first.Why = "no instruction the kernel emulates in the first few"
			return first
		}
		off := in.pc - start
		if KernelEmulates(code[off:]) {
			if branchTargetIn(insts, start+1, in.pc) {
				first.Why = "a branch of the function lands in its first instructions"
				return first
			}
			return NativeEntry{Skip: off, Insn: in.Inst.String(), Emulated: true, Skipped: skipped}
		}
		if endsBlock(in.Op) {
			first.Why = "the entry block ends before any instruction the kernel emulates"
			return first
		}
		if touchesSP(in.Inst) {
			first.Why = in.Inst.String() + " uses the stack pointer before any instruction the kernel emulates, and the return probe needs it unmoved"
			return first
		}
		skipped = append(skipped, in.Inst.String())
	}
	first.Why = "no instruction the kernel emulates in the function"
	return first
}

// KernelEmulates reports whether the x86-64 instruction at the start of code
// is one the kernel's uprobe code emulates instead of single-stepping out of
// line (arch/x86/kernel/uprobes.c): push of a general register (50-57, or
// 41 50-57), nop (0x90, also with prefixes), jmp rel8/rel32 (eb, e9), call
// rel32 (e8) and conditional jumps (70-7f, 0f 80-8f). Branches with a 0x66
// prefix are refused by the kernel, so they count as stepped.
func KernelEmulates(code []byte) bool {
	i := 0
	for i < len(code) && isLegacyPrefix(code[i]) {
		if code[i] == 0x66 {
			// Only NOP tolerates it (66 90 is xchg %ax,%ax, the
			// two-byte nop); a 0x66 branch is refused, a 16-bit
			// push is not emulated.
			return i+1 < len(code) && onlyPrefixesThenNop(code[i:])
		}
		i++
	}
	if i >= len(code) {
		return false
	}
	c := code[i:]
	switch {
	case i == 0 && c[0] >= 0x50 && c[0] <= 0x57: // push %rax..%rdi
		return true
	case i == 0 && c[0] == 0x41 && len(c) > 1 && c[1] >= 0x50 && c[1] <= 0x57: // push %r8..%r15
		return true
	case c[0] == 0x90: // nop
		return true
	case c[0] == 0xe8, c[0] == 0xe9, c[0] == 0xeb: // call, jmp
		return true
	case c[0] >= 0x70 && c[0] <= 0x7f: // jcc rel8
		return true
	case c[0] == 0x0f && len(c) > 1 && c[1] >= 0x80 && c[1] <= 0x8f: // jcc rel32
		return true
	}
	return false
}

func onlyPrefixesThenNop(b []byte) bool {
	for _, c := range b {
		if c == 0x90 {
			return true
		}
		if !isLegacyPrefix(c) {
			return false
		}
	}
	return false
}

// isLegacyPrefix reports whether c is a prefix the kernel's decoder accepts
// in front of an emulated instruction (segment, lock and address-size
// prefixes make it refuse or step the instruction, so they are not listed).
func isLegacyPrefix(c byte) bool {
	switch c {
	case 0x66, 0xf2, 0xf3:
		return true
	}
	return false
}

// touchesSP reports whether an instruction reads or writes the stack
// pointer, explicitly or implicitly: skipping it could move rsp away from
// the return address or write over it.
func touchesSP(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.PUSH, x86asm.POP, x86asm.PUSHF, x86asm.POPF, x86asm.PUSHFQ, x86asm.POPFQ,
		x86asm.CALL, x86asm.RET, x86asm.ENTER, x86asm.LEAVE, x86asm.LCALL, x86asm.LRET:
		return true
	}
	for _, a := range in.Args {
		switch a := a.(type) {
		case x86asm.Reg:
			if isSP(a) {
				return true
			}
		case x86asm.Mem:
			if isSP(a.Base) || isSP(a.Index) {
				return true
			}
		}
	}
	return false
}

func isSP(r x86asm.Reg) bool {
	return r == x86asm.RSP || r == x86asm.ESP || r == x86asm.SP || r == x86asm.SPB
}

// endsBlock reports whether op ends straight-line code.
func endsBlock(op x86asm.Op) bool {
	switch op {
	case x86asm.RET, x86asm.JMP, x86asm.CALL, x86asm.LJMP, x86asm.LCALL, x86asm.LRET,
		x86asm.SYSCALL, x86asm.INT, x86asm.UD2, x86asm.HLT:
		return true
	}
	return isJcc(op)
}
