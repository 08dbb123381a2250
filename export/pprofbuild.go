// SPDX-License-Identifier: Apache-2.0

package export

import "github.com/google/pprof/profile"

// functionTable interns a profile's functions by name and file, appending
// each new one to the profile with the next ID.
type functionTable struct {
	p     *profile.Profile
	byKey map[[2]string]*profile.Function
}

// newFunctionTable returns an empty table adding to p.
func newFunctionTable(p *profile.Profile) *functionTable {
	return &functionTable{p: p, byKey: map[[2]string]*profile.Function{}}
}

// get returns the function named name in file, adding it if new.
func (ft *functionTable) get(name, file string) *profile.Function {
	k := [2]string{name, file}
	if f := ft.byKey[k]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(ft.p.Function) + 1), Name: name, SystemName: name, Filename: file}
	ft.byKey[k] = f
	ft.p.Function = append(ft.p.Function, f)
	return f
}
