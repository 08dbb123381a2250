// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/pushtest"
)

// timing reports whether process pid is being timed now.
func (a *Agent) timing(pid int) bool {
	a.mu.Lock()
	tm := a.timers
	a.mu.Unlock()
	if tm == nil {
		return false
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	_, ok := tm.byPID[pid]
	return ok
}

// syscallRun is an agent timing getppid, pushing to an in-process /ingest
// receiver.
type syscallRun struct {
	a      *Agent
	ing    *pushtest.Ingest
	ctx    context.Context
	cancel context.CancelFunc
	done   chan error
}

func startSyscallAgent(t *testing.T, cfg Config) *syscallRun {
	t.Helper()
	cfg.Syscalls = []string{"getppid"}
	return startAgent(t, cfg)
}

// startAgent runs an agent with cfg's targets, 1 s windows at 19 Hz,
// pushing to an in-process /ingest receiver and logging to the test (unless
// cfg.Logf is set).
func startAgent(t *testing.T, cfg Config) *syscallRun {
	t.Helper()
	r := &syscallRun{ing: &pushtest.Ingest{}, done: make(chan error, 1)}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, r.ing)
	sink, _ := push.NewIngest("http://"+ln.Addr().String(), push.HTTPOptions{})
	cfg.Sinks, cfg.Frequency, cfg.Window = []push.Sink{sink}, 19, time.Second
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.a = a
	r.ctx, r.cancel = context.WithTimeout(context.Background(), 120*time.Second)
	t.Cleanup(r.cancel)
	go func() { r.done <- a.Run(r.ctx) }()
	return r
}

// until waits for cond, failing the test when the run ends first.
func (r *syscallRun) until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if r.ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop lets three more windows pass (the last calls of exited processes
// are read in the window after the rescan that saw them go), stops the
// agent and returns the getppid calls of the merged time windows by pid.
func (r *syscallRun) stop(t *testing.T) map[string]uint64 {
	t.Helper()
	n := r.a.Stats().Windows + 3
	r.until(t, "three more windows", func() bool { return r.a.Stats().Windows >= n })
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
	byPID := map[string][]*profile.Profile{}
	for _, in := range r.ing.Received() {
		if export.IsTimeProfile(in.Profile) {
			byPID[in.Labels["pid"]] = append(byPID[in.Labels["pid"]], in.Profile)
		}
	}
	calls := map[string]uint64{}
	for pid, ps := range byPID {
		merged, err := profile.Merge(ps)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := export.TimeReport(merged)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range tab.Rows {
			if row.Calls > 0 && !row.HasEstimate {
				t.Errorf("pid %s: %d calls of %s and no interval", pid, row.Calls, row.Target)
			}
			calls[pid] += row.Calls
		}
	}
	return calls
}

func sysloop(t *testing.T, bin string, n int) *testtarget.Proc {
	return testtarget.Start(t, exec.Command(bin, "getppid", strconv.Itoa(n)), testtarget.ReadyPrefix, nil)
}

func finish(t *testing.T, ps ...*testtarget.Proc) {
	t.Helper()
	for _, p := range ps {
		if _, err := p.Wait(t, 60*time.Second, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func checkCalls(t *testing.T, got map[string]uint64, want map[int]uint64) {
	t.Helper()
	for pid, n := range want {
		if got[strconv.Itoa(pid)] != n {
			t.Errorf("process %d: %d getppid calls in the merged windows, it made %d", pid, got[strconv.Itoa(pid)], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("time windows of %d processes (%v), want %d", len(got), got, len(want))
	}
}

// TestAgentTimesSyscallsPerProcess times getppid in two watched processes
// (-p twice) while an unwatched one makes more: each process's merged time
// windows hold exactly the calls it made (sysloop makes an exact number),
// none of the other's nor the unwatched one's.
func TestAgentTimesSyscallsPerProcess(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "kernels/targets/sysloop.c", "tpsysloop")
	other := testtarget.C(t, "kernels/targets/sysloop.c", "tpsysother")
	p1, p2, noise := sysloop(t, bin, 3000), sysloop(t, bin, 5000), sysloop(t, other, 7000)
	r := startSyscallAgent(t, Config{PIDs: []int{p1.Pid(), p2.Pid()}})
	r.until(t, "both processes timed", func() bool { return r.a.timing(p1.Pid()) && r.a.timing(p2.Pid()) })
	for _, p := range []*testtarget.Proc{p1, p2, noise} {
		p.Release(t)
	}
	finish(t, p1, p2, noise)
	checkCalls(t, r.stop(t), map[int]uint64{p1.Pid(): 3000, p2.Pid(): 5000})
}

// TestAgentTimesSyscallsExe watches an executable by name before any
// process runs it: the first process is timed once it starts, and a second
// one started after the first exited is picked up too; an unwatched
// executable's calls are not counted.
func TestAgentTimesSyscallsExe(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "kernels/targets/sysloop.c", "tpsysexe")
	other := testtarget.C(t, "kernels/targets/sysloop.c", "tpsysother")
	r := startSyscallAgent(t, Config{Exes: []string{"tpsysexe"}})
	p1, noise := sysloop(t, bin, 3000), sysloop(t, other, 7000)
	r.until(t, "the first process timed", func() bool { return r.a.timing(p1.Pid()) })
	p1.Release(t)
	noise.Release(t)
	finish(t, p1, noise)
	p2 := sysloop(t, bin, 5000)
	r.until(t, "the second process timed", func() bool { return r.a.timing(p2.Pid()) })
	p2.Release(t)
	finish(t, p2)
	r.until(t, "the exited processes' timers closed", func() bool { return !r.a.timing(p1.Pid()) && !r.a.timing(p2.Pid()) })
	checkCalls(t, r.stop(t), map[int]uint64{p1.Pid(): 3000, p2.Pid(): 5000})
}

// TestAgentCarriesLongCall times libc's syscall(2) wrapper with the ns
// clock while the target makes one 3.1 s nanosleep through it: that call's
// square (9.6e18 ns^2) passes a profile's int64 values, so its window
// carries the sum of squares in power-of-two units; the merged windows must
// hold the call, with its 3.1 s, and an interval, and nothing is dropped.
func TestAgentCarriesLongCall(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "kernels/targets/sysloop.c", "tpsyslong")
	p := testtarget.Start(t, exec.Command(bin, "nanosleep", "1", "3100000"), testtarget.ReadyPrefix, nil)
	var logged []string
	var mu sync.Mutex
	r := startAgent(t, Config{PIDs: []int{p.Pid()}, Users: []string{"libc:syscall"},
		Logf: func(format string, args ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			mu.Unlock()
		}})
	r.until(t, "the process timed", func() bool { return r.a.timing(p.Pid()) })
	p.Release(t)
	finish(t, p)
	calls := r.stop(t) // fails on a row with calls and no interval
	if calls[strconv.Itoa(p.Pid())] < 1 {
		t.Fatalf("merged windows hold %v calls: want the 3.1 s nanosleep", calls)
	}
	var wall float64
	for _, in := range r.ing.Received() {
		if export.IsTimeProfile(in.Profile) && in.Labels["pid"] == strconv.Itoa(p.Pid()) {
			tab, err := export.TimeReport(in.Profile)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range tab.Rows {
				wall += row.Wall
			}
		}
	}
	if wall < 3.1e9 {
		t.Errorf("the windows' calls last %.3f s in all: want the 3.1 s call", wall/1e9)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, "dropped") {
			t.Errorf("logged: %s", l)
		}
	}
}
