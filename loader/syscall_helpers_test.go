package loader

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvTestBin names a directory of prebuilt C test targets (the kernel
// matrix guests have no compiler): testdata/.../NAME.c is $EnvTestBin/NAME.
const EnvTestBin = "TICKPROF_TESTBIN"

var (
	sysloopOnce sync.Once
	sysloopPath string
	sysloopErr  error
)

// sysloopBinary returns testdata/kernels/targets/sysloop.c built with gcc,
// or the prebuilt one under $TICKPROF_TESTBIN.
func sysloopBinary(t testing.TB) string {
	t.Helper()
	sysloopOnce.Do(func() {
		if dir := os.Getenv(EnvTestBin); dir != "" {
			sysloopPath = filepath.Join(dir, "sysloop")
			_, sysloopErr = os.Stat(sysloopPath)
			return
		}
		dir, err := os.MkdirTemp("", "tickprof-sysloop")
		if err != nil {
			sysloopErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "testdata", "kernels", "targets", "sysloop.c")
		sysloopPath = filepath.Join(dir, "sysloop")
		if out, err := exec.Command("gcc", "-O1", "-g", "-o", sysloopPath, src).CombinedOutput(); err != nil {
			sysloopErr = &buildError{err, string(out)}
		}
	})
	if sysloopErr != nil {
		t.Fatalf("build the sysloop target: %v", sysloopErr)
	}
	return sysloopPath
}

// sysloop is a started sysloop process waiting for SIGUSR1.
type sysloop struct {
	cmd  *exec.Cmd
	done chan string
}

func startSysloop(t testing.TB, args ...string) *sysloop {
	t.Helper()
	cmd := exec.Command(sysloopBinary(t), args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready") {
		t.Fatalf("sysloop %v did not get ready: %q", args, sc.Text())
	}
	s := &sysloop{cmd: cmd, done: make(chan string, 1)}
	go func() {
		last := ""
		for sc.Scan() {
			last = sc.Text()
		}
		s.done <- last
	}()
	return s
}

// run releases the process and waits for it to finish.
func (s *sysloop) run(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-s.done:
		if err := s.cmd.Wait(); err != nil || l != "done" {
			t.Fatalf("sysloop %v: exit %v, last line %q", s.cmd.Args[1:], err, l)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("sysloop did not finish in 120s")
	}
}

// timeSysloop starts sysloop with args, opens a session on specs filtered
// to it, lets it run to the end and returns the final poll.
func timeSysloop(t testing.TB, opts Options, specs []Spec, args ...string) (*Session, Poll) {
	t.Helper()
	p := startSysloop(t, args...)
	opts.PID = p.cmd.Process.Pid
	s, err := Open(opts, specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p.run(t)
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	return s, poll
}
