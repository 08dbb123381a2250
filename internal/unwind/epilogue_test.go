// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"encoding/binary"
	"testing"
)

func TestEpilogue(t *testing.T) {
	for _, c := range []struct {
		code        []byte
		bpAt, raAt  uint64
		popBP, okay bool
	}{
		{[]byte{0xc3}, 0, 0, false, true},
		{[]byte{0x48, 0x83, 0xc4, 0x08, 0xc3}, 0, 8, false, true},
		{[]byte{0x48, 0x81, 0xc4, 0x00, 0x01, 0x00, 0x00, 0xc3}, 0, 0x100, false, true},
		{[]byte{0x5d, 0xc3}, 0, 8, true, true},
		{[]byte{0x48, 0x83, 0xc4, 0x10, 0x5d, 0xc3}, 0x10, 0x18, true, true},
		{[]byte{0x48, 0x83, 0xc4, 0xf8, 0xc3}, 0, 0, false, false}, // add -8: a sub
		{[]byte{0x48, 0x83, 0xc4, 0x08}, 0, 0, false, false},       // no ret
		{[]byte{0x55, 0x48, 0x89, 0xe5}, 0, 0, false, false},       // a prologue
		{nil, 0, 0, false, false},
	} {
		bpAt, raAt, popBP, ok := epilogue(c.code)
		if ok != c.okay || (ok && (bpAt != c.bpAt || raAt != c.raAt || popBP != c.popBP)) {
			t.Errorf("% x: got %d %d %v %v, want %d %d %v %v", c.code, bpAt, raAt, popBP, ok, c.bpAt, c.raAt, c.popBP, c.okay)
		}
	}
}

// TestUnwindEpilogue walks through a frame of CPython's perf trampoline
// ("sub $8,%rsp; call *%rcx; add $8,%rsp; ret" in anonymous memory, no
// frame pointer, no unwind information) from a leaf in the same memory
// whose frame pointer leads to the trampoline's return address.
func TestUnwindEpilogue(t *testing.T) {
	tramp := []byte{0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3}
	const base, caller = 0x10000, 0x20000
	code := func(addr uint64) ([]byte, bool) {
		if addr < base || addr >= base+uint64(len(tramp)) {
			return nil, false
		}
		return tramp[addr-base:], true
	}
	mods := []Module{
		{Start: base, Limit: base + 0x1000, Name: "", Code: code},
		{Start: caller, Limit: caller + 0x1000, Name: "caller", Code: func(uint64) ([]byte, bool) { return nil, false }},
	}
	// The stack: the leaf (frame pointer at sp+0x10) was called by the
	// trampoline, which was called by the caller.
	const sp = 0x7000
	stack := make([]byte, 0x40)
	put := func(at, v uint64) { binary.LittleEndian.PutUint64(stack[at-sp:], v) }
	put(sp+0x10, 0)           // the leaf's saved rbp: none (rbp was not a frame pointer)
	put(sp+0x18, base+6)      // return into the trampoline, after its call
	put(sp+0x20, 0)           // the trampoline's 8 bytes of padding
	put(sp+0x28, caller+0x10) // return into the caller
	regs := Regs{IP: base + 0x800, SP: sp, BP: sp + 0x10}
	res := Unwind(mods, regs, Stack{Addr: sp, Data: stack})
	if len(res.Frames) < 3 || res.Frames[1].PC != base+6 || res.Frames[2].PC != caller+0x10 {
		t.Fatalf("frames %+v, stop %v", res.Frames, res.Stop)
	}
	if res.Frames[2].SP != sp+0x30 {
		t.Errorf("caller's stack pointer %#x, want %#x", res.Frames[2].SP, sp+0x30)
	}
}
