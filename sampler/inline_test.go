// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/debuginfo"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// pprofFrames are a location's lines in addr2line's terms: base file
// names, and the outermost function by its DWARF name (without a GCC
// suffix such as ".cold").
func pprofFrames(l *profile.Location) []testtarget.Frame {
	var out []testtarget.Frame
	for _, ln := range l.Line {
		out = append(out, testtarget.Frame{Function: ln.Function.Name, File: baseName(ln.Function.Filename), Line: ln.Line})
	}
	if n := len(out); n > 0 {
		out[n-1].Function, _, _ = strings.Cut(out[n-1].Function, ".")
	}
	return out
}

// baseName is the file name of a path, "" for none.
func baseName(path string) string {
	if path == "" {
		return ""
	}
	return filepath.Base(path)
}

func framesString(fs []testtarget.Frame) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.String())
	}
	return strings.Join(s, " < ")
}

// TestSampleInlined samples testdata/c/inlined.c built -O2 -g, whose hot
// loop mix is inlined into work, as built and stripped with its DWARF in a
// debug file: most samples lie in mix, which is a frame of its own with
// its own name and line, above work at the line of mix's call, above step
// inlined into level at its call of work. Every location in the target
// has the frames `addr2line -i -f` gives for its address (the return
// address minus one above the leaf), on the binary or the debug file.
func TestSampleInlined(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.Inlined(t)
	t.Run("dwarf", func(t *testing.T) { checkSampledInlines(t, bin, bin) })
	t.Run("debugfile", func(t *testing.T) {
		stripped, debug := testtarget.Strip(t, bin)
		id, err := debuginfo.BuildID(stripped)
		if err != nil {
			t.Fatal(err)
		}
		checkSampledInlines(t, stripped, testtarget.DebuginfodCache(t, id, debug))
	})
}

// checkSampledInlines samples exe for 2 s and checks its stacks against
// the DWARF of dwarfFile.
func checkSampledInlines(t *testing.T, exe, dwarfFile string) {
	_, p, _ := sampleCommand(t, 999, nil, exe, "2")
	var total, inMix int64
	vaddrs := map[uint64]bool{}
	var locs []seenLoc
	done := map[seenLoc]bool{}
	for _, s := range p.Sample {
		total += s.Value[0]
		got := framesOf(s.Location)
		if len(got) >= 4 && got[0].Function == "mix" && got[1].Function == "work" && got[2].Function == "step" && got[3].Function == "level" {
			inMix += s.Value[0]
			if got[0].Line == got[1].Line || got[0].Line == 0 || got[2].Line == 0 || got[3].Line == 0 {
				t.Errorf("inlined frames without their own lines: %s", framesString(got))
			}
		}
		for i, l := range s.Location {
			if l.Mapping == nil || l.Mapping.File != exe {
				continue
			}
			look := l.Address
			if i > 0 {
				look-- // a return address: the call is the instruction before
			}
			va, ok := testtarget.FileVAddr(t, exe, look-l.Mapping.Start+l.Mapping.Offset)
			if !ok {
				t.Fatalf("%#x lies in no segment of %s", l.Address, exe)
			}
			if k := (seenLoc{l, va}); !done[k] {
				done[k] = true
				vaddrs[va] = true
				locs = append(locs, k)
			}
		}
	}
	t.Logf("%d of %d samples in mix < work < step < level", inMix, total)
	if total < 500 || inMix < total/2 {
		t.Errorf("%d of %d samples in mix inlined into work, called from step inlined into level: want most of at least 500", inMix, total)
	}
	if !testtarget.HaveAddr2line() {
		t.Logf("addr2line (binutils) not installed: locations not compared with it")
		return
	}
	compareLocations(t, dwarfFile, locs, vaddrs)
}

// seenLoc is a location of a sampled stack with the file address looked
// up for it (the address, or the return address minus one).
type seenLoc struct {
	loc *profile.Location
	va  uint64
}

// compareLocations compares each location's lines with addr2line's frames
// on dwarfFile.
func compareLocations(t *testing.T, dwarfFile string, locs []seenLoc, vaddrs map[uint64]bool) {
	var list []uint64
	for va := range vaddrs {
		list = append(list, va)
	}
	want := testtarget.Addr2line(t, dwarfFile, list)
	bad := 0
	for _, s := range locs {
		if got := pprofFrames(s.loc); framesString(got) != framesString(want[s.va]) {
			if bad++; bad <= 10 {
				t.Errorf("%#x (file address %#x): %s, addr2line -i says %s", s.loc.Address, s.va, framesString(got), framesString(want[s.va]))
			}
		}
	}
	t.Logf("%d locations at %d addresses compared with addr2line -i -f -e %s, %d differ", len(locs), len(list), dwarfFile, bad)
}

// framesOf lists a stack's frames, innermost first, inlined ones included.
func framesOf(locs []*profile.Location) []testtarget.Frame {
	var out []testtarget.Frame
	for _, l := range locs {
		for _, ln := range l.Line {
			out = append(out, testtarget.Frame{Function: ln.Function.Name, File: baseName(ln.Function.Filename), Line: ln.Line})
		}
	}
	return out
}
