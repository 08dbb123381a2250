// SPDX-License-Identifier: Apache-2.0

// Package unwind walks user-space stacks of x86-64 processes from a copy of
// the stack and the registers at the sample, with the call frame
// information (.eh_frame, .debug_frame) of the mapped files, falling back to
// frame pointers where a file has none. It is pure Go: the caller supplies
// the registers, the stack bytes, and the process's executable mappings with
// their tables (NewTable); nothing here reads a process.
//
// Frames are only emitted for addresses inside an executable mapping, and a
// walk that stops before the outermost frame says why (Stop) and in which
// file. DWARF CFI is parsed by Delve's pkg/dwarf/frame; DWARF expressions
// (signal trampolines, PLT entries) are evaluated here.
//
// Of third-party modules it imports only Delve's frame parser (checked by
// internal/layers).
package unwind

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// DWARF register numbers of x86-64 (System V psABI, figure 3.36).
const (
	regBP = 6
	regSP = 7
	regRA = 16
	nRegs = 17
)

// Regs are the user registers at the sample.
type Regs struct {
	IP, SP, BP uint64
}

// Stack is a copy of user memory starting at Addr (the stack pointer at the
// sample).
type Stack struct {
	Addr uint64
	Data []byte
}

// Module is one executable mapping of the process.
type Module struct {
	Start, Limit uint64 // runtime addresses [Start, Limit)
	Offset       uint64 // file offset of Start
	Name         string // the file, for stop reasons
	// Table is the file's call frame information; nil when it could not
	// be read (the walk then uses frame pointers in this file).
	Table *Table
	// Code reads the instructions at an address of a mapping without
	// call frame information (JIT code; nil: none are read), so that a
	// frame whose code returns at once is unwound exactly (epilogue.go)
	// where its frame pointer does not lead on.
	Code func(addr uint64) ([]byte, bool)
}

// Frame is one unwound frame.
type Frame struct {
	PC uint64
	// Exact says PC is the interrupted instruction (the sampled frame, or
	// one a signal interrupted) rather than a return address.
	Exact bool
	// FramePointer says this frame's caller was found by frame pointer
	// rather than call frame information.
	FramePointer bool
	// SP is the stack pointer in this frame.
	SP uint64
}

// Stop says why a walk ended.
type Stop int

// The reasons a walk stops.
const (
	// StopRoot: the outermost frame was reached (its return address is
	// undefined in the call frame information, or zero).
	StopRoot Stop = iota
	// StopNoUnwindInfo: a frame in a file without call frame information
	// whose frame pointer did not lead on.
	StopNoUnwindInfo
	// StopNoEntry: the file has call frame information but none for this
	// address, and the frame pointer did not lead on.
	StopNoEntry
	// StopOutsideMapping: the next return address lies outside every
	// executable mapping (a corrupt stack or a frame-pointer walk through
	// code that does not keep one).
	StopOutsideMapping
	// StopStackCopy: the walk needed memory beyond the copied stack.
	StopStackCopy
	// StopDepth: the frame limit was reached.
	StopDepth
	// StopBadFrame: the rules gave a frame that does not move up the
	// stack, or a register they need is unknown.
	StopBadFrame
	// StopNoRegisters: no registers were captured.
	StopNoRegisters
)

var stopNames = [...]string{
	StopRoot:           "reached the outermost frame",
	StopNoUnwindInfo:   "no unwind information",
	StopNoEntry:        "no unwind entry for the address",
	StopOutsideMapping: "return address outside every executable mapping",
	StopStackCopy:      "stack copy too short",
	StopDepth:          "frame limit reached",
	StopBadFrame:       "unwind rules gave an invalid frame",
	StopNoRegisters:    "no user registers",
}

func (s Stop) String() string {
	if s >= 0 && int(s) < len(stopNames) {
		return stopNames[s]
	}
	return fmt.Sprintf("stop(%d)", int(s))
}

// Result is a walked stack.
type Result struct {
	Frames []Frame // leaf first
	Stop   Stop
	// File is the file of the frame where the walk stopped ("" if none).
	File string
	// Detail says more about the stop (the rule that failed).
	Detail string
}

// Complete reports whether the walk reached the outermost frame.
func (r Result) Complete() bool { return r.Stop == StopRoot }

