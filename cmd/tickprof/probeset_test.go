// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// The probe-set tests run tickprof as its own process (a SIGKILL must not
// take the test with it) on a 3,000-function glob over libc, and check the
// bounds docs/usage.md promises: attach and detach within seconds, a signal
// honoured within 2 s while attaching and while detaching, the results
// written before detaching, nothing left in the target after a SIGKILL.
// The bounds are generous hang bounds (a loaded 2-CPU machine took 0.7 s
// to attach and 0.3 s to detach 4,400 probes), not timing assertions.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// tickprofBinary builds this command once per test binary.
func tickprofBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tickprof-bin")
		if err != nil {
			binErr = err
			return
		}
		goTool := testtarget.GoTool()
		binPath = filepath.Join(dir, "tickprof")
		if out, err := exec.Command(goTool, "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// probesetTarget is testdata/c/probeset.c built -O2.
func probesetTarget(t *testing.T) string {
	t.Helper()
	return testtarget.C(t, "c/probeset.c", "probeset", "-O2")
}

// startTimedForever starts the C target calling getpid (through libc)
// forever, and returns it with libc mapped.
func startTimedForever(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command(timedTarget(t), "getpid", "0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	for i := 0; i < 200; i++ {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", c.Process.Pid)); bytes.Contains(b, []byte("libc.so")) {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the target never mapped libc")
	return nil
}

// probesLeft returns the uprobes in target's libc beyond those in a
// process tickprof never probed (the machine may run other tracers with
// system-wide uprobes on libc), after giving the kernel up to 3 s.
func probesLeft(t *testing.T, target *exec.Cmd) int {
	t.Helper()
	control := startTimedForever(t)
	left := 0
	for i := 0; i < 30; i++ {
		left = libcBreakpoints(t, target.Process.Pid) - libcBreakpoints(t, control.Process.Pid)
		if left <= 0 {
			return 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// libcBreakpoints counts the uprobes in the executable mappings of libc
// in process pid: a uprobe shows as an int3 (0xcc) where the file has
// another byte.
func libcBreakpoints(t *testing.T, pid int) (probes int) {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	checked := 0
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(f[5], "libc.so") || !strings.Contains(f[1], "x") {
			continue
		}
		var lo, hi, off uint64
		fmt.Sscanf(f[0], "%x-%x", &lo, &hi)
		off, _ = strconv.ParseUint(f[2], 16, 64)
		file, err := os.ReadFile(filepath.Join(fmt.Sprintf("/proc/%d/root", pid), f[5]))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, hi-lo)
		if _, err := mem.ReadAt(buf, int64(lo)); err != nil {
			t.Fatalf("read the target's libc text: %v", err)
		}
		for i, b := range buf {
			if int(off)+i < len(file) && b == 0xcc && file[int(off)+i] != 0xcc {
				probes++
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no executable libc mapping in the target")
	}
	return probes
}

// outputsComplete reports whether the pprof output (written after the
// table and the JSON, before detaching) is complete.
func outputsComplete(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return false
	}
	_, err = profile.ParseData(b)
	return err == nil
}

// largeGlobRun starts tickprof on every function of libc in a running
// target, waits until its outputs are written and sends sig; it returns
// the time from sig to the process's end, the target and the outputs.
func largeGlobRun(t *testing.T, sig syscall.Signal) (after time.Duration, target *exec.Cmd, js, prof string, stderr *bytes.Buffer) {
	t.Helper()
	target = startTimedForever(t)
	dir := t.TempDir()
	js, prof = filepath.Join(dir, "run.json"), filepath.Join(dir, "run.pb.gz")
	tp := exec.Command(tickprofBinary(t), "time", "-p", strconv.Itoa(target.Process.Pid), "-u", "libc:*",
		"--max-probes", "3000", "--duration", "2s", "--json", js, "-o", prof)
	tp.Env = append(os.Environ(), "XDG_CACHE_HOME="+dir)
	stderr = &bytes.Buffer{}
	tp.Stderr = stderr
	start := time.Now()
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tp.Wait() }()
	for !outputsComplete(prof) {
		select {
		case err := <-done:
			t.Fatalf("tickprof ended before its outputs were complete: %v\n%s", err, stderr)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(start) > 2*time.Second+10*time.Second {
			tp.Process.Kill()
			t.Fatalf("no outputs %v after start: attaching a 3,000-function glob took more than 10 s\n%s", time.Since(start), stderr)
		}
	}
	sent := time.Now()
	tp.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tp.Process.Kill()
		t.Fatalf("tickprof still running 30 s after %v\n%s", sig, stderr)
	}
	t.Logf("outputs after %v, ended %v after %v", sent.Sub(start), time.Since(sent), sig)
	return time.Since(sent), target, js, prof, stderr
}

func TestLargeGlobSIGKILLDuringDetach(t *testing.T) {
	bpftest.Require(t)
	after, target, js, prof, stderr := largeGlobRun(t, syscall.SIGKILL)
	if after > 2*time.Second {
		t.Errorf("tickprof took %v to end after SIGKILL (a zombie while the kernel detaches)", after)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	run, err := export.ReadTimeJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the JSON output is incomplete: %v", err)
	}
	if len(run.Targets) < 1000 {
		t.Errorf("%d targets in the JSON, want the whole glob", len(run.Targets))
	}
	// The measured window, not the time spent attaching or detaching.
	if d := run.Duration.Seconds(); d < 1.9 || d > 3 {
		t.Errorf("duration %.2fs for a 2s run", d)
	}
	var getpid uint64
	for _, tg := range run.Targets {
		if strings.HasSuffix(tg.Name, ":getpid") || strings.HasSuffix(tg.Name, ":__getpid") {
			getpid += tg.Calls
		}
	}
	if getpid == 0 {
		t.Errorf("no getpid calls timed\n%s", stderr)
	}
	if !outputsComplete(prof) {
		t.Error("the pprof output is incomplete")
	}
	if n := probesLeft(t, target); n > 0 {
		t.Errorf("%d breakpoints left in the target's libc after SIGKILL", n)
	}
}

func TestLargeGlobSIGINTDuringDetach(t *testing.T) {
	bpftest.Require(t)
	after, target, _, _, stderr := largeGlobRun(t, syscall.SIGINT)
	if after > 2*time.Second {
		t.Errorf("tickprof took %v to end after SIGINT while detaching\n%s", after, stderr)
	}
	if !strings.Contains(stderr.String(), "interrupted while detaching") {
		t.Logf("the signal came after detaching:\n%s", stderr)
	}
	if n := probesLeft(t, target); n > 0 {
		t.Errorf("%d breakpoints left in the target's libc", n)
	}
}

// hasChild reports whether process pid has started a child.
func hasChild(pid int) bool {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name())); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return true
		}
	}
	return false
}

