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

	"golang.org/x/sys/unix"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// timedBinary builds testdata/c/timed.c once per test binary with gcc:
// "timed" (PIE, the default here) and "timed-nopie".
func timedBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "tickprof-loader-test")
		if buildErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "testdata", "c", "timed.c")
		for name, flag := range map[string]string{"timed": "-pie", "timed-nopie": "-no-pie"} {
			out, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", flag,
				"-o", filepath.Join(buildDir, name), src).CombinedOutput()
			if err != nil {
				buildErr = &buildError{err, string(out)}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("build the C target: %v", buildErr)
	}
	return filepath.Join(buildDir, "timed")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// gated is a target started with -g: it waits for SIGUSR1 before calling.
type gated struct {
	cmd  *exec.Cmd
	out  *bufio.Scanner
	done chan string // the final line
}

func startGated(t *testing.T, args ...string) *gated {
	t.Helper()
	return startGatedBin(t, timedBinary(t), args...)
}

func startGatedBin(t *testing.T, bin string, args ...string) *gated {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-g"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gated{cmd: cmd, out: bufio.NewScanner(stdout), done: make(chan string, 1)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	setFIFO(t, cmd.Process.Pid)
	if !g.out.Scan() || !strings.HasPrefix(g.out.Text(), "ready") {
		t.Fatalf("target did not get ready: %q", g.out.Text())
	}
	go func() {
		last := ""
		for g.out.Scan() {
			last = g.out.Text()
		}
		g.done <- last
	}()
	return g
}

// setFIFO runs pid (and the threads it creates) SCHED_FIFO, so that other
// load on the machine does not preempt it at the probes' trap returns: the
// comparison of tickprof's ns mean with the target's own measurement then
// sees the probe bias only, not scheduling delays.
func setFIFO(t *testing.T, pid int) {
	t.Helper()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 10}
	if err := unix.SchedSetAttr(pid, &attr, 0); err != nil {
		t.Logf("SCHED_FIFO for the target: %v (timing comparisons may see scheduling delays)", err)
	}
}

func (g *gated) release(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

// wait returns the target's final line and waits for its exit.
func (g *gated) wait(t *testing.T) string {
	t.Helper()
	select {
	case l := <-g.done:
		g.cmd.Wait()
		return l
	case <-time.After(60 * time.Second):
		t.Fatal("target did not finish in 60s")
	}
	return ""
}