// MaxFrames bounds a walk.
const MaxFrames = 256

// regFile holds the registers known in a frame.
type regFile struct {
	v     [nRegs]uint64
	known uint32
}

func (r *regFile) get(i uint64) (uint64, bool) {
	if i >= nRegs || r.known&(1<<i) == 0 {
		return 0, false
	}
	return r.v[i], true
}

func (r *regFile) set(i uint64, v uint64) {
	if i < nRegs {
		r.v[i] = v
		r.known |= 1 << i
	}
}

func (r *regFile) clear(i uint64) {
	if i < nRegs {
		r.known &^= 1 << i
	}
}

// memory is the stack copy and, after a switch, the copy of the other
// stack.
type memory struct {
	Stack
	other Stack
}

func (s Stack) word(addr uint64) (uint64, bool) {
	if addr < s.Addr || addr-s.Addr+8 > uint64(len(s.Data)) || addr+8 < addr {
		return 0, false
	}
	return binary.LittleEndian.Uint64(s.Data[addr-s.Addr:]), true
}

func (m memory) word(addr uint64) (uint64, bool) {
	if v, ok := m.Stack.word(addr); ok {
		return v, true
	}
	return m.other.word(addr)
}

// Switch is where a walk moves to another stack. Go runs C code called
// through cgo, and the vDSO, on the thread's system stack and keeps the Go
// callers on the goroutine's stack: runtime.asmcgocall (and time.now,
// runtime.nanotime1) move the stack pointer to the top of the system stack
// (g0.sched.sp), less a few aligned bytes, and call the C code from there;
// their caller is found from the goroutine's stack pointer before the
// switch.
type Switch struct {
	// At is the top of the stack switched to: a frame in one of the Code
	// ranges whose stack pointer lies at most SwitchReach bytes below At
	// is switched from.
	At   uint64
	Code [][2]uint64 // [start, limit) of the switching functions
	// To is a copy of the other stack from the stack pointer the function
	// had before it switched, from where the function's own unwind rules
	// (or its frame pointer) find its caller. Registers the callee
	// preserves (rbp among them) keep their values across the callee.
	To Stack
}

// SwitchReach bounds how far below Switch.At the switching frame lies
// (runtime.asmcgocall takes 16 bytes and aligns to 16, time.now 32).
const SwitchReach = 64

// at reports whether the frame with pc and sp is where the walk switches:
// also the sampled frame itself, when the sample fell in the switching
// function after it moved the stack pointer.
func (sw *Switch) at(pc, sp uint64) bool {
	if sw == nil || sp > sw.At || sw.At-sp > SwitchReach {
		return false
	}
	for _, c := range sw.Code {
		if pc >= c[0] && pc < c[1] {
			return true
		}
	}
	return false
}

// calleeSaved are the registers a call preserves (System V psABI): rbx,
// rbp, r12-r15. The others are unknown in a caller unless a rule says.
const calleeSaved = 1<<3 | 1<<regBP | 1<<12 | 1<<13 | 1<<14 | 1<<15

// Unwind walks the stack. mods must be sorted by Start and not overlap.
func Unwind(mods []Module, regs Regs, stack Stack) Result {
	return UnwindSwitch(mods, regs, stack, nil)
}

