// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"debug/elf"
	"testing"
)

// Symbols returns the symbol table of the ELF file at path (none when it
// has no .symtab).
func Symbols(t testing.TB, path string) []elf.Symbol {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	return syms
}
