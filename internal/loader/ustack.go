// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"encoding/binary"
	"sort"
	"strings"

	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/unwind"
)

// stackRingBytes is the crossing-record ring buffer when records carry
// stack copies and Options.RingSize is 0: 8 MiB, about 300 records of the
// largest copy between two drains (50 ms).
const stackRingBytes = 8 << 20

// urecordHdr is sizeof(struct tp_urecord) without its data: the tp_record,
// then ip, sp, bp and the copy's length.
const urecordHdr = recordSize + 32

// stackBytes is tp_stack_bytes: the copy per crossing record of a user
// function, or 0 (frame-pointer stacks from the kernel's walk) when
// Options.StackBytes is negative or every process is timed (there is no
// one memory map to unwind with).
func (o Options) stackBytes() uint32 {
	switch {
	case o.StackBytes < 0 || o.PID == 0 || o.NoRecords:
		return 0
	case o.StackBytes == 0 || o.StackBytes > symbolize.MaxStackBytes:
		return symbolize.MaxStackBytes
	}
	return uint32(o.StackBytes)
}

// StackCopy reports whether crossing records of user functions copy the
// caller's stack (Options.StackBytes), and, when the kernel's verifier
// refused the programs with the copy so that caller stacks fell back to
// frame-pointer walks, why.
func (s *Session) StackCopy() (bool, error) {
	return s.opts.stackBytes() > 0, s.stackRefused
}

// parseURecord reads the registers and stack copy of a tp_urecord.
func parseURecord(b []byte) (unwind.Regs, []byte, bool) {
	if len(b) < urecordHdr {
		return unwind.Regs{}, nil, false
	}
	le := binary.LittleEndian
	regs := unwind.Regs{IP: le.Uint64(b[recordSize:]), SP: le.Uint64(b[recordSize+8:]), BP: le.Uint64(b[recordSize+16:])}
	n := int(le.Uint32(b[recordSize+24:]))
	if n == 0 || urecordHdr+n > len(b) {
		return regs, nil, false
	}
	return regs, b[urecordHdr : urecordHdr+n], true
}

// packPCs packs addresses into a comparable map key; unpackPCs reverses it.
func packPCs(pcs []uint64) string {
	b := make([]byte, 0, 8*len(pcs))
	for _, pc := range pcs {
		b = binary.LittleEndian.AppendUint64(b, pc)
	}
	return string(b)
}

func unpackPCs(s string) []uint64 {
	out := make([]uint64, 0, len(s)/8)
	for i := 0; i+8 <= len(s); i += 8 {
		out = append(out, binary.LittleEndian.Uint64([]byte(s[i:i+8])))
	}
	return out
}

// callerStack sets the caller stack of a crossing record b of the timed
// process in k: the process's memory map it is symbolized in and, for a
// record with a stack copy, the stack unwound with the map's call frame
// information (at a uretprobe the registers are the caller's own, ip the
// return address in it, so the first frame is the caller). A stack that
// leaves the map rereads it (symbolize.Image.Refresh: a library loaded
// since, or a program exec'd) and is walked again; a frame-pointer stack
// (k.stackID) is checked the same way the first time it is seen in a map.
func (s *Session) callerStack(k *callerKey, b []byte) {
	pid := int(binary.LittleEndian.Uint32(b[4:]))
	if pid == 0 {
		pid = s.opts.PID
	}
	s.procMu.Lock()
	defer s.procMu.Unlock()
	img := s.procs.Image(pid)
	if k.stackID >= 0 {
		k.img = img
		s.mu.Lock()
		_, seen := s.callers[*k]
		s.mu.Unlock()
		if !seen {
			if _, stop := img.CutOutside(s.fpStack(k.stackID)); symbolize.StoppedOutside(stop) && img.Refresh(symbolize.MonotonicNs()) {
				k.img = s.procs.Image(pid)
			}
		}
		return
	}
	regs, stack, ok := parseURecord(b)
	if !ok {
		return
	}
	pcs, stop := img.Unwind(regs, stack, nil, nil)
	// The record was taken before it was read: now bounds its time.
	if symbolize.StoppedOutside(stop) && img.Refresh(symbolize.MonotonicNs()) {
		img = s.procs.Image(pid)
		pcs, stop = img.Unwind(regs, stack, nil, nil)
	}
	k.img, k.pcs, k.stop = img, packPCs(pcs), stop
}

// fpStack reads the kernel's frame-pointer walk stackID from tp_stacks,
// up to its first 0 (nil when it is gone).
func (s *Session) fpStack(stackID int32) []uint64 {
	pcs := make([]uint64, s.objs.TpStacks.ValueSize()/8)
	if err := s.objs.TpStacks.Lookup(uint32(stackID), &pcs); err != nil {
		return nil
	}
	for i, pc := range pcs {
		if pc == 0 {
			return pcs[:i]
		}
	}
	return pcs
}

// symbolizeStack sets c's stack from pcs (leaf first), symbolized in img
// (nil: every process is timed, the addresses stay unnamed), cut at the
// first address outside every executable mapping.
func (s *Session) symbolizeStack(c *Caller, img *symbolize.Image, pcs []uint64) {
	if img == nil {
		for _, pc := range pcs {
			c.Stack = append(c.Stack, symbolize.Location{Addr: pc, Mapping: -1})
		}
		return
	}
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if len(img.Maps()) > 0 { // else the map was never read: nothing to cut at
		var stop unwind.Where
		if pcs, stop = img.CutOutside(pcs); stop.Reason != "" {
			c.Cut, c.Stop = true, stop
		}
	}
	for _, pc := range pcs {
		c.Stack = append(c.Stack, img.Locate(pc, false))
	}
}

// checkFPEnd marks a frame-pointer stack whose outermost frame is no
// process or thread start as cut: the walk met a frame without a frame
// pointer, or the depth limit (TP_STACK_DEPTH).
func checkFPEnd(c *Caller) {
	if c.Cut || len(c.Stack) == 0 {
		return
	}
	last := c.Stack[len(c.Stack)-1]
	if !unwind.EndsStack(last.Function(), last.Path) {
		c.Cut = true
		c.Stop = unwind.Where{Reason: "frame-pointer walk ended before the outermost frame", File: last.Path}
	}
}

// mergeCallers adds up the callers whose stacks came out the same from
// different memory maps of the process (a map reread between their
// records).
func mergeCallers(cs []Caller) []Caller {
	at := map[string]int{}
	out := cs[:0]
	for _, c := range cs {
		k := callerIdentity(c)
		if i, ok := at[k]; ok {
			out[i].Records += c.Records
			out[i].Ticks += c.Ticks
			out[i].Ns += c.Ns
			continue
		}
		at[k] = len(out)
		out = append(out, c)
	}
	return out
}

// callerIdentity is what makes two callers the same: target, how the
// stack was taken and where it ended, and each frame's address, file and
// functions.
func callerIdentity(c Caller) string {
	var b strings.Builder
	b.WriteString(packPCs([]uint64{uint64(c.Target)}))
	if c.Cut {
		b.WriteByte('c')
	}
	if c.Unwound {
		b.WriteByte('u')
	}
	b.WriteString(c.Stop.String())
	for _, l := range c.Stack {
		b.WriteString("\x00" + packPCs([]uint64{l.Addr}) + l.Path)
		for _, f := range l.Frames {
			b.WriteString("\x01" + f.Function)
		}
	}
	return b.String()
}

// sortCallers orders callers by tick count, then records, largest first.
func sortCallers(out []Caller) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ticks != out[j].Ticks {
			return out[i].Ticks > out[j].Ticks
		}
		return out[i].Records > out[j].Records
	})
}
