package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tickprof/tickprof/calibrate"
	"github.com/tickprof/tickprof/loader"
)

func TestOverheadFor(t *testing.T) {
	dir := t.TempDir()
	// A file whose bytes at offset 0 are push %rbp and at 1 xor %eax,%eax.
	bin := filepath.Join(dir, "code")
	if err := os.WriteFile(bin, []byte{0x55, 0x31, 0xc0, 0xc3}, 0o644); err != nil {
		t.Fatal(err)
	}
	cal := &calibrate.Calibration{Overheads: []calibrate.Overhead{
		{Kind: "user", MeanNs: 1000}, {Kind: "user-stepped", MeanNs: 13000}, {Kind: "syscall", MeanNs: 300},
	}}
	for _, c := range []struct {
		sp   loader.Spec
		want float64
		ok   bool
	}{
		{loader.Spec{Kind: loader.KindUser, Binary: bin, Offset: 0}, 1000, true},
		{loader.Spec{Kind: loader.KindUser, Binary: bin, Offset: 1}, 13000, true},
		{loader.Spec{Kind: loader.KindSyscall}, 300, true},
		{loader.Spec{Kind: loader.KindKernelFunc}, 0, false},
	} {
		o, ok := overheadFor(cal, c.sp)
		if ok != c.ok || o.MeanNs != c.want {
			t.Errorf("%+v: got %v %v, want %v %v", c.sp, o.MeanNs, ok, c.want, c.ok)
		}
	}
	if _, ok := overheadFor(nil, loader.Spec{Kind: loader.KindSyscall}); ok {
		t.Error("no calibration gave an overhead")
	}
}
