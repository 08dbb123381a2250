// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// buildCapture builds testdata/capture.c (frameless, with unwind tables) and
// fp.c (frame pointer, no unwind tables) into one program.
func buildCapture(t *testing.T) string {
	t.Helper()
	testtarget.NeedGCC(t) // the unwinder's targets are built by the test
	dir := t.TempDir()
	bin := filepath.Join(dir, "capture")
	co, fpo := filepath.Join(dir, "c.o"), filepath.Join(dir, "fp.o")
	steps := []struct {
		out string
		p   cbuild.Program
	}{
		{co, cbuild.Program{Sources: []string{"testdata/capture.c"}, Flags: []string{"-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables", "-c"}}},
		{fpo, cbuild.Program{Sources: []string{"testdata/fp.c"}, Flags: []string{"-O2", "-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-c"}}},
		{bin, cbuild.Program{Sources: []string{co, fpo}}},
	}
	for _, s := range steps {
		if err := cbuild.Build(s.out, s.p); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// capture runs the program in a mode and reads its registers, stack and
// executable mappings (with their tables).
func capture(t *testing.T, bin, mode string) ([]Module, Regs, Stack) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(bin, dir, mode).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, mode, err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "regs.bin"))
	if err != nil || len(raw) < 24 {
		t.Fatalf("read regs: %v", err)
	}
	le := binary.LittleEndian
	regs := Regs{IP: le.Uint64(raw), SP: le.Uint64(raw[8:]), BP: le.Uint64(raw[16:])}
	stack := Stack{Addr: regs.SP, Data: raw[24:]}
	maps, err := os.ReadFile(filepath.Join(dir, "maps"))
	if err != nil {
		t.Fatal(err)
	}
	var mods []Module
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1][2] != 'x' || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		m := Module{Name: f[5]}
		m.Start, _ = strconv.ParseUint(lo, 16, 64)
		m.Limit, _ = strconv.ParseUint(hi, 16, 64)
		m.Offset, _ = strconv.ParseUint(f[2], 16, 64)
		fh, err := os.Open(f[5])
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if m.Table, err = NewTable(fh, nil); err != nil && err != ErrNoCFI {
			t.Fatalf("table of %s: %v", f[5], err)
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Start < mods[j].Start })
	return mods, regs, stack
}

// names symbolizes the frames that fall in bin with its symbol table; other
// files' frames are "(file)".
func names(t *testing.T, bin string, mods []Module, frames []Frame) []string {
	t.Helper()
	syms := testtarget.Symbols(t, bin)
	var out []string
	for _, fr := range frames {
		m := find(mods, fr.PC)
		look := fr.PC
		if !fr.Exact {
			look--
		}
		if m.Name != bin {
			name := "(" + filepath.Base(m.Name) + ")"
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
			continue
		}
		va, _ := m.Table.VAddr(look - m.Start + m.Offset)
		name := "?"
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && va >= s.Value && va < s.Value+s.Size {
				name = s.Name
			}
		}
		out = append(out, name)
	}
	return out
}

func TestUnwindBuiltTargets(t *testing.T) {
	bin := buildCapture(t)
	tests := []struct {
		mode string
		want []string
	}{
		// Frameless C functions, unwound by .eh_frame.
		{"plain", []string{"capture", "f3", "f2", "f1", "main", "(libc.so.6)", "_start"}},
		// C calling libc calling back into C.
		{"qsort", []string{"capture", "cmp", "(libc.so.6)", "sort_it", "main", "(libc.so.6)", "_start"}},
		// A signal handler: through the kernel's sigreturn trampoline
		// (__restore_rt in libc) to the interrupted kill() and its callers.
		{"signal", []string{"capture", "handler", "(libc.so.6)", "signal_me", "main", "(libc.so.6)", "_start"}},
		// Code without unwind tables but with a frame pointer, between
		// frameless code with tables.
		{"fp", []string{"capture", "cfi_leaf", "fp_middle", "main", "(libc.so.6)", "_start"}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			mods, regs, stack := capture(t, bin, tc.mode)
			res := Unwind(mods, regs, stack)
			got := names(t, bin, mods, res.Frames)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("frames %v, want %v (stop: %v %s %s)", got, tc.want, res.Stop, res.File, res.Detail)
			}
			if res.Stop != StopRoot {
				t.Errorf("stop %v (%s %s), want %v", res.Stop, res.File, res.Detail, StopRoot)
			}
			if tc.mode == "fp" && !res.Frames[2].FramePointer {
				t.Errorf("fp_middle's caller not found by frame pointer: %+v", res.Frames)
			}
		})
	}
}

