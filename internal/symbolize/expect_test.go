// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"math/rand/v2"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/symtab"
)

// A process's libc addresses located after Expect told of them (their
// files' DWARF read for the units holding them only) have the frames,
// lines and inlined calls they have when the whole DWARF is read; with
// libc's separate debug file installed, which holds its DWARF.
func TestExpectLocatesAlike(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to run: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var libc Mapping
	var addrs []uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && addrs == nil; time.Sleep(20 * time.Millisecond) {
		img := NewProcs(nil).Image(cmd.Process.Pid)
		for i := range img.Maps() {
			if m := img.Mapping(i); strings.Contains(m.File, "libc.so") {
				libc = m
				addrs = libcAddrs(t, m)
			}
		}
	}
	if addrs == nil {
		t.Skip("sleep maps no libc")
	}
	if dbg, err := debuginfo.FromEnv().Find(t.Context(), libc.BuildID); err != nil {
		t.Skipf("libc has no separate debug file here (%v): its DWARF is not read", err)
	} else {
		t.Logf("libc's debug file: %s", dbg)
	}
	whole := NewProcs(debuginfo.FromEnv())
	defer whole.Close()
	some := NewProcs(debuginfo.FromEnv())
	defer some.Close()
	wi, si := whole.Image(cmd.Process.Pid), some.Image(cmd.Process.Pid)
	for i, a := range addrs {
		si.Expect(a, i%2 == 0)
	}
	lines, inl := 0, 0
	for i, a := range addrs {
		w, s := wi.Locate(a, i%2 == 0), si.Locate(a, i%2 == 0)
		if !reflect.DeepEqual(w, s) {
			t.Fatalf("%#x: located after Expect %+v, with the whole DWARF %+v", a, s, w)
		}
		if w.Lines {
			lines++
		}
		if len(w.Frames) > 1 {
			inl++
		}
	}
	t.Logf("%d libc addresses alike, %d with a line, %d inside inlined calls", len(addrs), lines, inl)
	if lines == 0 {
		t.Error("no address had a line: the DWARF was not read")
	}
}

// libcAddrs picks 300 runtime addresses inside functions of the libc
// mapped at m.
func libcAddrs(t *testing.T, m Mapping) []uint64 {
	tab, err := symtab.Open(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	var funcs []symtab.Symbol
	for _, s := range tab.Symbols() {
		if s.Size > 0 {
			funcs = append(funcs, s)
		}
	}
	rnd := rand.New(rand.NewPCG(7, 8))
	var out []uint64
	for len(out) < 300 && len(funcs) > 0 {
		s := funcs[rnd.IntN(len(funcs))]
		off, err := tab.FileOffset(s.Value + rnd.Uint64N(s.Size))
		if err != nil || off < m.Offset || off-m.Offset >= m.Limit-m.Start {
			continue
		}
		out = append(out, m.Start+off-m.Offset)
	}
	return out
}
