// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tickprof/tickprof/timing"
)

func TestOverheadKind(t *testing.T) {
	dir := t.TempDir()
	// A file whose bytes at offset 0 are push %rbp and at 1 xor %eax,%eax.
	bin := filepath.Join(dir, "code")
	if err := os.WriteFile(bin, []byte{0x55, 0x31, 0xc0, 0xc3}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tg   timing.Target
		want string
	}{
		{timing.Target{Kind: timing.KindUser, Binary: bin, Offset: 0}, "user"},
		{timing.Target{Kind: timing.KindUser, Binary: bin, Offset: 1}, "user-stepped"},
		{timing.Target{Kind: timing.KindGo}, "go"},
		// Not corrected: the calibration's kernel paths include real work.
		{timing.Target{Kind: timing.KindSyscall}, ""},
		{timing.Target{Kind: timing.KindKernel}, ""},
	} {
		got, err := (Corrector{}).OverheadKind(c.tg)
		if err != nil || got != c.want {
			t.Errorf("%+v: got %q, %v; want %q", c.tg, got, err, c.want)
		}
	}
}
