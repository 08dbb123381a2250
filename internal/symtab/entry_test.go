// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"strings"
	"testing"
)

// TestNativeEntrySite checks the placement of native entry probes on
// instruction sequences taken from real binaries and from hand-written
// prologues.
func TestNativeEntrySite(t *testing.T) {
	for _, c := range []struct {
		name     string
		code     []byte
		skip     uint64
		emulated bool
		why      string // substring of Why when the probe stays
	}{
		{"push rbp first", []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}, 0, true, ""},
		{"endbr64 then push", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xc3}, 4, true, ""},
		{"endbr64 then push r12", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x54, 0xc3}, 4, true, ""},
		// libsqlite3.so.0.8.6 sqlite3_prepare_v2: sub $0x10,%rsp; mov
		// %rcx,%r9; mov $0x80,%ecx; push %r8; ...
		{"sqlite3_prepare_v2", []byte{0x48, 0x83, 0xec, 0x10, 0x49, 0x89, 0xc9, 0xb9, 0x80, 0, 0, 0, 0x41, 0x50, 0x45, 0x31, 0xc0, 0xc3}, 0, false, "stack pointer"},
		// sqlite3RecordErrorByteOffset: test %rdi,%rdi; je ...
		{"test je", []byte{0x48, 0x85, 0xff, 0x74, 0x4b, 0x41, 0x54, 0xc3}, 3, true, ""},
		// sqlite3_prepare16: mov; mov; xor; jmp rel32 (a tail jump, emulated)
		{"moves then tail jmp", []byte{0x4d, 0x89, 0xc1, 0x49, 0x89, 0xc8, 0x31, 0xc9, 0xe9, 0x43, 0xfc, 0xff, 0xff}, 8, true, ""},
		// mov %rax,(%rsp) writes over the return address's slot.
		{"store through rsp", []byte{0x48, 0x89, 0x04, 0x24, 0x55, 0xc3}, 0, false, "stack pointer"},
		// A loop back to the second instruction: xor; L: add $1,%rax;
		// cmp $4,%rax; jl L.
		{"loop head", []byte{0x31, 0xc0, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x83, 0xf8, 0x04, 0x7c, 0xf6, 0xc3}, 0, false, "branch"},
		{"ret first", []byte{0xc3}, 0, false, "entry block ends"},
		// Stepped either way: past endbr64 as before.
		{"endbr64 then sub rsp", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x10, 0x55, 0xc3}, 4, false, "stack pointer"},
		{"two-byte nop then push", []byte{0x66, 0x90, 0x55, 0xc3}, 0, true, ""},
		{"nopw (0f 1f) is stepped", []byte{0x66, 0x0f, 0x1f, 0x44, 0, 0, 0x55, 0xc3}, 6, true, ""},
		{"16-bit jump is refused", []byte{0x66, 0xe9, 0, 0, 0, 0, 0xc3}, 0, false, "entry block ends"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := nativeEntrySite(c.code, 0x1000, uint64(len(c.code)))
			if e.Skip != c.skip || e.Emulated != c.emulated {
				t.Errorf("skip %d emulated %v (%s; skipped %v; why %q), want skip %d emulated %v",
					e.Skip, e.Emulated, e.Insn, e.Skipped, e.Why, c.skip, c.emulated)
			}
			if c.why != "" && !strings.Contains(e.Why, c.why) {
				t.Errorf("why %q, want it to mention %q", e.Why, c.why)
			}
			if c.emulated && e.Why != "" {
				t.Errorf("emulated placement with a reason %q", e.Why)
			}
		})
	}
}

// TestKernelEmulates checks the emulated-instruction list against the
// kernel's branch_setup_xol_ops and push_setup_xol_ops.
func TestKernelEmulates(t *testing.T) {
	for _, c := range []struct {
		code []byte
		want bool
	}{
		{[]byte{0x55}, true},                    // push %rbp
		{[]byte{0x41, 0x57}, true},              // push %r15
		{[]byte{0x90}, true},                    // nop
		{[]byte{0xf3, 0x90}, true},              // pause: prefix + nop
		{[]byte{0xe8, 0, 0, 0, 0}, true},        // call rel32
		{[]byte{0xeb, 0}, true},                 // jmp rel8
		{[]byte{0x0f, 0x84, 0, 0, 0, 0}, true},  // je rel32
		{[]byte{0x74, 0}, true},                 // je rel8
		{[]byte{0xf2, 0xe9, 0, 0, 0, 0}, true},  // bnd jmp
		{[]byte{0x66, 0xe8, 0, 0}, false},       // callw: refused
		{[]byte{0x66, 0x55}, false},             // pushw
		{[]byte{0x48, 0x83, 0xec, 0x10}, false}, // sub $0x10,%rsp
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, false}, // endbr64
		{[]byte{0xc3}, false},                   // ret
		{[]byte{0x5d}, false},                   // pop %rbp
		{[]byte{0x0f, 0x1f, 0x44, 0, 0}, false}, // nopl
		{[]byte{0x48, 0x89, 0xe5}, false},       // mov %rsp,%rbp
		{[]byte{0x6a, 0x00}, false},             // push $0
		{[]byte{0xff, 0x35, 0, 0, 0, 0}, false}, // push mem
		{[]byte{0xe9, 0, 0, 0, 0}, true},        // jmp rel32
		{[]byte{0x31, 0xc0}, false},             // xor %eax,%eax
		{[]byte{0x48, 0x89, 0xf8}, false},       // mov %rdi,%rax
		{[]byte{0x41, 0x89, 0xf8}, false},       // mov %edi,%r8d
		{nil, false},
	} {
		if got := KernelEmulates(c.code); got != c.want {
			t.Errorf("KernelEmulates(% x) = %v, want %v", c.code, got, c.want)
		}
	}
}

// TestGoExitSite checks the exit probe of a Go RET: an emulated NOP right
// before the RET when nothing jumps to the RET, else the POP RBP, else the
// RET.
func TestGoExitSite(t *testing.T) {
	for _, c := range []struct {
		name   string
		code   []byte
		addr   uint64 // offset of the exit site
		adjust uint64
	}{
		// add $0x10,%rsp; pop %rbp; nop; ret
		{"pop nop ret", []byte{0x48, 0x83, 0xc4, 0x10, 0x5d, 0x90, 0xc3}, 5, 0},
		// add $0x10,%rsp; pop %rbp; ret
		{"pop ret", []byte{0x48, 0x83, 0xc4, 0x10, 0x5d, 0xc3}, 4, 8},
		// pop %rbp; nopl 0(%rax) (stepped); ret
		{"pop nopl ret", []byte{0x5d, 0x0f, 0x1f, 0x40, 0x00, 0xc3}, 0, 8},
		// je to the ret; pop %rbp; nop; ret: the nop is skipped by the jump
		{"jump to ret", []byte{0x74, 0x02, 0x5d, 0x90, 0xc3}, 4, 0},
		// xor %eax,%eax; ret
		{"ret only", []byte{0x31, 0xc0, 0xc3}, 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			insts, err := decodeAMD64(c.code, 0x1000)
			if err != nil {
				t.Fatal(err)
			}
			i := len(insts) - 1
			got := exitSite(insts, c.code, 0x1000, i)
			if got.Addr != 0x1000+c.addr || got.SPAdjust != c.adjust {
				t.Errorf("exit at +%d adjust %d, want +%d adjust %d", got.Addr-0x1000, got.SPAdjust, c.addr, c.adjust)
			}
		})
	}
}
