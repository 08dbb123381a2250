// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestPumpWakes checks that the pump waits in Go's poller, that a record
// written with a forced wake-up is handed on long before the pump's
// periodic read (an hour here), that stop ends the pump with what the ring
// holds, records written without a wake-up included, and that closing the
// reader ends a pump that waits.
func TestPumpWakes(t *testing.T) {
	bpftest.Require(t)
	ring := bpftest.RingBuffer(t)
	quiet, loud := bpftest.RingWriter(t, ring, bpftest.RingNoWakeup), bpftest.RingWriter(t, ring, bpftest.RingForceWakeup)
	run := func(p *ebpf.Program) { bpftest.RunOnce(t, p) }
	count := func(c []byte) (n int) {
		records(c, func([]byte) { n++ })
		return n
	}

	r, err := ringbuf.NewReader(ring)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	p := startPump(r, ring.FD(), time.Hour)
	if p.wake == nil {
		t.Fatal("the ring's descriptor did not join Go's poller: the pump blocks in a system call")
	}
	time.Sleep(50 * time.Millisecond) // the pump is waiting
	run(quiet)
	run(loud)
	select {
	case c := <-p.full:
		if n := count(c); n != 2 {
			t.Errorf("the wake-up handed on %d records, want 2", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a forced wake-up did not reach the pump within 10 s")
	}
	run(quiet)
	p.stop()
	got := 0
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case c, ok := <-p.full:
			if !ok {
				done = true
				break
			}
			got += count(c)
		case <-deadline:
			t.Fatal("the pump did not end within 10 s of stop")
		}
	}
	if got != 1 || p.err != nil {
		t.Errorf("after stop: %d records (want the 1 written without a wake-up), error %v", got, p.err)
	}
	r.Close()
	p.close()

	r, err = ringbuf.NewReader(ring)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	p = startPump(r, ring.FD(), time.Hour)
	time.Sleep(50 * time.Millisecond)
	r.Close()
	p.close()
	select {
	case _, ok := <-p.full:
		if ok {
			t.Error("a chunk from an empty ring")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pump did not end within 10 s of the reader's close")
	}
}
