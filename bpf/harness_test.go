// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// buildHarness compiles a host C program that includes this directory's
// headers (the BPF programs' arithmetic, run on the host) and returns its
// path. A missing gcc skips the test, or fails it under
// TICKPROF_REQUIRE_BPF=1.
func buildHarness(t *testing.T, src string, flags ...string) string {
	t.Helper()
	testtarget.NeedGCC(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := cbuild.BuildSource(t.TempDir(), "harness", []byte(src), append(append([]string{"-O2"}, flags...), "-I", wd), nil)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runHarness runs the harness bin with stdin and returns its output lines.
func runHarness(t *testing.T, bin, stdin string) []string {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
