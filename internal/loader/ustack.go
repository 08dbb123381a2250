package loader

import (
	"encoding/binary"
	"os"
	"time"

	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/unwind"
)

// DefaultStackBytes is the user stack a crossing record of a user function
// copies when Options.StackBytes is 0: the most the BPF program copies
// (TP_MAX_STACK, as `sample`'s default; a per-CPU map value holds at most
// 32 KiB). The copy ends at the top of the stack's mapping anyway.
const DefaultStackBytes = 28672

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
	case o.StackBytes == 0 || o.StackBytes > DefaultStackBytes:
		return DefaultStackBytes
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

// unwindCaller walks a crossing record's stack copy with the call frame
// information of the process's files. At a uretprobe the registers are the
// caller's own (ip the return address in it), so the first frame is the
// caller. A walk that leaves the known maps rereads them (a library loaded
// since) and walks again.
func (p *procMaps) unwindCaller(regs unwind.Regs, stack []byte) ([]uint64, unwind.Where) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pcs, stop := unwind.Walk(p.modules(), regs, stack, nil, nil)
	if stop.Reason == unwind.StopOutsideMapping.String() && p.reread() {
		pcs, stop = unwind.Walk(p.modules(), regs, stack, nil, nil)
	}
	return pcs, stop
}

// reread rereads the maps at most every 20 ms, with p.mu held; it reports
// whether they were read. (The first time at once: a command held at its
// exec had not mapped its libraries when the maps were first read.)
func (p *procMaps) reread() bool {
	if time.Since(p.rereadAt) < 20*time.Millisecond {
		return false
	}
	p.rereadAt = time.Now()
	m, err := readMaps(p.pid)
	if err != nil || len(m) == 0 {
		return false
	}
	p.setMaps(m)
	return true
}

// modules returns the executable mappings with their call frame
// information, with p.mu held; tables are built once per file.
func (p *procMaps) modules() []unwind.Module {
	if p.mods != nil {
		return p.mods
	}
	p.mods = make([]unwind.Module, len(p.maps))
	for i, m := range p.maps {
		p.mods[i] = unwind.Module{Start: m.Start, Limit: m.Limit, Offset: m.Offset, Name: m.Path, Table: p.cfiTable(m.Path)}
	}
	return p.mods
}

// cfiTable returns the call frame information of a mapped file (with its
// separate debug file's .debug_frame, when found), or nil.
func (p *procMaps) cfiTable(path string) *unwind.Table {
	if t, ok := p.cfi[path]; ok {
		return t
	}
	if p.cfi == nil {
		p.cfi = map[string]*unwind.Table{}
	}
	p.cfi[path] = nil
	f, err := os.Open(proc.RootPath(p.pid, path))
	if err != nil {
		return nil
	}
	defer f.Close()
	dbg := ""
	if st := p.table(path); st != nil {
		p.debugTable(path, st)
		dbg = p.debugPath[path]
	}
	if t, _ := unwind.NewTableDebug(f, dbg); t != nil {
		p.cfi[path] = t
	}
	return p.cfi[path]
}
