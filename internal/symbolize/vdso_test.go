// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"os"
	"testing"

	"github.com/tickprof/tickprof/internal/proc"
)

// selfVDSO returns this process's vDSO mapping.
func selfVDSO(t *testing.T) proc.Mapping {
	t.Helper()
	maps, err := proc.ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.Path == VDSOPath {
			return m
		}
	}
	t.Skip("this process has no vDSO mapping")
	return proc.Mapping{}
}

// vdsoFunc returns the start address (in the image) of the function the
// vDSO names __vdso_NAME, failing the test when there is none.
func vdsoFunc(t *testing.T, v *vdsoImage, name string) uint64 {
	t.Helper()
	for a, n := range v.Names {
		if n == vdsoPrefix+name {
			return a
		}
	}
	t.Fatalf("vDSO has no %s%s: %v", vdsoPrefix, name, v.Names)
	return 0
}

// TestParseVDSOSelf reads this process's own vDSO from /proc/self/mem and
// parses it from memory: it names clock_gettime by its __vdso_ alias, the
// symbol table opened through the in-memory file finds the function and the
// build ID, and a second process's read hits the cache.
func TestParseVDSOSelf(t *testing.T) {
	m := selfVDSO(t)
	b, err := readVDSO(os.Getpid(), m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != "\x7fELF" {
		t.Fatalf("vDSO does not start with the ELF magic: % x", b[:4])
	}
	v, err := parseVDSO(b)
	if err != nil {
		t.Fatal(err)
	}
	start := vdsoFunc(t, v, "clock_gettime")
	tab, f, err := openImage(b)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer tab.Close()
	if tab.BuildID == "" {
		t.Errorf("vDSO symbol table has no build ID")
	}
	if _, fstart, ok := tab.Func(start + 1); !ok || fstart != start {
		t.Errorf("Func(%#x) = start %#x, %v; want start %#x", start+1, fstart, ok, start)
	}
	var code [1]byte
	if _, err := f.ReadAt(code[:], int64(start)); err != nil || code[0] != b[start] {
		t.Errorf("memory file byte at %#x = %#x (%v), image has %#x", start, code[0], err, b[start])
	}
	if _, err := parseVDSO(b[:64]); err == nil {
		t.Errorf("a truncated image parsed")
	}

	pt := NewProcs(nil)
	defer pt.Close()
	f1, f2 := pt.vdso(os.Getpid(), m), pt.vdso(os.Getpid(), m)
	if f1.table == nil || f1 != f2 || len(pt.vdsos) != 1 {
		t.Errorf("vDSO not cached: %p %p (err %v), %d cached", f1, f2, f1.err, len(pt.vdsos))
	}
	if f := pt.vdso(1<<30, m); f.table != nil || f.err == nil {
		t.Errorf("vDSO of a process that does not exist: %+v", f)
	}
}

// TestLocateVDSOSelf symbolizes addresses in this process's vDSO: one
// inside clock_gettime gets the __vdso_ name and the mapping the build ID;
// two in the ELF header, which no function holds, fold into the one
// function [vdso] and keep their addresses.
func TestLocateVDSOSelf(t *testing.T) {
	m := selfVDSO(t)
	b, err := readVDSO(os.Getpid(), m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseVDSO(b)
	if err != nil {
		t.Fatal(err)
	}
	inFunc := m.Start + vdsoFunc(t, v, "clock_gettime") + 4
	pt := NewProcs(nil)
	defer pt.Close()
	img := pt.Image(os.Getpid())
	want := map[uint64]string{inFunc: "__vdso_clock_gettime", m.Start + 8: VDSOPath, m.Start + 16: VDSOPath}
	for a, fn := range want {
		l := img.Locate(a, true)
		if l.Mapping < 0 || l.Path != VDSOPath || l.Function() != fn || len(l.Frames) != 1 {
			t.Errorf("address %#x located as %+v, want %s in %s", a, l, fn, VDSOPath)
			continue
		}
		if mp := img.Mapping(l.Mapping); mp.BuildID == "" || !mp.Symbolized || mp.File != VDSOPath {
			t.Errorf("vDSO mapping %+v: want build ID and symbolized", mp)
		}
	}
}
