// SPDX-License-Identifier: Apache-2.0

// Package testtarget is the tests' support for the programs they probe: it
// builds the C targets under testdata once per test binary (or hands out
// the prebuilt ones under $TICKPROF_TESTBIN, as the kernel matrix does),
// builds the Go targets, starts a target that waits for a signal before it
// makes its calls, reads the "key value" lines a target writes about its
// own measurements (ReadKV), gives a test what it needs to run a child as
// another user (Setpriv, SelfCopy), reads a target's symbol table
// (Symbols), asks binutils' addr2line what a target's addresses are
// (Addr2line), and profiles a spin of the test itself with runtime/pprof
// (CPUProfile). A missing gcc has one policy: the test is skipped with the
// reason, or fails when TICKPROF_REQUIRE_BPF=1 (CI).
//
// Only tests import testtarget; of third-party modules it imports only x/sys,
// of the repository's only internal/cbuild (checked by internal/layers).
package testtarget

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/cbuild"
)

// EnvTestBin names a directory of prebuilt C test targets (the kernel
// matrix guests have no compiler): testdata/.../NAME.c is $EnvTestBin/NAME,
// built with the flags the tests use.
const EnvTestBin = cbuild.EnvPrebuilt

// GoTool is the go command of the toolchain that built the test binary,
// GOROOT/bin/go, where the kernel matrix's guests find the stand-in that
// hands out prebuilt Go targets (testdata/kernels/run.sh); the go command
// in PATH when there is none there.
func GoTool() string {
	//lint:ignore SA1019 the GOROOT of the build is what is wanted: the kernel matrix puts its stand-in there
	g := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(g); err != nil {
		if p, err := exec.LookPath("go"); err == nil {
			return p
		}
	}
	return g
}

// Testdata is the repository's testdata directory.
func Testdata() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata")
}

// builds holds the C targets built by C, once per test binary, in one
// temporary directory that Main removes.
var builds = cbuild.Cache{Prefix: "tickprof-test-targets", Prebuilt: os.Getenv(EnvTestBin)}

// Main runs the tests, then the cleanups, and removes the C targets built.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	builds.Close()
	os.Exit(code)
}

// NeedGCC skips the test when the C compiler is missing (no $EnvTestBin),
// or fails it under TICKPROF_REQUIRE_BPF=1.
func NeedGCC(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvTestBin) != "" {
		return
	}
	if _, err := cbuild.Find(); err != nil {
		if os.Getenv("TICKPROF_REQUIRE_BPF") == "1" {
			t.Fatalf("the test targets cannot be built: %v", err)
		}
		t.Skipf("the test targets cannot be built: %v", err)
	}
}

// NeedSDT skips the test when <sys/sdt.h>, which the USDT targets include,
// is missing (no $EnvTestBin), or fails it under TICKPROF_REQUIRE_BPF=1.
func NeedSDT(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvTestBin) != "" {
		return
	}
	for _, p := range []string{"/usr/include/x86_64-linux-gnu/sys/sdt.h", "/usr/include/sys/sdt.h"} {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	if os.Getenv("TICKPROF_REQUIRE_BPF") == "1" {
		t.Fatal("<sys/sdt.h> not found: apt-get install systemtap-sdt-dev")
	}
	t.Skip("<sys/sdt.h> not found: apt-get install systemtap-sdt-dev")
}

// C returns testdata/SRC built with gcc -O1 -g and flags as the binary
// out, once per test binary; or, with $EnvTestBin set, the prebuilt
// $EnvTestBin/NAME for SRC = .../NAME.c whatever the flags. Flags that
// name libraries (-lm) go after the source.
func C(t testing.TB, src, out string, flags ...string) string {
	t.Helper()
	NeedGCC(t)
	p := cbuild.Program{Sources: []string{filepath.Join(Testdata(), src)}, Flags: []string{"-O1", "-g"}}
	for _, f := range flags {
		if strings.HasPrefix(f, "-l") {
			p.Libs = append(p.Libs, f)
		} else {
			p.Flags = append(p.Flags, f)
		}
	}
	path, err := builds.Get(out, p)
	if err != nil {
		t.Fatalf("build the C target %s: %v", out, err)
	}
	return path
}

