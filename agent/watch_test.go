// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"errors"
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
