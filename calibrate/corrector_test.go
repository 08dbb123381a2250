package calibrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tickprof/tickprof/internal/loader"
)

func TestOverheadKind(t *testing.T) {
	dir := t.TempDir()
	// A file whose bytes at offset 0 are push %rbp and at 1 xor %eax,%eax.
	bin := filepath.Join(dir, "code")
	if err := os.WriteFile(bin, []byte{0x55, 0x31, 0xc0, 0xc3}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sp   loader.Spec
		want string
	}{
		{loader.Spec{Kind: loader.KindUser, Binary: bin, Offset: 0}, "user"},
		{loader.Spec{Kind: loader.KindUser, Binary: bin, Offset: 1}, "user-stepped"},
		{loader.Spec{Kind: loader.KindGoUser}, "go"},
		// Not corrected: the calibration's kernel paths include real work.
		{loader.Spec{Kind: loader.KindSyscall}, ""},
		{loader.Spec{Kind: loader.KindKernelFunc}, ""},
	} {
		got, err := (Corrector{}).OverheadKind(c.sp)
		if err != nil || got != c.want {
			t.Errorf("%+v: got %q, %v; want %q", c.sp, got, err, c.want)
		}
	}
}
