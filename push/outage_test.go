// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/tickprof/tickprof/push/pushtest"
)

// outage is how long the receiver is down in TestOutage. The case,
// a 30 s outage: go test ./push -run Outage -push.outage=30s
var outage = flag.Duration("push.outage", 2*time.Second, "how long the receiver is down in TestOutage")

// TestOutage stops a real /ingest receiver (its listener closed, so
// connections are refused) while windows keep coming, then starts it again
// on the same address. With a spool every window arrives; without one the
// queue's overflow is dropped, and each drop is counted.
func TestOutage(t *testing.T) {
	for _, spool := range []bool{true, false} {
		t.Run(fmt.Sprintf("spool=%v", spool), func(t *testing.T) {
			runOutage(t, *outage, spool)
		})
	}
}

func runOutage(t *testing.T, down time.Duration, withSpool bool) {
	h := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	stop := pushtest.Serve(t, ln, h)
	sink, err := NewIngest("http://"+addr, HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Sink: sink, QueueLen: 4, Backoff: Backoff{Initial: 20 * time.Millisecond, Max: down / 10}, Timeout: 2 * time.Second}
	if withSpool {
		cfg.SpoolDir = t.TempDir() + "/spool"
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// About 30 windows during the outage, far more than the queue holds.
	period := down / 30
	produced := map[string]*Window{}
	produce := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(period) {
			w := testWindow(len(produced))
			produced[w.Labels["window"]] = w
			p.Enqueue(w)
		}
	}
	produce(down / 6)
	stop()
	produce(down)
	if st := p.Stats(); st.Failed == 0 {
		t.Errorf("no failed attempt counted during the outage: %+v", st)
	}
	pushtest.Serve(t, pushtest.Listen(t, addr), h)
	produce(down / 6)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second+down)
	defer cancel()
	closeErr := p.Close(ctx)
	st := p.Stats()

	got := map[string]bool{}
	for _, in := range h.Received() {
		id := in.Labels["window"]
		if got[id] {
			t.Errorf("window %s delivered twice", id)
		}
		got[id] = true
		w := produced[id]
		if in.From != w.Start.Unix() {
			t.Errorf("window %s: from %d, want its own start %d", id, in.From, w.Start.Unix())
		}
		sameStacks(t, in.Profile, w.Profile)
	}
	t.Logf("outage %v: produced %d, delivered %d, stats %+v", down, len(produced), len(got), st)
	if st.Pushed != uint64(len(got)) {
		t.Errorf("Pushed = %d, receiver got %d", st.Pushed, len(got))
	}
	if withSpool {
		if closeErr != nil {
			t.Errorf("Close: %v", closeErr)
		}
		if len(got) != len(produced) || st.Dropped != 0 {
			t.Errorf("with a spool %d of %d windows arrived, %d dropped; want all, none", len(got), len(produced), st.Dropped)
		}
		if st.Spooled == 0 {
			t.Error("nothing was spooled during the outage")
		}
		if st.Spool != 0 || st.Queued != 0 {
			t.Errorf("left behind: %+v", st)
		}
		return
	}
	lost := uint64(len(produced) - len(got))
	if lost == 0 {
		t.Errorf("without a spool nothing was lost in a %v outage with a queue of %d", down, cfg.QueueLen)
	}
	if st.Dropped != lost {
		t.Errorf("Dropped = %d, but %d windows did not arrive", st.Dropped, lost)
	}
}

// TestSpoolSurvivesRestart: windows spooled and left at Close are delivered
// by the next Pusher on the same directory.
func TestSpoolSurvivesRestart(t *testing.T) {
	dir := t.TempDir() + "/spool"
	ln := pushtest.Listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every attempt fails
	sink, _ := NewIngest("http://"+addr, HTTPOptions{})
	p, err := New(Config{Sink: sink, QueueLen: 1, SpoolDir: dir, Backoff: Backoff{Initial: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		p.Enqueue(testWindow(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	p.Close(ctx)
	cancel()
	if st := p.Stats(); st.Spool != 5 || st.Dropped != 0 {
		t.Fatalf("after Close: %+v, want 5 windows in the spool", st)
	}
	h := &pushtest.Ingest{}
	pushtest.Serve(t, pushtest.Listen(t, addr), h)
	p2, err := New(Config{Sink: sink, SpoolDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(h.Received()); n != 5 {
		t.Errorf("next run delivered %d spooled windows, want 5", n)
	}
}

// TestSpoolCap: at the cap the oldest spooled windows go, and are counted.
func TestSpoolCap(t *testing.T) {
	w := testWindow(0)
	raw, _ := w.encode()
	ln := pushtest.Listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	sink, _ := NewIngest("http://"+addr, HTTPOptions{})
	p, err := New(Config{Sink: sink, QueueLen: 1, SpoolDir: t.TempDir() + "/s",
		SpoolBytes: int64(3*len(raw) + 3*300), Backoff: Backoff{Initial: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		p.Enqueue(testWindow(i))
	}
	st := p.Stats()
	if st.Spool+st.Queued+int(st.Dropped) != 10 || st.Dropped == 0 || st.SpoolBytes > int64(3*len(raw)+900) {
		t.Errorf("stats %+v: want drops counted, the spool under its cap, nothing unaccounted", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p.Close(ctx)
}