// Timed returns testdata/c/timed.c built PIE (the default here).
func Timed(t testing.TB) string {
	t.Helper()
	return C(t, "c/timed.c", "timed", "-fno-omit-frame-pointer", "-pthread", "-pie")
}

// Inlined returns testdata/c/inlined.c built -O2 -g (its hot function
// inlined into its caller) and -rdynamic (its functions stay named in
// .dynsym when the binary is stripped).
func Inlined(t testing.TB) string {
	t.Helper()
	return C(t, "c/inlined.c", "inlined", "-O2", "-rdynamic")
}

// Burn returns testdata/sample/burn.c built for sampling.
func Burn(t testing.TB) string {
	t.Helper()
	return Sampled(t, "burn", "burn")
}

// Sampled returns testdata/sample/SRC.c built for sampling (frame
// pointers, no inlining) as the executable OUT, once per test binary.
func Sampled(t testing.TB, src, out string) string {
	t.Helper()
	return C(t, "sample/"+src+".c", out, "-fno-omit-frame-pointer", "-fno-inline")
}

// Go builds the main package testdata/go/NAME with extra go build
// arguments and cgo ("CGO_ENABLED=0" or "CGO_ENABLED=1") in its
// environment.
func Go(t testing.TB, name, cgo string, args ...string) string {
	t.Helper()
	src := filepath.Join(Testdata(), "go", name)
	out := filepath.Join(t.TempDir(), name)
	a := append([]string{"build", "-o", out}, args...)
	cmd := exec.Command(GoTool(), append(a, src)...)
	cmd.Env = append(os.Environ(), cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", a, err, b)
	}
	return out
}

// Proc is a started test target that printed its ready line and, when
// gated, waits for SIGUSR1 before making its calls.
type Proc struct {
	Cmd   *exec.Cmd
	lines chan []string // every line after the ready line, at end of output
}

// ReadyPrefix accepts a ready line that starts with "ready".
func ReadyPrefix(line string) bool { return strings.HasPrefix(line, "ready") }

// Start starts cmd, kills it when the test ends, runs setup (when not nil)
// with its pid and waits for its first line, which ready must accept.
func Start(t testing.TB, cmd *exec.Cmd, ready func(string) bool, setup func(pid int)) *Proc {
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
	p := &Proc{Cmd: cmd, lines: make(chan []string, 1)}
	go func() {
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		p.lines <- lines
	}()
	return p
}

// Pid is the target's process ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Release lets a gated target make its calls.
func (p *Proc) Release(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

// Wait waits up to limit for the end of the target's output, calling poll
// (when not nil) every interval meanwhile, then for its exit. It returns
// the lines after the ready line and the exit error.
func (p *Proc) Wait(t testing.TB, limit, every time.Duration, poll func()) ([]string, error) {
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
			return lines, p.Cmd.Wait()
		case <-tick:
			poll()
		case <-deadline:
			t.Fatalf("%s did not finish in %v", strings.Join(p.Cmd.Args, " "), limit)
		}
	}
}

// LastLine returns the last of lines, "" when there is none.
func LastLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// StartGated starts bin -g ARGS (testdata/c/timed's gate: it waits for
// SIGUSR1 before calling), SCHED_FIFO so that other load on the machine
// does not preempt it at the probes' trap returns: its own timing and
// tickprof's then differ by the probe bias only, not scheduling delays.
func StartGated(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-g"}, args...)...)
	return Start(t, cmd, ReadyPrefix, func(pid int) { setFIFO(t, pid) })
}

// setFIFO runs pid (and the threads it creates) SCHED_FIFO.
func setFIFO(t testing.TB, pid int) {
	t.Helper()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 10}
	if err := unix.SchedSetAttr(pid, &attr, 0); err != nil {
		t.Logf("SCHED_FIFO for the target: %v (timing comparisons may see scheduling delays)", err)
	}
}