// A stack copy cut short stops the walk with StopStackCopy, never with a
// frame read from outside the copy.
func TestUnwindShortCopy(t *testing.T) {
	bin := buildCapture(t)
	mods, regs, stack := capture(t, bin, "plain")
	full := Unwind(mods, regs, stack)
	for _, n := range []int{0, 8, 64, 200} {
		st := Stack{Addr: stack.Addr, Data: stack.Data[:n]}
		res := Unwind(mods, regs, st)
		if res.Stop != StopStackCopy {
			t.Errorf("copy of %d bytes: stop %v, want %v", n, res.Stop, StopStackCopy)
		}
		if len(res.Frames) > len(full.Frames) || !reflect.DeepEqual(res.Frames, full.Frames[:len(res.Frames)]) {
			t.Errorf("copy of %d bytes: frames %+v not a prefix of %+v", n, res.Frames, full.Frames)
		}
	}
}

// Garbage registers give no frame outside an executable mapping.
func TestUnwindGarbage(t *testing.T) {
	bin := buildCapture(t)
	mods, regs, stack := capture(t, bin, "plain")
	res := Unwind(mods, Regs{IP: 0x2c292a28746e756f, SP: regs.SP, BP: regs.BP}, stack)
	if len(res.Frames) != 0 || res.Stop != StopOutsideMapping {
		t.Errorf("garbage pc: %+v", res)
	}
	junk := make([]byte, len(stack.Data))
	copy(junk, bytes.Repeat([]byte("ount(*),"), len(junk)/8))
	res = Unwind(mods, regs, Stack{Addr: stack.Addr, Data: junk})
	for _, fr := range res.Frames {
		if find(mods, fr.PC) == nil {
			t.Errorf("frame %#x outside every mapping", fr.PC)
		}
	}
	if res.Stop == StopRoot {
		t.Errorf("a stack of text reached the root: %+v", res)
	}
}

// A sample taken in a PLT stub (a leaf that only jumps): the return address
// is at the stack pointer, and the walk goes on into the stub's caller.
func TestUnwindFromPLT(t *testing.T) {
	bin := buildCapture(t)
	mods, regs, stack := capture(t, bin, "plain")
	full := Unwind(mods, regs, stack)
	if len(full.Frames) < 3 {
		t.Fatalf("short walk: %+v", full)
	}
	// As if f3 had called a PLT stub: its stack pointer at the call is
	// capture's frame's top, holding the return address into f3.
	callSP := full.Frames[1].SP - 8
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var plt *elf.Section
	for _, name := range []string{".plt.sec", ".plt"} {
		if plt = f.Section(name); plt != nil {
			break
		}
	}
	if plt == nil {
		t.Fatal("no PLT in the test program: it calls libc through one, so the build changed")
	}
	var text *Module
	for i := range mods {
		if mods[i].Name == bin && mods[i].Table != nil {
			if va0, ok := mods[i].Table.VAddr(mods[i].Offset); ok && plt.Addr >= va0 && plt.Addr < va0+(mods[i].Limit-mods[i].Start) {
				text = &mods[i]
			}
		}
	}
	if text == nil {
		t.Fatal("no mapping holds the PLT")
	}
	va0, _ := text.Table.VAddr(text.Offset)
	// The first stub after PLT0 (16 bytes each), at its first instruction.
	pltPC := text.Start + (plt.Addr - va0) + 16
	st := Stack{Addr: callSP, Data: stack.Data[callSP-stack.Addr:]}
	res := Unwind(mods, Regs{IP: pltPC, SP: callSP, BP: regs.BP}, st)
	got := names(t, bin, mods, res.Frames)
	want := []string{"?", "f3", "f2", "f1", "main", "(libc.so.6)", "_start"}
	if len(got) > 0 && got[0] != "?" {
		want[0] = got[0] // the PLT has no function symbol, or one per stub
	}
	if !reflect.DeepEqual(got, want) || res.Stop != StopRoot {
		t.Errorf("from the PLT: %v (stop %v %s), want %v", got, res.Stop, res.Detail, want)
	}
	// 11 bytes into the stub it has pushed its relocation index: the
	// .eh_frame expression of the PLT adds 8 to the CFA there.
	pushed := append(make([]byte, 8), st.Data...)
	res = Unwind(mods, Regs{IP: pltPC + 11, SP: callSP - 8, BP: regs.BP}, Stack{Addr: callSP - 8, Data: pushed})
	if got := names(t, bin, mods, res.Frames); !reflect.DeepEqual(got, want) || res.Stop != StopRoot {
		t.Errorf("from the PLT after its push: %v (stop %v %s), want %v", got, res.Stop, res.Detail, want)
	}
}

