// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"encoding/binary"

	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/unwind"
)

// cgoSwitch reads a sample record's goroutine stack (bpf/sample.bpf.c
// FLAG_GO_CGO) into the switch the unwinder makes at asmcgocall's frame
// (symbolize.GoCgo says where); nil when the record has none.
func cgoSwitch(img *symbolize.Image, b []byte, flags uint32, stackEnd int) *unwind.Switch {
	if flags&flagGoCgo == 0 || len(b) < hdrSize {
		return nil
	}
	g, ok := img.GoCgo()
	if !ok {
		return nil
	}
	le := binary.LittleEndian
	n := int(le.Uint32(b[68:]))
	if n == 0 || stackEnd+n > len(b) {
		return nil
	}
	return &unwind.Switch{
		At: le.Uint64(b[72:]), Code: g.Code,
		To: unwind.Stack{Addr: le.Uint64(b[80:]), Data: b[stackEnd : stackEnd+n]},
	}
}

// noteGo tells the BPF program, once per image, where a Go process keeps
// its g, so that samples in its cgo and vDSO calls copy the goroutine's
// stack too; any other image (a process that exec'd another program) is
// removed.
func (s *Session) noteGo(img *symbolize.Image) {
	if s.goNoted[img.Pid()] == img.ID() || img.Err() != nil || s.objs.GoProcs == nil {
		return
	}
	s.goNoted[img.Pid()] = img.ID()
	if g, ok := img.GoCgo(); ok {
		_ = s.objs.GoProcs.Put(uint32(img.Pid()), g.TLSOffset) // best effort: without it such stacks stop at the switch
		return
	}
	_ = s.objs.GoProcs.Delete(uint32(img.Pid()))
}
