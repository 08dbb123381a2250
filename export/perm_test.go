// SPDX-License-Identifier: Apache-2.0

package export

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/timing"
)

// TestOutputsPrivate: the profile and JSON files time and sample write are
// readable by their owner only, whatever the umask, also when they replace
// a file that was readable by all (they were written 0644: another user's
// profile, written by root, was readable by everyone).
func TestOutputsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.pb.gz")
	js := filepath.Join(dir, "t.json")
	os.WriteFile(prof, []byte("old"), 0o644)
	if err := WriteProfileFile(prof, &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteTimeJSONFile(js, &timing.Result{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{prof, js} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s written with mode %#o, want 0600", filepath.Base(p), m)
		}
	}
}
