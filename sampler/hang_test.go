// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/sampler"
)

// TestHighRateStops samples a busy process at the highest rate accepted,
// where the reader cannot keep up with the ring buffer: a run with a
// duration of 1 s, and one stopped by its context after 1 s, must both end
// within 3 s (the drain loop used to return only once the ring was empty,
// so it never looked at the clock or the context again).
func TestHighRateStops(t *testing.T) {
	bpftest.Require(t)
	burn := buildC(t, "burn")
	for _, byCtx := range []bool{false, true} {
		cfg := sampler.Config{Frequency: sampler.MaxFrequency, Command: []string{burn, "30", "/dev/null"}}
		ctx, cancel := context.WithCancel(context.Background())
		if byCtx {
			time.AfterFunc(time.Second, cancel)
		} else {
			cfg.Duration = time.Second
		}
		t0 := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := record(ctx, cfg)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stopped by context %v: %v", byCtx, err)
			}
			t.Logf("stopped by context %v after %v", byCtx, time.Since(t0).Round(time.Millisecond))
		case <-time.After(10 * time.Second):
			t.Fatalf("-F %d, stopped by context %v: still sampling after 10 s", sampler.MaxFrequency, byCtx)
		}
		if d := time.Since(t0); d > 6*time.Second {
			t.Errorf("-F %d for 1 s (stopped by context %v) took %v", sampler.MaxFrequency, byCtx, d)
		}
		cancel()
	}
}

// record opens a session of cfg and runs it.
func record(ctx context.Context, cfg sampler.Config) (*sampler.Result, error) {
	s, err := sampler.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(ctx)
}

// silentServer accepts connections and never answers (nor closes them).
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// TestDebuginfodSilent samples yes(1), a stripped executable on stripped
// libraries, whose functions are named from debug files looked up by build
// ID, with DEBUGINFOD_URLS naming a server that accepts connections and
// never answers: a 1 s run must end within 6 s (it took 30 s per build
// ID), and a run whose caller stops it while the downloads wait must end
// within 2 s of the stop.
func TestDebuginfodSilent(t *testing.T) {
	bpftest.Require(t)
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes command")
	}
	t.Setenv("DEBUGINFOD_URLS", silentServer(t))
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	t.Setenv("DEBUGINFOD_TIMEOUT", "")
	for _, stopAt := range []time.Duration{0, 1500 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		var stopped time.Time
		if stopAt > 0 {
			time.AfterFunc(stopAt, func() { stopped = time.Now(); cancel() })
		}
		t0 := time.Now()
		out, err := record(ctx, sampler.Config{Frequency: 499, Command: []string{yes}, Stdout: io.Discard, Duration: time.Second})
		end := time.Now()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if out.Stats.Kept == 0 {
			t.Fatal("no samples of yes")
		}
		t.Logf("stop at %v: ended after %v", stopAt, end.Sub(t0).Round(time.Millisecond))
		if d := end.Sub(t0); d > 6*time.Second {
			t.Errorf("a 1 s run with a silent debuginfod server took %v", d)
		}
		if stopAt > 0 && !stopped.IsZero() && end.Sub(stopped) > 2*time.Second {
			t.Errorf("stopped while downloading: ended %v after the stop", end.Sub(stopped))
		}
	}
}
