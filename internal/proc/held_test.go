// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestHeldCommandEndsWithProcess: a command started held (as by `time --
// CMD` and `sample -- CMD`) does not outlive the process that started it,
// even when that process is killed with SIGKILL.
func TestHeldCommandEndsWithProcess(t *testing.T) {
	bpftest.Require(t) // ptrace of a child: the same privileges as the runs
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$")
	parent.Env = append(os.Environ(), "TICKPROF_ACCESS_CHILD=held")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no PID from the child: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the held command %d is not running: %v", pid, err)
	}
	parent.Process.Signal(syscall.SIGKILL)
	parent.Wait()
	// A hang bound, not a timing assertion: the kernel sends the signal as
	// the parent's threads exit.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !running(pid) {
			return
		}
	}
	t.Fatalf("the command %d still runs 5 s after the process that started it was killed", pid)
}

// running says whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
