// SPDX-License-Identifier: Apache-2.0

package symbolize

import "debug/elf"

// GoCgo is what following a Go program's cgo and vDSO calls needs of its
// executable (bpf/sample_go.h): where the thread's g lies in its TLS, and
// the code of the functions that switch from the goroutine's stack to the
// system stack.
type GoCgo struct {
	// TLSOffset is the g slot's offset from the thread pointer (fsbase).
	TLSOffset int64
	// Code bounds the switching functions (runtime addresses).
	Code [][2]uint64
}

// switchNames are the functions that run C code on the system stack:
// runtime.asmcgocall (cgo) and the vDSO callers, with their ABI0 names.
var switchNames = []string{
	"runtime.asmcgocall.abi0", "runtime.asmcgocall",
	"time.now", "time.now.abi0", "runtime.nanotime1.abi0", "runtime.nanotime1",
	"runtime.walltime.abi0", "runtime.walltime",
}

// GoCgo reads the main executable's GoCgo once; ok is false for a process
// that is not a Go program or whose executable lacks the symbols
// (stripped).
func (img *Image) GoCgo() (GoCgo, bool) {
	if img.goDone {
		return img.goInfo, img.goOK
	}
	img.goDone = true
	for i, b := range img.bins {
		if b == nil || b.path != img.exe {
			continue
		}
		off, ok := b.tlsgOffset()
		if !ok {
			return GoCgo{}, false
		}
		code := img.switchCode(i)
		img.goInfo, img.goOK = GoCgo{TLSOffset: off, Code: code}, len(code) > 0
		return img.goInfo, img.goOK
	}
	return GoCgo{}, false
}

// switchCode returns the runtime ranges of the switching functions in the
// file of mapping i.
func (img *Image) switchCode(i int) [][2]uint64 {
	tab := img.bins[i].table
	var out [][2]uint64
	for _, name := range switchNames {
		for _, s := range tab.Lookup(name) {
			fo, err := tab.FileOffset(s.Value)
			if err != nil || s.Size == 0 {
				continue
			}
			for _, m := range img.maps {
				if m.Path == img.maps[i].Path && fo >= m.Offset && fo < m.Offset+(m.Limit-m.Start) {
					start := m.Start + fo - m.Offset
					out = append(out, [2]uint64{start, start + s.Size})
				}
			}
		}
	}
	return out
}

// goTLSInternal is where a Go executable that does not link runtime/cgo
// keeps g: runtime.settls points the thread pointer 8 bytes past m.tls[0],
// the slot of g, so g is at -8(FS) (runtime/go_tls.h, sys_linux_amd64.s).
const goTLSInternal = -8

// tlsgOffset is the file's g slot offset, read once: goTLSInternal for a Go
// executable without runtime/cgo, runtime.tlsg's (below) for one with it
// (those linking runtime/cgo's x_cgo_init).
func (b *binFile) tlsgOffset() (int64, bool) {
	if !b.goTLSDone {
		b.goTLSDone = true
		switch {
		case b.table == nil || !b.table.IsGo || b.f == nil:
		case len(b.table.Lookup("x_cgo_init")) > 0 || len(b.table.Lookup("_cgo_init")) > 0:
			b.goTLS, b.goTLSOK = tlsgOffset(b.f)
		default:
			b.goTLS, b.goTLSOK = goTLSInternal, true
		}
	}
	return b.goTLS, b.goTLSOK
}

// tlsgOffset returns the offset from the thread pointer of the Go
// executable's runtime.tlsg, the TLS slot holding the current g. The
// executable's TLS block ends at the thread pointer (x86-64 TLS variant
// II: it starts at tp - round_up(PT_TLS memsz, align)), and runtime.tlsg's
// value is its offset in the block.
func tlsgOffset(r interface {
	ReadAt([]byte, int64) (int, error)
}) (int64, bool) {
	f, err := elf.NewFile(r)
	if err != nil || f.Machine != elf.EM_X86_64 {
		return 0, false
	}
	var tls *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_TLS {
			tls = p
		}
	}
	if tls == nil {
		return 0, false
	}
	syms, err := f.Symbols()
	if err != nil {
		return 0, false
	}
	for _, s := range syms {
		if s.Name == "runtime.tlsg" && elf.ST_TYPE(s.Info) == elf.STT_TLS {
			align := max(tls.Align, 1)
			size := (tls.Memsz + align - 1) / align * align
			return int64(s.Value) - int64(size), true
		}
	}
	return 0, false
}