func TestLargeGlobSIGINTDuringAttach(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	js := filepath.Join(dir, "run.json")
	tp := exec.Command(tickprofBinary(t), "time", "-u", "libc:*", "--max-probes", "3000", "--json", js,
		"--", timedTarget(t), "getpid", "0")
	tp.Env = append(os.Environ(), "XDG_CACHE_HOME="+dir)
	var stderr bytes.Buffer
	tp.Stderr = &stderr
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tp.Wait() }()
	// The command is started (held) before the functions are resolved,
	// the probe sites screened and the probes attached.
	start := time.Now()
	for !hasChild(tp.Process.Pid) {
		select {
		case err := <-done:
			t.Fatalf("tickprof ended before starting the command: %v\n%s", err, stderr.String())
		case <-time.After(time.Millisecond):
		}
		if time.Since(start) > 20*time.Second {
			tp.Process.Kill()
			t.Fatal("no command started after 20 s")
		}
	}
	sent := time.Now()
	tp.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tp.Process.Kill()
		t.Fatalf("tickprof still running 30 s after SIGINT\n%s", stderr.String())
	}
	after := time.Since(sent)
	t.Logf("ended %v after SIGINT; stderr:\n%s", after, stderr.String())
	if after > 2*time.Second {
		t.Errorf("tickprof took %v to end after SIGINT while attaching", after)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("no word of the interruption:\n%s", stderr.String())
	}
}

// timeInProcess runs `tickprof time ARGS` in this process and returns its
// stdout, stderr and error.
func timeInProcess(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return timeInProcessReady(t, nil, args...)
}

