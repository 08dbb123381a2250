// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tickprof/tickprof/push"
)

// TestPyroscopeOutage runs the agent with a spool against the real
// Pyroscope server through the outages a server really has, one after the
// other: a graceful shutdown (SIGTERM: for about 30 s it answers /ingest
// with HTTP 422, code = Unavailable, then refuses connections), a restart
// on the same data (refusing, then answering 422 again while it starts,
// before it is ready), and a SIGKILL followed by a restart on an empty
// data directory. Every window the agent made (its directory sink holds
// them all) is read back by its own time range: each is stored exactly
// once, on the data of the server that acknowledged it, and the agent
// counts nothing lost.
func TestPyroscopeOutage(t *testing.T) {
	srv := needPyroscope(t)
	const service = "tpoutage"
	target := startBurn(t, buildBurn(t, service), 600)
	pid := target.Process.Pid
	dir := t.TempDir()
	ingest, err := push.NewIngest(srv.URL, push.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gate := &gateSink{Sink: ingest}
	dsink, err := push.NewDir(filepath.Join(dir, "windows"), push.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dsink.Close()
	logs := &logLines{t: t}
	a, err := New(Config{
		PIDs: []int{pid}, Frequency: 49, Window: 2 * time.Second,
		Sinks: []push.Sink{gate, dsink},
		Push:  push.Config{SpoolDir: filepath.Join(dir, "spool"), QueueLen: 2, Backoff: push.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second}, Timeout: 5 * time.Second},
		Logf:  logs.logf, FlushTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- a.Run(ctx) }()
	sink := ingest.Name()
	pushed := func() uint64 { return a.Stats().Push[sink].Pushed }
	if !waitFor(60*time.Second, func() bool { return pushed() >= 1 }) {
		t.Fatalf("no window pushed in 60 s: %+v", a.Stats())
	}

	// Graceful shutdown, then a restart on the same data.
	srv.Signal(syscall.SIGTERM)
	if !srv.Wait(150 * time.Second) {
		t.Fatal("the server did not stop within 150 s of SIGTERM")
	}
	t.Logf("server stopped; agent %+v", a.Stats().Push[sink])
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(60*time.Second, func() bool { return quiet(a, sink) }) {
		t.Fatalf("the backlog was not delivered within 60 s of the restart: %+v", a.Stats().Push[sink])
	}
	if n := logs.count("422"); n == 0 {
		t.Errorf("no push was answered 422 (the shutdown's and start's answer): the case was not exercised")
	}

	// Hold the pushes, read back what this data directory holds, then
	// SIGKILL the server and restart it on an empty directory.
	gate.mu.Lock()
	before, _ := gate.split(cpuWindows(t, filepath.Join(dir, "windows")))
	checkOnce(t, "before SIGKILL", before, storedTimes(t, srv.URL, pidSelector(service, pid), before, 30*time.Second))
	srv.Kill()
	gate.mu.Unlock()
	empty, err := pyro.NewDir()
	if err != nil {
		t.Fatal(err)
	}
	srv.Data = empty
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	n := pushed()
	if !waitFor(60*time.Second, func() bool { return quiet(a, sink) && pushed() >= n+1 }) {
		t.Fatalf("the backlog was not delivered within 60 s of the restart: %+v", a.Stats().Push[sink])
	}
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	st := a.Stats()
	t.Logf("agent stats %+v", st)
	if st.Lost() != 0 || st.Push[sink].Rejected != 0 {
		t.Errorf("the agent lost %d windows (refused %d)", st.Lost(), st.Push[sink].Rejected)
	}
	all := cpuWindows(t, filepath.Join(dir, "windows"))
	gate.mu.Lock()
	gate.delivered = map[int64]bool{}
	for _, w := range before {
		gate.delivered[w.start.UnixNano()] = true
	}
	_, after := gate.split(all)
	gate.mu.Unlock()
	if len(after) < 1 {
		t.Fatalf("%d windows after the SIGKILL", len(after))
	}
	sel := pidSelector(service, pid)
	checkOnce(t, "after the restart on empty data", after, storedTimes(t, srv.URL, sel, after, 30*time.Second))
	// The windows stored before the SIGKILL were not sent again.
	again := storedTimes(t, srv.URL, sel, before, 0)
	for i, w := range before {
		if again[i] != 0 {
			t.Errorf("window %s stored before the SIGKILL was sent again: %d times on the new data", w.name, again[i])
		}
	}
	t.Logf("%d windows: %d stored before the SIGKILL, %d after, each once; %d pushes failed and were retried",
		len(all), len(before), len(after), st.Push[sink].Failed)
}
