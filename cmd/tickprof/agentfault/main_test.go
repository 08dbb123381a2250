// SPDX-License-Identifier: Apache-2.0

// Package agentfault runs `tickprof agent` on bad input and under faults:
// every flag's edge values, credential files of every kind, labels Pyroscope
// would refuse, spool directories another user controls (refusals, in
// refuse_test.go), and real runs against endpoints that are down, slow or
// silent, a spool on a full disk or holding corrupt files, idle and abusive
// /metrics clients, forking targets, and signals at random moments while
// windows are pushed and flushed (faults_test.go). Each case asserts a
// clean refusal, or that no window is lost without being counted (and the
// exit status saying so), and that the agent exits in bounded time.
//
// The runs need root and BPF (they skip without, and fail when
// TICKPROF_REQUIRE_BPF=1). TICKPROF_AGENT_BIN names a tickprof binary to
// test instead of building this tree's (to check a case fails on an older
// build). `go test -short` keeps one run of each fault and the refusals.
package agentfault

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/testtarget"
)

var (
	bin  string // the tickprof binary
	fix  string // fixtures: credential files, directories
	work string // scratch
	// zombiePID is a child of this process that exited and is not reaped.
	zombiePID string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "tickprof-agentfault-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	bin = os.Getenv("TICKPROF_AGENT_BIN")
	if bin == "" {
		if bin, err = testtarget.BuildTickprof(tmp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fix, work = filepath.Join(tmp, "fixtures"), filepath.Join(tmp, "work")
	if err := writeFixtures(); err != nil {
		fmt.Fprintln(os.Stderr, "fixtures:", err)
		return 1
	}
	z := exec.Command("true")
	if err := z.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	zombiePID = strconv.Itoa(z.Process.Pid)
	for i := 0; i < 100 && procState(z.Process.Pid) != "Z"; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	code := m.Run()
	z.Wait()
	return code
}

// procState is the state letter of a process ("" when gone).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return string(b[i+2])
	}
	return ""
}

func fx(name string) string { return filepath.Join(fix, name) }

// agentRun is one agent process, its stderr collected as it comes.
type agentRun struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	stderr  bytes.Buffer
	changed chan struct{}
	done    chan struct{}
	code    int
	ended   time.Time
}

// startAgent starts `tickprof agent ARGS` with env added to this
// process's; it is killed when the test ends.
func startAgent(t *testing.T, env []string, args ...string) *agentRun {
	t.Helper()
	return startEnv(t, env, bin, append([]string{"agent"}, args...)...)
}

// startCmd starts any command the same way.
func startCmd(t *testing.T, name string, args ...string) *agentRun {
	t.Helper()
	return startEnv(t, nil, name, args...)
}

func startEnv(t *testing.T, env []string, name string, args ...string) *agentRun {
	t.Helper()
	r := &agentRun{cmd: exec.Command(name, args...), changed: make(chan struct{}, 1), done: make(chan struct{})}
	r.cmd.Dir = work
	r.cmd.Env = append(os.Environ(), env...)
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go r.collect(pipe)
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// collect reads the command's stderr until it ends, then waits for it.
func (r *agentRun) collect(pipe io.Reader) {
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		r.mu.Lock()
		r.stderr.Write(sc.Bytes())
		r.stderr.WriteByte('\n')
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	io.Copy(io.Discard, pipe)
	err := r.cmd.Wait()
	r.ended = time.Now()
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
	}
	close(r.done)
}

// log returns what the agent wrote on stderr so far.
func (r *agentRun) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// waitLog waits until stderr matches re, failing after d (or if the agent
// exits first).
func (r *agentRun) waitLog(t *testing.T, re string, d time.Duration) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(d)
	for {
		if m := rx.FindStringSubmatch(r.log()); m != nil {
			return m
		}
		select {
		case <-r.changed:
		case <-r.done:
			if m := rx.FindStringSubmatch(r.log()); m != nil {
				return m
			}
			t.Fatalf("agent exited (status %d) before logging %q:\n%s", r.code, re, r.log())
		case <-deadline:
			t.Fatalf("agent did not log %q within %v:\n%s", re, d, r.log())
		}
	}
}

// signal sends sig to the agent.
func (r *agentRun) signal(sig syscall.Signal) time.Time {
	r.cmd.Process.Signal(sig)
	return time.Now()
}

// wait waits for the agent to exit and returns its status; an agent still
// running after d is a hang: it is killed and the test fails.
func (r *agentRun) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(d):
		r.cmd.Process.Kill()
		<-r.done
		t.Fatalf("agent still running %v after it was told to stop (hang); it said:\n%s", d, r.log())
		return -1
	}
}

// stopAndWait sends SIGTERM and waits at most d for the exit.
func (r *agentRun) stopAndWait(t *testing.T, d time.Duration) int {
	t.Helper()
	r.signal(syscall.SIGTERM)
	return r.wait(t, d)
}

// sinkSummary is an agent's final line about one destination.
type sinkSummary struct {
	pushed, failed, rejected, spooled, dropped, unconfirmed, left int
}

// The unconfirmed count is optional, so that the suite reads an older
// agent's summary too (TICKPROF_AGENT_BIN).
var sinkLine = regexp.MustCompile(`(\S+): (\d+) pushed, (\d+) failed attempts, (\d+) rejected, (\d+) spooled, (\d+) dropped, (?:(\d+) unconfirmed, )?(\d+) left in the spool`)
var stoppedLine = regexp.MustCompile(`stopped: (\d+) windows, (\d+) process windows`)

// summary parses the agent's final lines: process windows made and each
// destination's counts.
func (r *agentRun) summary(t *testing.T) (procWindows int, sinks map[string]sinkSummary) {
	t.Helper()
	log := r.log()
	m := stoppedLine.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no summary in the agent's output:\n%s", log)
	}
	procWindows, _ = strconv.Atoi(m[2])
	sinks = map[string]sinkSummary{}
	for _, m := range sinkLine.FindAllStringSubmatch(log, -1) {
		n := make([]int, 7)
		for i := range n {
			n[i], _ = strconv.Atoi(m[i+2])
		}
		sinks[m[1]] = sinkSummary{n[0], n[1], n[2], n[3], n[4], n[5], n[6]}
	}
	if len(sinks) == 0 {
		t.Fatalf("no destination summary in the agent's output:\n%s", log)
	}
	return procWindows, sinks
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// burner starts a busy shell loop under the executable name name (a copy
// of sh) and returns its PID; script replaces the loop when not empty.
func burner(t *testing.T, name, script string) int {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	sh, _ = filepath.EvalSymlinks(sh)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, name)
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if script == "" {
		script = "while :; do :; done"
	}
	cmd := exec.Command(exe, "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

// hasLine reports whether the log has a line containing all of parts.
func hasLine(log string, parts ...string) bool {
	for _, l := range strings.Split(log, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}

var execLookPath = exec.LookPath
