// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestSyscallCensus: the census counts exactly the system calls of the
// process it watches (sysloop mix: 7 getppid, 3 getpid, 5 close, 2 umask).
func TestSyscallCensus(t *testing.T) {
	bpftest.Require(t)
	p := testtarget.Start(t, exec.Command(sysloopBinary(t), "mix"), testtarget.ReadyPrefix, nil)
	c, err := StartSyscallCensus(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Release(t)
	if _, err := p.Wait(t, 30*time.Second, 0, nil); err != nil {
		t.Fatal(err)
	}
	got, err := c.Counts()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{"getppid": 7, "getpid": 3, "close": 5, "umask": 2} {
		if got[name] != want {
			t.Errorf("%s: %d calls counted, want %d (all: %v)", name, got[name], want, got)
		}
	}
}

func TestNoCallsHint(t *testing.T) {
	h := NoCallsHint("syscall:nanosleep", map[string]uint64{"clock_nanosleep": 250, "write": 3, "read": 9}, time.Second)
	if !strings.Contains(h, "related clock_nanosleep 250") || !strings.Contains(h, "most often read 9, write 3") {
		t.Errorf("hint %q", h)
	}
	h = NoCallsHint("syscall:getppid", map[string]uint64{"read": 9}, time.Second)
	if !strings.Contains(h, "none related to it; most often read 9") {
		t.Errorf("hint %q", h)
	}
	h = NoCallsHint("syscall:getppid", nil, time.Second)
	if !strings.Contains(h, "no system call at all") {
		t.Errorf("hint %q", h)
	}
}
