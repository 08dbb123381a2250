// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/internal/symtab"
)

// AttachAt attaches each program of sites as a uprobe of pid at its
// virtual address in bin (whose symbol table is tab), naming symbol to the
// kernel, and returns the function that detaches them all. It places
// programs on chosen instructions, as the probe-cost benchmarks do; timing
// itself attaches through Open.
func AttachAt(bin string, tab *symtab.Table, symbol string, pid int, sites map[uint64]*ebpf.Program) (func(), error) {
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return nil, err
	}
	var ls []link.Link
	detach := func() {
		for _, l := range ls {
			l.Close()
		}
	}
	for addr, prog := range sites {
		off, err := tab.FileOffset(addr)
		if err != nil {
			detach()
			return nil, err
		}
		l, err := ex.Uprobe(symbol, prog, &link.UprobeOptions{Address: off, PID: pid})
		if err != nil {
			detach()
			return nil, fmt.Errorf("attach at %#x of %s: %w", addr, symbol, err)
		}
		ls = append(ls, l)
	}
	return detach, nil
}
