// SPDX-License-Identifier: Apache-2.0

package badinput

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestTimeStopsAtSetuidExec: a user with CAP_BPF and CAP_PERFMON times
// the system calls of its own process, which then execs a set-user-ID
// root program: the timing stops there and says why (it went on recording
// the root program's system calls until --duration).
func TestTimeStopsAtSetuidExec(t *testing.T) {
	bpftest.Require(t)
	setpriv := testtarget.Setpriv(t)
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	b, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skip(err)
	}
	suid := filepath.Join(dir, "suidsleep")
	os.WriteFile(suid, b, 0o755)
	os.Chmod(suid, 0o755|os.ModeSetuid)
	target := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
		"i=0; while [ $i -lt 40 ]; do sleep 0.1; i=$((i+1)); done; exec "+suid+" 30")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	caps := "+bpf,+perfmon,+dac_override"
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	t0 := time.Now()
	c := exec.CommandContext(ctx, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps="+caps, "--ambient-caps="+caps, bin, "time", "-s", "all", "-p", strconv.Itoa(target.Process.Pid), "--duration", "20s")
	c.Dir = os.TempDir()
	out, _ := c.CombinedOutput()
	took := time.Since(t0)
	t.Logf("time ran %v:\n%s", took.Round(time.Millisecond), lastLines(string(out), 4))
	if took > 15*time.Second || !strings.Contains(string(out), "access lost") || !strings.Contains(string(out), "timing stopped: process") {
		t.Errorf("time went on after its process exec'd a setuid-root program (%v):\n%s", took.Round(time.Millisecond), out)
	}
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
