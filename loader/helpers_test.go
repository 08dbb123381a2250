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

// EnvTestBin names a directory of prebuilt C test targets (the kernel
// matrix guests have no compiler): testdata/.../NAME.c is $EnvTestBin/NAME,
// built with the flags the tests use.
const EnvTestBin = "TICKPROF_TESTBIN"

// testdataDir is the repository's testdata directory.
func testdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// cBuilds caches the C targets built by cTarget, once per test binary, in
// one temporary directory that TestMain removes.
var cBuilds struct {
	sync.Mutex
	dir  string
	done map[string]cBuild // by output name
}

type cBuild struct {
	path string
	err  error
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// cTarget returns testdata/SRC built with gcc -O1 -g and flags as the
// binary out, once per test binary; or, with $TICKPROF_TESTBIN set, the
// prebuilt $TICKPROF_TESTBIN/NAME for SRC = .../NAME.c whatever the flags
// (as the matrix's gcc stand-in hands it out).
func cTarget(t testing.TB, src, out string, flags ...string) string {
	t.Helper()
	cBuilds.Lock()
	defer cBuilds.Unlock()
	b, ok := cBuilds.done[out]
	if !ok {
		b = buildC(src, out, flags)
		if cBuilds.done == nil {
			cBuilds.done = map[string]cBuild{}
		}
		cBuilds.done[out] = b
	}
	if b.err != nil {
		t.Fatalf("build the C target %s: %v", out, b.err)
	}
	return b.path
}

// buildC builds one C target (cBuilds held).
func buildC(src, out string, flags []string) cBuild {
	if dir := os.Getenv(EnvTestBin); dir != "" {
		p := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		_, err := os.Stat(p)
		return cBuild{p, err}
	}
	if cBuilds.dir == "" {
		dir, err := os.MkdirTemp("", "tickprof-loader-test")
		if err != nil {
			return cBuild{err: err}
		}
		cBuilds.dir = dir
	}
	p := filepath.Join(cBuilds.dir, out)
	args := append(append([]string{"-O1", "-g"}, flags...), "-o", p, filepath.Join(testdataDir(), src))
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return cBuild{err: &buildError{err, string(b)}}
	}
	return cBuild{path: p}
}

// timedBinary returns testdata/c/timed.c built PIE (the default here).
func timedBinary(t testing.TB) string {
	t.Helper()
	return cTarget(t, "c/timed.c", "timed", "-fno-omit-frame-pointer", "-pthread", "-pie")
}

// timedBinaryNoPIE returns testdata/c/timed.c built as a non-PIE binary.
func timedBinaryNoPIE(t testing.TB) string {
	t.Helper()
	return cTarget(t, "c/timed.c", "timed-nopie", "-fno-omit-frame-pointer", "-pthread", "-no-pie")
}

// sysloopBinary returns testdata/kernels/targets/sysloop.c built.
func sysloopBinary(t testing.TB) string {
	t.Helper()
	return cTarget(t, "kernels/targets/sysloop.c", "sysloop")
}

// goTarget builds the main package testdata/go/NAME with extra go build
// arguments and cgo ("CGO_ENABLED=0" or "CGO_ENABLED=1") in its
// environment.
func goTarget(t testing.TB, name, cgo string, args ...string) string {
	t.Helper()
	src := filepath.Join(testdataDir(), "go", name)
	out := filepath.Join(t.TempDir(), name)
	a := append([]string{"build", "-o", out}, args...)
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(a, src)...)
	cmd.Env = append(os.Environ(), cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", a, err, b)
	}
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cBuilds.dir != "" {
		os.RemoveAll(cBuilds.dir)
	}
	os.Exit(code)
}

// testProc is a started test target that printed its ready line and
// waits for SIGUSR1 before making its calls.
type testProc struct {
	cmd   *exec.Cmd
	lines chan []string // every line after the ready line, at end of output
}

// readyPrefix accepts a ready line that starts with "ready".
func readyPrefix(line string) bool { return strings.HasPrefix(line, "ready") }

// startProc starts cmd, kills it when the test ends, runs setup (when not
// nil) with its pid and waits for its first line, which ready must accept.
func startProc(t testing.TB, cmd *exec.Cmd, ready func(string) bool, setup func(pid int)) *testProc {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if setup != nil {
		setup(cmd.Process.Pid)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !ready(sc.Text()) {
		t.Fatalf("%s did not get ready: %q", strings.Join(cmd.Args, " "), sc.Text())
	}
	p := &testProc{cmd: cmd, lines: make(chan []string, 1)}
	go func() {
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		p.lines <- lines
	}()
	return p
}

// release lets the target make its calls.
func (p *testProc) release(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

// wait waits up to limit for the end of the target's output, calling poll
// (when not nil) every interval meanwhile, then for its exit. It returns
// the lines after the ready line and the exit error.
func (p *testProc) wait(t testing.TB, limit, every time.Duration, poll func()) ([]string, error) {
	t.Helper()
	var tick <-chan time.Time
	if poll != nil {
		tk := time.NewTicker(every)
		defer tk.Stop()
		tick = tk.C
	}
	deadline := time.After(limit)
	for {
		select {
		case lines := <-p.lines:
			return lines, p.cmd.Wait()
		case <-tick:
			poll()
		case <-deadline:
			t.Fatalf("%s did not finish in %v", strings.Join(p.cmd.Args, " "), limit)
		}
	}
}

// lastLine returns the last of lines, "" when there is none.
func lastLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// gated is testdata/c/timed started with -g: it waits for SIGUSR1 before
// calling.
type gated struct{ *testProc }

func startGated(t *testing.T, args ...string) *gated {
	t.Helper()
	return startGatedBin(t, timedBinary(t), args...)
}

func startGatedBin(t *testing.T, bin string, args ...string) *gated {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-g"}, args...)...)
	return &gated{startProc(t, cmd, readyPrefix, func(pid int) { setFIFO(t, pid) })}
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

// wait returns the target's final line and waits for its exit.
func (g *gated) wait(t *testing.T) string {
	t.Helper()
	lines, _ := g.testProc.wait(t, 60*time.Second, 0, nil)
	return lastLine(lines)
}

// timeSysloop starts testdata/kernels/targets/sysloop with args, opens a
// session on specs filtered to it, lets it run to the end ("done"),
// polling the counters into batches every 25 ms, and returns the final
// poll.
func timeSysloop(t testing.TB, opts Options, specs []Spec, args ...string) (*Session, Poll) {
	t.Helper()
	p := startProc(t, exec.Command(sysloopBinary(t), args...), readyPrefix, nil)
	opts.PID = p.cmd.Process.Pid
	s, err := Open(opts, specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p.release(t)
	lines, err := p.wait(t, 120*time.Second, 25*time.Millisecond, func() {
		if _, err := s.Poll(); err != nil {
			t.Error(err)
		}
	})
	if l := lastLine(lines); err != nil || l != "done" {
		t.Fatalf("sysloop %v: exit %v, last line %q", args, err, l)
	}
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	return s, poll
}
