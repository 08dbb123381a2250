// SPDX-License-Identifier: Apache-2.0

package symtab

import (
	"debug/dwarf"
	"errors"
	"fmt"
)

// GoSched are the offsets in runtime.g of the goroutine's saved context
// (g.sched, a runtime.gobuf): its stack pointer, program counter and frame
// pointer, where the scheduler keeps them while the goroutine does not
// run. They are read from the binary's DWARF only: gobuf's layout changes
// between Go versions (its ret field went in Go 1.24).
type GoSched struct {
	SP, PC, BP uint64
}

// GoSchedOffsets returns the offsets of g.sched.sp, .pc and .bp from the
// binary's DWARF; an error when it has none.
func (t *Table) GoSchedOffsets() (GoSched, error) {
	if !t.IsGo {
		return GoSched{}, fmt.Errorf("%s is not a Go executable", t.Path)
	}
	if t.f == nil {
		return GoSched{}, fmt.Errorf("%s: no ELF file to read DWARF from", t.Path)
	}
	d, err := t.f.DWARF()
	if err != nil {
		return GoSched{}, fmt.Errorf("%s has no DWARF (built with -ldflags=-w?): %w", t.Path, err)
	}
	m, err := dwarfMembers(d, map[string][]string{"runtime.g": {"sched"}, "runtime.gobuf": {"sp", "pc", "bp"}})
	if err != nil {
		return GoSched{}, fmt.Errorf("%s: %w", t.Path, err)
	}
	s := m["runtime.g.sched"]
	return GoSched{SP: s + m["runtime.gobuf.sp"], PC: s + m["runtime.gobuf.pc"], BP: s + m["runtime.gobuf.bp"]}, nil
}

// dwarfMembers finds the offsets of the named members of the named
// structures, as "struct.member"; an error unless every one is found.
func dwarfMembers(d *dwarf.Data, want map[string][]string) (map[string]uint64, error) {
	need := 0
	for _, ms := range want {
		need += len(ms)
	}
	out := map[string]uint64{}
	r := d.Reader()
	for len(out) < need {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		members, ok := want[name]
		if e.Tag != dwarf.TagStructType || !ok {
			if e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		for {
			m, err := r.Next()
			if err != nil {
				return nil, err
			}
			if m == nil || m.Tag == 0 {
				break
			}
			mn, _ := m.Val(dwarf.AttrName).(string)
			loc, ok := m.Val(dwarf.AttrDataMemberLoc).(int64)
			for _, w := range members {
				if ok && mn == w {
					out[name+"."+mn] = uint64(loc)
				}
			}
		}
	}
	if len(out) < need {
		return nil, errors.New("runtime.g and runtime.gobuf not described in DWARF")
	}
	return out, nil
}
