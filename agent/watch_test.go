// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/push"
)

func TestWatcherMatchesExecutables(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	real, _ := filepath.EvalSymlinks(sleep)
	cmd := exec.Command(sleep, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	has := func(w *watcher) bool {
		procs, err := w.scan()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			if p.pid == pid {
				if p.exe != real {
					t.Errorf("exe %q, want %q", p.exe, real)
				}
				return true
			}
		}
		return false
	}
	for _, spec := range []string{filepath.Base(real), real, sleep} {
		if !has(newWatcher(nil, []string{spec}, time.Second)) {
			t.Errorf("--exe %s does not match process %d running %s", spec, pid, real)
		}
	}
	if has(newWatcher(nil, []string{"no-such-exe"}, time.Second)) {
		t.Error("an unrelated name matched")
	}
	w := newWatcher([]int{pid}, nil, 0)
	if !has(w) {
		t.Error("PID not in the watch set")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if has(w) {
		t.Error("exited process still in the watch set")
	}
	if _, ok := w.recall(pid); ok {
		t.Error("exited process recalled after its keep time")
	}
}

func TestReadBuildID(t *testing.T) {
	self, _ := os.Executable()
	id, err := readBuildID(self)
	if err != nil || id == "" {
		t.Errorf("build ID of the test binary: %q, %v", id, err)
	}
	if _, err := readBuildID("/proc/self/status"); err == nil {
		t.Error("a text file has a build ID")
	}
}

func TestNewChecksConfig(t *testing.T) {
	dir, err := push.NewDir(t.TempDir()+"/d", push.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sinks := []push.Sink{dir}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Sinks: sinks}, "exactly one kind"},
		{Config{PIDs: []int{1}, All: true, Sinks: sinks}, "exactly one kind"},
		{Config{PIDs: []int{-3}, Sinks: sinks}, "not positive"},
		{Config{All: true, Frequency: 1 << 20, Sinks: sinks}, "out of range"},
		{Config{All: true, Window: time.Millisecond, Sinks: sinks}, "shorter than a second"},
		{Config{All: true, Labels: map[string]string{"a-b": "x"}, Sinks: sinks}, "label name"},
		{Config{All: true}, "no destination"},
		{Config{All: true, Service: "a b,c"}, "cannot hold"},
		{Config{All: true, Confidence: 1.5, Sinks: sinks}, "confidence"},
		{Config{All: true, Destinations: Destinations{Pyroscope: "http://h", PyroscopeAPI: "grpc"}}, "ingest or connect"},
		{Config{All: true, Destinations: Destinations{OTLP: "nohost"}}, "HOST:PORT"},
		{Config{All: true, Destinations: Destinations{Dir: "d", Auth: push.Auth{BasicUser: "u"}}}, "password file"},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce) {
			t.Errorf("New(%+v) = %v, want a ConfigError about %q", c.cfg, err, c.want)
		}
	}
	a, err := New(Config{All: true, Sinks: sinks, Service: "svc", Labels: map[string]string{"env": "prod"}, Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	l := a.labels(42, procInfo{exe: "/usr/bin/x", buildID: "ab"}, true)
	want := map[string]string{"service": "svc", "env": "prod", "host": "h", "pid": "42", "executable": "/usr/bin/x", "build_id": "ab"}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	if l["kernel_release"] == "" {
		t.Error("no kernel_release label")
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz before the first window: %v %v", resp.Status, err)
	}
}

// TestWatcherMatchesAsUsersNameProcesses starts a program through a
// symbolic link, as Debian starts redis-server (a link to redis-check-rdb):
// the process's executable is the link's target, while its argv[0] and
// comm are the link's name. Each way a user names it matches, and the
// service name is what the user typed.
func TestWatcherMatchesAsUsersNameProcesses(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	dir := t.TempDir()
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "tp-check-rdb")
	if err := os.WriteFile(real, b, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "tp-server")
	if err := os.Symlink("tp-check-rdb", link); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "tp-a-very-long-daemon-name")
	if err := os.Symlink("tp-check-rdb", long); err != nil {
		t.Fatal(err)
	}
	start := func(path string, argv0 string) int {
		cmd := exec.Command(path, "30")
		cmd.Args[0] = argv0
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	byPath := start(link, link)           // argv[0] the link's path
	byName := start(link, "tp-server")    // argv[0] a bare name, as a shell's PATH lookup gives
	byComm := start(link, "renamed")      // only comm (the link's name) says tp-server
	byLong := start(long, "x")            // comm cut to 15 bytes
	byReal := start(real, "tp-check-rdb") // started as the target
	// matched returns the service label each matching process gets.
	matched := func(spec string) map[int]string {
		a := &Agent{watch: newWatcher(nil, []string{spec}, time.Second)}
		procs, err := a.watch.scan()
		if err != nil {
			t.Fatal(err)
		}
		m := map[int]string{}
		for _, p := range procs {
			m[p.pid] = a.labels(int64(p.pid), p, true)[push.ServiceLabel]
		}
		return m
	}
	for _, c := range []struct {
		spec    string
		want    []int
		service string
	}{
		{"tp-server", []int{byPath, byName, byComm}, "tp-server"},
		// A path names the file: every process running it, the link
		// resolved, with the service name as typed.
		{link, []int{byPath, byName, byComm, byLong, byReal}, "tp-server"},
		{"tp-check-rdb", []int{byPath, byName, byComm, byLong, byReal}, "tp-check-rdb"},
		{real, []int{byPath, byName, byComm, byLong, byReal}, "tp-check-rdb"},
		{"tp-a-very-long-daemon-name", []int{byLong}, "tp-a-very-long-daemon-name"},
	} {
		got := matched(c.spec)
		for _, pid := range c.want {
			if svc, ok := got[pid]; !ok || svc != c.service {
				t.Errorf("--exe %s: process %d matched %v with service %q, want %q", c.spec, pid, ok, svc, c.service)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("--exe %s matched %d processes %v, want %v", c.spec, len(got), got, c.want)
		}
	}
	if n := len(matched("tp-no-such-daemon")); n != 0 {
		t.Errorf("tp-no-such-daemon matched %d processes", n)
	}
}

// TestAgentNothingWatched: an executable no process runs is said at start
// and at every window, counted in /metrics, and /healthz answers 503.
func TestAgentNothingWatched(t *testing.T) {
	dsink, err := push.NewDir(t.TempDir(), push.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dsink.Close()
	logs := &logLines{t: t}
	a, err := New(Config{Exes: []string{"tp-no-such-daemon"}, Window: time.Second, Sinks: []push.Sink{dsink}, Logf: logs.logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	time.Sleep(1500 * time.Millisecond)
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "tp-no-such-daemon") {
		t.Errorf("/healthz answered %d %q, want 503 naming the executable", resp.StatusCode, body)
	}
	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "tickprof_agent_nothing_watched_windows_total") {
		t.Errorf("/metrics lacks tickprof_agent_nothing_watched_windows_total")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// At the start and once a window after: at least 2 in 2.5 s of 1 s
	// windows, at most 3.
	n := logs.count("nothing watched: no process runs tp-no-such-daemon")
	if st := a.Stats(); n < 2 || n > 3 || st.Unwatched != uint64(n) {
		t.Errorf("said %d times that nothing is watched, counted %d; want 2 or 3 in 2.5 s of 1 s windows", n, st.Unwatched)
	}
}
