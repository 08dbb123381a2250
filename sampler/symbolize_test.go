// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"encoding/binary"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

//go:noinline
func symbolizeTarget() uintptr {
	pc, _, _, _ := runtime.Caller(0)
	return pc
}

// record builds a ring-buffer sample record as the BPF program writes it.
func record(pid uint32, flags uint32, kern, user []uint64) []byte {
	le := binary.LittleEndian
	b := make([]byte, hdrSize, hdrSize+8*(len(kern)+len(user)))
	le.PutUint32(b[0:], recSample)
	le.PutUint32(b[4:], pid)
	le.PutUint32(b[8:], pid)
	le.PutUint64(b[16:], uint64(time.Now().UnixNano()))
	le.PutUint16(b[24:], uint16(len(kern)))
	le.PutUint16(b[26:], uint16(len(user)))
	le.PutUint32(b[28:], flags)
	for _, a := range append(append([]uint64{}, kern...), user...) {
		b = le.AppendUint64(b, a)
	}
	return b
}

// TestSymbolizeSelf feeds records with this test binary's own addresses
// through the aggregation and symbolization (no BPF): Go functions are named
// through /proc/self/maps (and the load bias, if any), with file and line;
// an address outside every executable mapping is never a frame (the stack
// is cut there, marked truncated, and the profile says why); a stack cut by
// the depth limit is marked.
func TestSymbolizeSelf(t *testing.T) {
	pc := uint64(symbolizeTarget())
	caller := uint64(reflect.ValueOf(TestSymbolizeSelf).Pointer()) + 1
	s := newSession(Config{Frequency: 1000, PIDs: []int{os.Getpid()}})
	defer s.procs.Close()
	pid := uint32(os.Getpid())
	for i := 0; i < 3; i++ {
		s.handle(record(pid, 0, nil, []uint64{pc, caller}))
	}
	s.handle(record(pid, flagUserFull, nil, []uint64{pc}))
	s.handle(record(pid, 0, nil, []uint64{0x10}))
	s.handle([]byte{1, 2, 3}) // short record: ignored
	d, err := s.profile(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Samples) != 3 {
		t.Fatalf("want 3 distinct stacks, got %d", len(d.Samples))
	}
	var found, truncated, unknown bool
	for _, smp := range d.Samples {
		if len(smp.Locations) == 0 {
			unknown = smp.Truncated
			continue
		}
		leaf := d.Locations[smp.Locations[0]]
		switch {
		case leaf.Function == "github.com/tickprof/tickprof/sampler.symbolizeTarget" && smp.Count == 3:
			found = true
			if leaf.File == "" || leaf.Line == 0 {
				t.Errorf("no file and line for %+v", leaf)
			}
			if leaf.Mapping < 0 || d.Mappings[leaf.Mapping].BuildID == "" || !d.Mappings[leaf.Mapping].Symbolized {
				t.Errorf("leaf mapping %+v", d.Mappings[leaf.Mapping])
			}
			if got := d.Locations[smp.Locations[1]].Function; got != "github.com/tickprof/tickprof/sampler.TestSymbolizeSelf" {
				t.Errorf("caller symbolized as %q", got)
			}
		case smp.Truncated && smp.Count == 1 && leaf.Function != "":
			truncated = true
		}
		for _, l := range smp.Locations {
			if d.Locations[l].Address == 0x10 {
				t.Errorf("address 0x10, outside every mapping, emitted as a frame")
			}
		}
	}
	if !found || !truncated || !unknown {
		t.Errorf("found %v, truncated %v, unknown %v: %+v", found, truncated, unknown, d.Samples)
	}
	if !strings.Contains(strings.Join(d.Comments, "\n"), "1 samples: return address outside every executable mapping") {
		t.Errorf("comments do not say why a stack stopped: %q", d.Comments)
	}
	exe, _ := os.Executable()
	if d.Mappings[0].File != exe {
		t.Errorf("first mapping %s, want the executable %s", d.Mappings[0].File, exe)
	}
}
