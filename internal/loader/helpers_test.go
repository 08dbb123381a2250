// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os/exec"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestMain(m *testing.M) { testtarget.Main(m) }

// timedBinary returns testdata/c/timed.c built PIE (the default here).
func timedBinary(t testing.TB) string { return testtarget.Timed(t) }

// timedBinaryNoPIE returns testdata/c/timed.c built as a non-PIE binary.
func timedBinaryNoPIE(t testing.TB) string {
	t.Helper()
	return testtarget.C(t, "c/timed.c", "timed-nopie", "-fno-omit-frame-pointer", "-pthread", "-no-pie")
}

// sysloopBinary returns testdata/kernels/targets/sysloop.c built.
func sysloopBinary(t testing.TB) string {
	t.Helper()
	return testtarget.C(t, "kernels/targets/sysloop.c", "sysloop")
}

// finalLine waits for a started target's final line and its exit.
func finalLine(t testing.TB, p *testtarget.Proc) string {
	t.Helper()
	lines, _ := p.Wait(t, 60*time.Second, 0, nil)
	return testtarget.LastLine(lines)
}

// timeSysloop starts testdata/kernels/targets/sysloop with args, opens a
// session on specs filtered to it, lets it run to the end ("done"),
// polling the counters into batches every 25 ms, and returns the final
// poll.
func timeSysloop(t testing.TB, opts Options, specs []Spec, args ...string) (*Session, Poll) {
	t.Helper()
	p := testtarget.Start(t, exec.Command(sysloopBinary(t), args...), testtarget.ReadyPrefix, nil)
	s := openFor(t, opts, p.Pid(), specs)
	p.Release(t)
	lines, err := pollUntilExit(t, p, s)
	if l := testtarget.LastLine(lines); err != nil || l != "done" {
		t.Fatalf("sysloop %v: exit %v, last line %q", args, err, l)
	}
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	return s, poll
}

// openFor opens a session on specs in process pid, closed when the test
// ends.
func openFor(t testing.TB, opts Options, pid int, specs []Spec) *Session {
	t.Helper()
	opts.PID = pid
	s, err := Open(opts, specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pollUntilExit polls s every 25 ms until the released target p exits
// (two minutes at most) and returns its output lines.
func pollUntilExit(t testing.TB, p *testtarget.Proc, s *Session) ([]string, error) {
	t.Helper()
	return p.Wait(t, 120*time.Second, 25*time.Millisecond, func() {
		if _, err := s.Poll(); err != nil {
			t.Error(err)
		}
	})
}
