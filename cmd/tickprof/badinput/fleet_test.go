// SPDX-License-Identifier: Apache-2.0

package badinput

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFleetBuildBeside runs the default build's fleet commands where the
// fleet build it hands them to is missing, or is not to be trusted (tickprof
// runs as root: a file others could have written is not run): each ends at
// once with one line saying so, and nothing is run. Where the fleet build is
// in place, the same command line reaches it (its own refusal is seen).
func TestFleetBuildBeside(t *testing.T) {
	dir := t.TempDir()
	lean := filepath.Join(dir, "tickprof")
	copyFile(t, bin, lean, 0o755)
	args := []string{"agent", "--all"} // the fleet build refuses it: no destination
	out := runLean(t, lean, args...)
	if !strings.Contains(out, "none beside it") || !strings.Contains(out, "tickprof-fleet") {
		t.Errorf("no fleet build: %q", out)
	}
	fleet := filepath.Join(dir, "tickprof-fleet")
	copyFile(t, filepath.Join(filepath.Dir(bin), "tickprof-fleet"), fleet, 0o777)
	if err := os.Chmod(fleet, 0o777); err != nil {
		t.Fatal(err)
	}
	if out := runLean(t, lean, args...); !strings.Contains(out, "writable by group or others") {
		t.Errorf("fleet build writable by others: %q", out)
	}
	os.Chmod(fleet, 0o755)
	if out := runLean(t, lean, args...); !strings.Contains(out, "no destination") {
		t.Errorf("fleet build in place: %q, want the agent's own refusal", out)
	}
	if out := runLean(t, lean, "help", "agent"); !strings.Contains(out, "--pyroscope-api") {
		t.Errorf("help agent: %q, want the agent's flags", out)
	}
}

// runLean runs bin with args and returns its output, failing the test
// unless it exits nonzero within caseTimeout (help exits 0).
func runLean(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after %v", bin, strings.Join(args, " "), caseTimeout)
	}
	if err == nil && args[0] != "help" {
		t.Fatalf("%s %s: succeeded: %s", bin, strings.Join(args, " "), out)
	}
	return string(out)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
