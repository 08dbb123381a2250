// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Setpriv returns the path of setpriv (util-linux), with which tests run a
// child as another user or with chosen capabilities. It skips the test
// unless it runs as root with setpriv installed.
func Setpriv(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user or with chosen capabilities")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("setpriv (util-linux) not installed: %v", err)
	}
	return setpriv
}

// SelfCopy returns a copy of the running test binary, named name, in a
// temporary directory that another user can enter: a child started under
// Setpriv can run it.
func SelfCopy(t testing.TB, name string) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	b, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
