// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"strings"
	"testing"
)

func TestUprobeRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want string // substring of the reason; "" for none
	}{
		{"lock incq", []byte{0xf0, 0x48, 0xff, 0x05, 0, 0, 0, 0}, "LOCK"},
		{"lock after operand-size prefix", []byte{0x66, 0xf0, 0xff, 0x00}, "LOCK"},
		{"notrack jmp", []byte{0x3e, 0xff, 0xe0}, "segment-override"},
		{"cs prefix", []byte{0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0}, "segment-override"},
		{"int3", []byte{0xcc}, "int3"},
		{"mov ss, ax", []byte{0x8e, 0xd0}, "SS"},
		{"mov ds, ax", []byte{0x8e, 0xd8}, ""},
		{"pop ss", []byte{0x17}, "not a valid"},
		{"push es", []byte{0x06}, "not a valid"},
		{"push rbp", []byte{0x55}, ""},
		{"mov rax, rdi", []byte{0x48, 0x89, 0xf8}, ""},
		{"fs-relative mov", []byte{0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, ""},
		{"sub rsp (REX.W)", []byte{0x48, 0x83, 0xec, 0x08}, ""},
		{"rep ret", []byte{0xf3, 0xc3}, ""},
		{"empty", nil, ""},
	} {
		got := UprobeRefusal(tc.code)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s % x: %q, want %q", tc.name, tc.code, got, tc.want)
		}
	}
}