// UnwindSwitch walks the stack as Unwind does, moving to another stack
// where sw (if not nil) says.
func UnwindSwitch(mods []Module, regs Regs, stack Stack, sw *Switch) Result {
	var res Result
	if regs.SP == 0 || regs.IP == 0 {
		res.Stop = StopNoRegisters
		return res
	}
	mem := memory{Stack: stack}
	if sw != nil {
		mem.other = sw.To
	}
	var rf regFile
	rf.set(regSP, regs.SP)
	rf.set(regBP, regs.BP)
	rf.set(regRA, regs.IP)
	pc, exact := regs.IP, true
	for {
		m := find(mods, pc)
		if m == nil {
			res.Stop = StopOutsideMapping
			res.Detail = fmt.Sprintf("%#x", pc)
			return res
		}
		if len(res.Frames) >= MaxFrames {
			res.Stop, res.File = StopDepth, m.Name
			return res
		}
		fr := Frame{PC: pc, Exact: exact, SP: rf.v[regSP]}
		look := pc
		if !exact {
			look-- // a return address: the call is the instruction before
		}
		switched := sw.at(pc, rf.v[regSP])
		if switched {
			// The frame's own rules apply to the stack pointer it had
			// before it switched stacks.
			rf.set(regSP, sw.To.Addr)
		}
		next, signal, stop, detail := step(m, look, exact, &rf, mem)
		if stop == stopFP {
			fr.FramePointer = true
		}
		res.Frames = append(res.Frames, fr)
		if stop != stopNone && stop != stopFP {
			res.Stop, res.File, res.Detail = stop, m.Name, detail
			return res
		}
		if next.known&(1<<regRA) == 0 || next.v[regRA] == 0 {
			res.Stop, res.File = StopRoot, m.Name
			return res
		}
		oldSP := rf.v[regSP]
		newSP, ok := next.get(regSP)
		if !ok || (newSP <= oldSP && !signal && !switched) {
			res.Stop, res.File, res.Detail = StopBadFrame, m.Name, fmt.Sprintf("stack pointer %#x after %#x", newSP, oldSP)
			return res
		}
		rf = next
		pc, exact = rf.v[regRA], signal
	}
}

// entryReach is how far past a file's entry point a return address may lie
// and still be in its entry function (x86-64 _start calls within its first
// instructions).
const entryReach = 32

// stopNone and stopFP are step results besides the Stop reasons.
const (
	stopNone Stop = -1
	stopFP   Stop = -2
)

// step computes the caller's registers of the frame at look (a virtual
// runtime address in m).
func step(m *Module, look uint64, exact bool, rf *regFile, mem memory) (next regFile, signal bool, stop Stop, detail string) {
	var r *row
	noInfo := StopNoUnwindInfo
	va := uint64(0)
	if m.Table != nil && len(m.Table.fdes) > 0 {
		noInfo = StopNoEntry
		if v, ok := m.Table.VAddr(look - m.Start + m.Offset); ok {
			va = v
			r = m.Table.rowAt(va)
		}
	}
	if r != nil && r.ok {
		next, stop, detail = apply(r, rf, mem)
		return next, r.signal, stop, detail
	}
	if m.Table != nil && exact && m.Table.inPLT(va) {
		// A PLT stub without an entry: it only jumps, the return
		// address is at the stack pointer.
		sp := rf.v[regSP]
		ra, ok := mem.word(sp)
		if !ok {
			return next, false, StopStackCopy, fmt.Sprintf("read %#x", sp)
		}
		next = *rf
		next.known &= calleeSaved | 1<<regSP | 1<<regRA
		next.set(regSP, sp+8)
		next.set(regRA, ra)
		return next, false, stopNone, ""
	}
	if r == nil && m.Code != nil {
		if next, ok := stepEpilogue(m, look, exact, rf, mem); ok {
			return next, false, stopNone, ""
		}
	}
	// Frame pointers: the caller's rbp at [rbp], the return address at
	// [rbp+8], its stack pointer rbp+16.
	bp, ok := rf.get(regBP)
	why := "no frame pointer"
	if r != nil && r.reason != "" {
		why = r.reason
	}
	if m.Table != nil && m.Table.entry != 0 && va >= m.Table.entry && va < m.Table.entry+entryReach {
		// The file's entry point (the dynamic loader's _start, which
		// calls _dl_start and has no entry of its own) starts the
		// process: nothing called it.
		return next, false, StopRoot, "entry point"
	}
	if !ok || bp < rf.v[regSP] {
		return next, false, noInfo, why
	}
	savedBP, ok1 := mem.word(bp)
	ra, ok2 := mem.word(bp + 8)
	if !ok1 || !ok2 {
		if bp >= mem.Addr && bp < mem.Addr+uint64(len(mem.Data))+(1<<20) {
			return next, false, StopStackCopy, fmt.Sprintf("frame pointer %#x beyond the copy", bp)
		}
		return next, false, noInfo, why + "; frame pointer outside the stack"
	}
	next = *rf
	next.known &= calleeSaved
	next.set(regBP, savedBP)
	next.set(regSP, bp+16)
	next.set(regRA, ra)
	return next, false, stopFP, ""
}

