// SPDX-License-Identifier: Apache-2.0

package symtab

import "testing"

func TestEchoSite(t *testing.T) {
	for _, c := range []struct {
		name  string
		code  []byte
		ok    bool
		skip  uint64
		delta uint64
	}{
		{"push rbp; mov rbp,rsp", []byte{0x55, 0x48, 0x89, 0xe5}, true, 1, 8},
		{"push r12; ...", []byte{0x41, 0x54, 0x90}, true, 2, 8},
		{"sub rsp,0x18", []byte{0x48, 0x83, 0xec, 0x18, 0x90}, true, 4, 0x18},
		{"mov eax,1", []byte{0xb8, 1, 0, 0, 0, 0xc3}, true, 5, 0},
		{"endbr64", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55}, true, 4, 0},
		{"ret", []byte{0xc3, 0x90}, false, 0, 0},
		{"jmp", []byte{0xeb, 0x00, 0x90}, false, 0, 0},
		{"jbe (Go's stack check)", []byte{0x76, 0x10, 0x55}, true, 2, 0},
		{"call", []byte{0xe8, 0, 0, 0, 0, 0x90}, false, 0, 0},
		{"pop rbp", []byte{0x5d, 0x90}, false, 0, 0},
		{"mov rsp,rbp", []byte{0x48, 0x89, 0xec, 0x90}, false, 0, 0},
		{"sub rsp,rax", []byte{0x48, 0x29, 0xc4, 0x90}, false, 0, 0},
		{"last instruction", []byte{0x55}, false, 0, 0},
	} {
		e, err := EchoSite(c.code)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok %v", c.name, err, c.ok)
			continue
		}
		if c.ok && (e.Skip != c.skip || e.SPDelta != c.delta) {
			t.Errorf("%s: %+v, want skip %d delta %d", c.name, e, c.skip, c.delta)
		}
	}
}