// words lays out little-endian words from addr.
func words(addr uint64, w ...uint64) Stack {
	s := Stack{Addr: addr, Data: make([]byte, 8*len(w))}
	for i, v := range w {
		binary.LittleEndian.PutUint64(s.Data[8*i:], v)
	}
	return s
}

// A walk through frame-pointer code that reads on in the other stack's copy
// (a hand-made pair of stacks: leaf 0x1100 on the system stack, the
// switching function 0x1200 whose caller 0x1400 is on the other stack), and
// where the switch applies. (The programs built by the sampler's tests
// check the switch with call frame information: TestUnwindCgo,
// TestUnwindGoVDSO.)
func TestUnwindSwitch(t *testing.T) {
	mods := []Module{{Start: 0x1000, Limit: 0x2000, Name: "code"}}
	// System stack: the leaf's frame [saved rbp = the switching
	// function's, on the other stack; return address into it].
	sys := words(0x7000, 0, 0, 0x9000, 0x1205)
	regs := Regs{IP: 0x1100, SP: 0x7000, BP: 0x7010}
	// Other stack, from the switching function's stack pointer before the
	// switch: its frame [saved rbp 0x9020, return address 0x1400], then
	// the caller's [0, 0]: the outermost frame.
	other := words(0x9000, 0x9020, 0x1400, 0, 0, 0, 0)
	sw := &Switch{At: 0x7030, Code: [][2]uint64{{0x1200, 0x1300}}, To: other}
	pcs := func(r Result) []uint64 {
		var out []uint64
		for _, f := range r.Frames {
			out = append(out, f.PC)
		}
		return out
	}
	res := UnwindSwitch(mods, regs, sys, sw)
	if got, want := pcs(res), []uint64{0x1100, 0x1205, 0x1400}; !reflect.DeepEqual(got, want) || res.Stop != StopRoot {
		t.Errorf("switched walk: %#x (stop %v %s), want %#x", got, res.Stop, res.Detail, want)
	}
	// Without the switch the walk cannot read the other stack.
	if res := Unwind(mods, regs, sys); res.Stop == StopRoot || len(res.Frames) > 2 {
		t.Errorf("walk without the switch: %#x (stop %v)", pcs(res), res.Stop)
	}
	// The switch applies to a frame in the switching code at most
	// SwitchReach bytes below the top, sampled or returned to.
	for _, tc := range []struct {
		pc, sp uint64
		want   bool
	}{
		{0x1205, 0x7020, true},
		{0x1205, 0x7030, true},
		{0x1205, 0x7030 - SwitchReach, true},
		{0x1205, 0x7030 - SwitchReach - 8, false},
		{0x1205, 0x7038, false},
		{0x1300, 0x7020, false},
		{0x11ff, 0x7020, false},
	} {
		if got := sw.at(tc.pc, tc.sp); got != tc.want {
			t.Errorf("at(%#x, %#x) = %v, want %v", tc.pc, tc.sp, got, tc.want)
		}
	}
	var none *Switch
	if none.at(0x1205, 0x7020) {
		t.Error("a nil switch applies")
	}
}