// apply runs one row's rules.
func apply(r *row, rf *regFile, mem memory) (next regFile, stop Stop, detail string) {
	cfa, stop, detail := frameCFA(r, rf, mem)
	if stop != stopNone {
		return next, stop, detail
	}
	next = *rf
	next.known &= calleeSaved
	next.set(regSP, cfa)
	raDefined := false
	for reg, rule := range r.regs {
		if reg >= nRegs {
			continue
		}
		defined, stop, detail := applyRule(r, reg, rule, rf, &next, mem, cfa)
		if stop != stopNone {
			return next, stop, detail
		}
		if defined && reg == r.raReg {
			raDefined = true
		}
	}
	if r.raReg != regRA {
		if v, ok := next.get(r.raReg); ok && raDefined {
			next.set(regRA, v)
		} else {
			next.clear(regRA)
		}
	} else if !raDefined {
		next.clear(regRA) // undefined: the outermost frame
	}
	return next, stopNone, ""
}

// frameCFA computes a row's canonical frame address from the registers
// rf, or the reason it cannot (stopNone when it can).
func frameCFA(r *row, rf *regFile, mem memory) (uint64, Stop, string) {
	switch r.cfa.Rule {
	case frame.RuleCFA:
		v, ok := rf.get(r.cfa.Reg)
		if !ok {
			return 0, StopBadFrame, fmt.Sprintf("CFA register %d unknown", r.cfa.Reg)
		}
		return v + uint64(r.cfa.Offset), stopNone, ""
	case frame.RuleExpression:
		v, err := evalExpr(r.cfa.Expression, rf, mem, nil)
		if err != nil {
			return 0, exprStop(err), "CFA expression: " + err.Error()
		}
		return v, stopNone, ""
	}
	return 0, StopBadFrame, fmt.Sprintf("CFA rule %d", r.cfa.Rule)
}

// applyRule sets or clears register reg in next by its rule, from the
// callee's registers rf and the frame's cfa. defined says the rule gave
// the register a value (an undefined return address ends the stack); a
// stop other than stopNone ends the walk when the return address cannot be
// recovered.
func applyRule(r *row, reg uint64, rule frame.DWRule, rf, next *regFile, mem memory, cfa uint64) (defined bool, stop Stop, detail string) {
	switch rule.Rule {
	case frame.RuleUndefined:
		next.clear(reg)
		return false, stopNone, ""
	case frame.RuleSameVal:
		if v, ok := rf.get(reg); ok {
			next.set(reg, v)
		}
	case frame.RuleOffset:
		return offsetRule(r, reg, cfa+uint64(rule.Offset), rf, next, mem)
	case frame.RuleValOffset:
		next.set(reg, cfa+uint64(rule.Offset))
	case frame.RuleRegister:
		if v, ok := rf.get(rule.Reg); ok {
			next.set(reg, v)
		} else {
			next.clear(reg)
		}
	case frame.RuleExpression, frame.RuleValExpression:
		return exprRule(r, reg, rule, rf, next, mem, cfa)
	default:
		next.clear(reg)
		return false, stopNone, ""
	}
	return true, stopNone, ""
}

// offsetRule restores register reg saved at addr (DW_CFA_offset).
func offsetRule(r *row, reg, addr uint64, rf, next *regFile, mem memory) (bool, Stop, string) {
	v, ok := mem.word(addr)
	if ok {
		next.set(reg, v)
		return true, stopNone, ""
	}
	if reg == r.raReg {
		return false, StopStackCopy, fmt.Sprintf("read %#x", addr)
	}
	if sp, _ := rf.get(regSP); addr < sp {
		// In an epilogue the slot lies below the stack pointer: the
		// register was popped already and holds the caller's value.
		if v, ok := rf.get(reg); ok {
			next.set(reg, v)
			return false, stopNone, ""
		}
	}
	next.clear(reg)
	return false, stopNone, ""
}

// exprRule evaluates an expression rule (DW_CFA_expression, where the
// register is saved, or DW_CFA_val_expression, its value) for register reg.
func exprRule(r *row, reg uint64, rule frame.DWRule, rf, next *regFile, mem memory, cfa uint64) (bool, Stop, string) {
	c := cfa
	v, err := evalExpr(rule.Expression, rf, mem, &c)
	if err == nil && rule.Rule == frame.RuleExpression {
		var ok bool
		if v, ok = mem.word(v); !ok {
			err = fmt.Errorf("read %#x: outside the stack copy", v)
		}
	}
	if err != nil {
		if reg == r.raReg {
			return false, exprStop(err), "return address: " + err.Error()
		}
		next.clear(reg)
		return false, stopNone, ""
	}
	next.set(reg, v)
	return true, stopNone, ""
}