// timeInProcessReady is timeInProcess calling ready (when not nil) once
// timing has started.
func timeInProcessReady(t *testing.T, ready func(), args ...string) (string, string, error) {
	t.Helper()
	cmd := newTimeCmd()
	var out bytes.Buffer
	errOut := newNoticeWriter()
	cmd.SetOut(&out)
	cmd.SetErr(errOut)
	cmd.SetArgs(args)
	cmd.SetContext(context.Background())
	if ready != nil {
		go func() {
			select {
			case <-errOut.ready:
				ready()
			case <-time.After(60 * time.Second):
			}
		}()
	}
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

// startProbeset starts probeset -g ARGS and waits until it is ready.
func startProbeset(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(probesetTarget(t), append([]string{"-g"}, args...)...)
	return testtarget.Start(t, c, testtarget.ReadyPrefix, nil).Cmd
}

// An unprobeable function (a LOCK prefix first) is refused when named and
// skipped with a warning from a glob, alike under -p and -- CMD.
func TestUnprobeableFunctionPIDAndCommand(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	bin := probesetTarget(t)
	for _, mode := range []string{"cmd", "pid"} {
		var release func()
		args := func(target string, extra ...string) []string {
			a := append([]string{"-u", target}, extra...)
			if mode == "cmd" {
				return append(a, "--", bin, "loop", "20000")
			}
			c := startProbeset(t, "loop", "20000")
			release = func() { c.Process.Signal(syscall.SIGUSR1) }
			return append(a, "-p", strconv.Itoa(c.Process.Pid))
		}
		_, stderr, err := timeInProcess(t, args("tp_locked")...)
		if err == nil || !strings.Contains(err.Error(), "tp_locked") || !strings.Contains(err.Error(), "LOCK") {
			t.Errorf("%s: named unprobeable function: err %v\n%s", mode, err, stderr)
		}
		js := filepath.Join(dir, mode+".json")
		a := args("tp_*", "--json", js)
		_, stderr, err = timeInProcessReady(t, release, a...)
		if err != nil {
			t.Fatalf("%s: glob: %v\n%s", mode, err, stderr)
		}
		if !strings.Contains(stderr, "skipped") || !strings.Contains(stderr, "tp_locked") {
			t.Errorf("%s: no warning naming tp_locked:\n%s", mode, stderr)
		}
		for _, tg := range readRun(t, js).Targets {
			if tg.Target == "tp_locked" {
				t.Errorf("%s: tp_locked reported: %+v", mode, tg)
			}
			if tg.Target == "tp_plain" && tg.Calls != 20000 {
				t.Errorf("%s: tp_plain: %d calls, want 20000", mode, tg.Calls)
			}
		}
	}
}

// A function that forks returns twice, once in the child: only the
// target's returns count, and none is an orphan.
func TestForkingFunctionNoOrphans(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	js := filepath.Join(dir, "run.json")
	_, stderr, err := timeInProcess(t, "-u", "tp_forks", "--json", js, "--", probesetTarget(t), "fork", "200")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	tg := readRun(t, js).Targets[0]
	if tg.Calls != 200 || tg.Orphans != 0 {
		t.Errorf("tp_forks: %d calls, %d orphans; want 200 and 0", tg.Calls, tg.Orphans)
	}
}

// Recursion deeper than loader.MaxDepth leaves the outer calls untimed:
// the table, the JSON and the profile say what the mean stands for; a
// shallow recursion gets no note.
func TestDeepRecursionNote(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	for _, tc := range []struct {
		depth string
		note  bool
	}{{"200", true}, {strconv.Itoa(loader.MaxDepth), false}} {
		js, prof := filepath.Join(dir, tc.depth+".json"), filepath.Join(dir, tc.depth+".pb.gz")
		out, stderr, err := timeInProcess(t, "-u", "tp_recurse", "--json", js, "-o", prof, "--", timedTarget(t), "-r", tc.depth, "recurse", "50")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		run, err := export.ReadTimeJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		notes := run.Targets[0].Notes
		hasNote := len(notes) > 0 && strings.Contains(notes[0], "recursion deeper than")
		if hasNote != tc.note {
			t.Errorf("depth %s: notes %q, want a recursion note: %v", tc.depth, notes, tc.note)
		}
		if strings.Contains(out, "calls were not timed") != tc.note {
			t.Errorf("depth %s: table:\n%s", tc.depth, out)
		}
		pb, err := os.ReadFile(prof)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(pb)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range p.Comments {
			found = found || strings.HasPrefix(c, "note: tp_recurse:")
		}
		if found != tc.note {
			t.Errorf("depth %s: profile comments %q", tc.depth, p.Comments)
		}
	}
}
