// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"debug/elf"
	"fmt"
)

// symbolOffset returns the file offset of a function symbol of an ELF file.
func symbolOffset(path, name string) (uint64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return 0, err
	}
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				return s.Value - p.Vaddr + p.Off, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no symbol %s", path, name)
}