func exprStop(err error) Stop {
	if err != nil && strings.Contains(err.Error(), "outside the stack copy") {
		return StopStackCopy
	}
	return StopBadFrame
}

// find returns the module holding addr.
func find(mods []Module, addr uint64) *Module {
	i := sort.Search(len(mods), func(i int) bool { return mods[i].Limit > addr })
	if i < len(mods) && mods[i].Start <= addr {
		return &mods[i]
	}
	return nil
}

// Where says why a walk ended before its outermost frame, and in which
// file; the zero Where is a complete walk. It is comparable, so callers
// count stacks by it.
type Where struct {
	Reason string
	File   string
}

// continuedPrefix starts the reason of a walk continued by frame pointers.
const continuedPrefix = "continued by frame pointers after the stack copy; "

// Walk unwinds the stack (UnwindSwitch) and returns its frames' addresses,
// leaf first, and where it stopped. fp is a frame-pointer walk of the same
// stack (the kernel's, leaf first; nil if none): when the copy ended before
// the walk did, fp's frames after the last unwound one (fpResume) are
// appended as long as they lie in the modules, so that no address outside
// an executable mapping is ever returned.
func Walk(mods []Module, regs Regs, stack []byte, fp []uint64, sw *Switch) ([]uint64, Where) {
	st := Stack{Addr: regs.SP, Data: stack}
	res := UnwindSwitch(mods, regs, st, sw)
	out := make([]uint64, 0, len(res.Frames)+8)
	for _, f := range res.Frames {
		out = append(out, f.PC)
	}
	if res.Complete() {
		return out, Where{}
	}
	stop := Where{Reason: res.Stop.String(), File: res.File}
	if res.Stop != StopStackCopy || len(out) == 0 {
		return out, stop
	}
	n := 0
	for _, a := range fp[min(fpResume(regs, st, fp, res.Frames), len(fp)):] {
		if find(mods, a) == nil {
			break
		}
		out = append(out, a)
		n++
	}
	if n > 0 {
		stop.Reason = continuedPrefix + stop.Reason
	}
	return out, stop
}

// fpResume is the index in fp, the kernel's frame-pointer walk (fp[0] the
// sampled address, fp[i] the return address it read at rbp+8 of the i-th
// frame pointer along the chain from regs.BP), of the frame after the last
// unwound one; len(fp) if none is found. The chain is followed through the
// copy as the kernel did: the unwound frame whose stack pointer is 16 bytes
// above a frame pointer is the one whose return address the kernel read
// there. When the last frame is not on the chain (frameless code), the
// frame after its address's c-th occurrence in fp is taken, c being its
// occurrences among the unwound frames (in recursion an address recurs).
func fpResume(regs Regs, st Stack, fp []uint64, frames []Frame) int {
	last := frames[len(frames)-1]
	if len(frames) > 1 {
		bp := regs.BP
		for i := 1; i < len(fp); i++ {
			if bp+16 == last.SP && fp[i] == last.PC {
				return i + 1
			}
			ra, ok1 := st.word(bp + 8)
			next, ok2 := st.word(bp)
			if !ok1 || !ok2 || ra != fp[i] || next <= bp {
				break
			}
			bp = next
		}
	}
	c := 0
	for _, f := range frames {
		if f.PC == last.PC {
			c++
		}
	}
	for j, a := range fp {
		if a == last.PC {
			if c--; c == 0 {
				return j + 1
			}
		}
	}
	return len(fp)
}

// NoInfo reports whether the walk stopped in a file without call frame
// information (its file is then w.File).
func (w Where) NoInfo() bool {
	return strings.HasSuffix(w.Reason, StopNoUnwindInfo.String())
}

// String is the reason and the file: "no unwind information in
// /usr/lib/libfoo.so"; "" for a complete walk.
func (w Where) String() string {
	if w.File == "" {
		return w.Reason
	}
	return w.Reason + " in " + w.File
}
