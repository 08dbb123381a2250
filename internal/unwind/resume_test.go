// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"encoding/binary"
	"testing"
)

// TestFPResume checks where the kernel's frame-pointer walk continues a
// walk whose stack copy ended: in a recursion (one return address
// repeated) the frame is found by the frame-pointer chain through the
// copy, not by the address's first occurrence; off the chain, by the
// address's occurrence count.
func TestFPResume(t *testing.T) {
	const leaf, rec, top = 0x5000, 0x6000, 0x7000
	// Two frames of the recursion in the copy: the chain 0x1000 ->
	// 0x1020 -> 0x1040 (beyond the copy's end at 0x1040).
	data := make([]byte, 0x40)
	le := binary.LittleEndian
	le.PutUint64(data[0x00:], 0x1020)
	le.PutUint64(data[0x08:], rec)
	le.PutUint64(data[0x20:], 0x1040)
	le.PutUint64(data[0x28:], rec)
	st := Stack{Addr: 0x1000, Data: data}
	regs := Regs{IP: leaf, SP: 0xff8, BP: 0x1000}
	fp := []uint64{leaf, rec, rec, rec, rec, top}
	frames := []Frame{{PC: leaf, SP: 0xff8}, {PC: rec, SP: 0x1010}, {PC: rec, SP: 0x1030}}
	if got := fpResume(regs, st, fp, frames); got != 3 {
		t.Errorf("on the chain: resume at %d, want 3", got)
	}
	// The same frames off the chain (the frame pointer points elsewhere):
	// the second occurrence of rec is the last unwound frame.
	regs.BP = 0x9000
	if got := fpResume(regs, st, fp, frames); got != 3 {
		t.Errorf("by occurrences: resume at %d, want 3", got)
	}
	regs.BP = 0x1000
	// A frameless leaf hides its caller from the frame-pointer walk: the
	// unwound frames hold three recs, fp two before the copy's end. The
	// chain finds the frame; the occurrence count would skip one.
	fp = []uint64{leaf, rec, rec, rec, top}
	frames = []Frame{{PC: leaf, SP: 0xff0}, {PC: rec, SP: 0xff8}, {PC: rec, SP: 0x1010}, {PC: rec, SP: 0x1030}}
	if got := fpResume(regs, st, fp, frames); got != 3 {
		t.Errorf("after a hidden frame: resume at %d, want 3", got)
	}
	// Nothing matches: no continuation.
	if got := fpResume(regs, st, []uint64{leaf, top}, frames); got != 2 {
		t.Errorf("no match: resume at %d, want len(fp) = 2", got)
	}
}
