// SPDX-License-Identifier: Apache-2.0

package symtab

import "fmt"

// UprobeRefusal returns why the x86-64 kernel's uprobe instruction
// analysis (arch/x86/kernel/uprobes.c, uprobe_init_insn) refuses to probe
// the instruction at the start of code, or "" when this check finds no
// reason. It covers the refusals that are certain from the encoding
// alone: a LOCK prefix; an ES, CS, SS or DS segment-override prefix
// (also the 0x2e/0x3e branch hints and NOTRACK); an instruction that
// masks exceptions (MOV to SS, POP SS); an int3 already in place; and
// opcodes invalid in 64-bit mode. It is not the kernel's whole table: on
// kernels with multi-uprobe links the loader asks the kernel itself, and
// this check stands in only where it cannot.
func UprobeRefusal(code []byte) string {
	i := 0
	for ; i < len(code) && i < 15; i++ {
		switch b := code[i]; b {
		case 0xf0:
			return "its first instruction has a LOCK prefix, which the kernel cannot single-step (errno 524)"
		case 0x26, 0x2e, 0x36, 0x3e:
			return fmt.Sprintf("its first instruction has a segment-override prefix (%#02x), which the kernel cannot single-step (errno 524)", b)
		case 0x64, 0x65, 0x66, 0x67, 0xf2, 0xf3:
			continue
		}
		break
	}
	if i < len(code) && code[i]&0xf0 == 0x40 { // REX
		i++
	}
	if i >= len(code) {
		return ""
	}
	op := code[i]
	switch op {
	case 0xcc:
		return "its first instruction is an int3 breakpoint (errno 524)"
	case 0x8e:
		if i+1 < len(code) && (code[i+1]>>3)&7 == 2 {
			return "its first instruction moves to SS, which masks exceptions (errno 524)"
		}
	case 0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f, 0x37, 0x3f,
		0x60, 0x61, 0x82, 0x9a, 0xd4, 0xd5, 0xd6, 0xea:
		return fmt.Sprintf("its first byte (opcode %#02x) is not a valid 64-bit instruction (errno 524)", op)
	}
	return ""
}
