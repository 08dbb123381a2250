// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/unwind"
)

// MaxStackBytes is the most user stack the BPF programs copy per record to
// unwind it by call frame information (MAX_STACK in bpf/sample.bpf.c,
// TP_MAX_STACK in bpf/timing.h: a per-CPU map value holds at most 32 KiB).
// perf's default of 8 KiB stopped short of main on every sqlite3 sample,
// 16 KiB on 5% of them (bench/sample-unwind); the copy ends at the top of the
// stack's mapping anyway.
const MaxStackBytes = 28672

// Modules returns the image's executable mappings with their call frame
// information, built on first use.
func (img *Image) Modules() []unwind.Module {
	if img.pm != nil && img.pm.f == nil {
		img.pm.update(perfMapRetry) // opened while the process lives (perfMapFor)
	}
	if img.mods != nil || len(img.maps) == 0 {
		return img.mods
	}
	img.mods = make([]unwind.Module, len(img.maps))
	for i, m := range img.maps {
		um := unwind.Module{Start: m.Start, Limit: m.Limit, Offset: m.Offset, Name: m.Path}
		if b := img.bins[i]; b != nil {
			um.Name = b.path
			um.Table = b.cfiTable(img.t.debug)
		}
		if img.pm != nil && img.unnamedCode(i) {
			um.Code = img.pm.code
		}
		img.mods[i] = um
	}
	return img.mods
}

// Unwind walks a user stack from its registers and stack copy with the
// image's call frame information, moving to the goroutine's stack at sw (a
// cgo call) if set; fp is a frame-pointer walk that continues the walk
// where the copy ended too early (unwind.Walk; nil for none).
func (img *Image) Unwind(regs unwind.Regs, stack []byte, fp []uint64, sw *unwind.Switch) ([]uint64, unwind.Where) {
	return unwind.Walk(img.Modules(), regs, stack, fp, sw)
}

// StoppedOutside reports whether a walk stopped at an address outside
// every executable mapping (Image.Refresh may then find it).
func StoppedOutside(w unwind.Where) bool {
	return w.Reason == unwind.StopOutsideMapping.String()
}

// CutOutside cuts a frame-pointer stack at its first address outside every
// executable mapping: frame-pointer walks through code that keeps no frame
// pointer read data (text, counters) as return addresses. The stop says
// where, with the file of the last frame kept.
func (img *Image) CutOutside(pcs []uint64) ([]uint64, unwind.Where) {
	for i, a := range pcs {
		if _, ok := img.Find(a); !ok {
			stop := unwind.Where{Reason: unwind.StopOutsideMapping.String()}
			if i > 0 {
				if mi, ok := img.Find(pcs[i-1]); ok {
					stop.File = img.maps[mi].Path
				}
			}
			return pcs[:i], stop
		}
	}
	return pcs, unwind.Where{}
}

// IsCallTo reports whether ra is a return address right after a direct
// call (call rel32) of the function holding leaf, both runtime addresses of
// this image: a frameless leaf hides its caller from a frame-pointer walk,
// and the word at its stack pointer is that caller's return address when
// this holds.
func (img *Image) IsCallTo(ra, leaf uint64) bool {
	start, ok := img.funcStart(leaf)
	if !ok || ra < 5 {
		return false
	}
	k := [2]uint64{ra, start}
	if v, ok := img.calls[k]; ok {
		return v
	}
	v := img.callTarget(ra) == start
	if img.calls == nil {
		img.calls = map[[2]uint64]bool{}
	}
	img.calls[k] = v
	return v
}

// funcStart returns the runtime start address of the function holding addr.
func (img *Image) funcStart(addr uint64) (uint64, bool) {
	mi, ok := proc.FindMapping(img.maps, addr)
	if !ok || img.bins[mi] == nil || img.bins[mi].table == nil {
		return 0, false
	}
	m, tab := img.maps[mi], img.bins[mi].table
	va, ok := tab.VAddr(addr - m.Start + m.Offset)
	if !ok {
		return 0, false
	}
	_, start, ok := tab.Func(va)
	if !ok || start > va {
		return 0, false
	}
	return addr - (va - start), true
}

// callTarget decodes the instruction ending at ra as call rel32 and returns
// its target, or 0.
func (img *Image) callTarget(ra uint64) uint64 {
	mi, ok := proc.FindMapping(img.maps, ra-5)
	if !ok || ra > img.maps[mi].Limit || img.bins[mi] == nil || img.bins[mi].f == nil {
		return 0
	}
	m := img.maps[mi]
	var code [5]byte
	if _, err := img.bins[mi].f.ReadAt(code[:], int64(ra-5-m.Start+m.Offset)); err != nil || code[0] != 0xe8 {
		return 0
	}
	rel := int32(uint32(code[1]) | uint32(code[2])<<8 | uint32(code[3])<<16 | uint32(code[4])<<24)
	return ra + uint64(int64(rel))
}
