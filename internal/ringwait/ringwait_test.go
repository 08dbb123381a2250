// SPDX-License-Identifier: Apache-2.0

package ringwait_test

import (
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/ringwait"
)

// startWait runs w.Wait(d) on a goroutine; the channel is closed when it
// returns.
func startWait(w *ringwait.Waiter, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		w.Wait(d)
		close(done)
	}()
	return done
}

// ends reports whether done is closed within limit.
func ends(done <-chan struct{}, limit time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

// waitReturns runs w.Wait(d) and reports whether it returned within
// limit.
func waitReturns(w *ringwait.Waiter, d, limit time.Duration) bool {
	return ends(startWait(w, d), limit)
}

// TestWaiter checks that a wait ends at a forced wake-up (also one that
// came before the wait), at its deadline, at Wake (and every later wait
// with it) and at Close, and that a record written without a wake-up does
// not end it.
func TestWaiter(t *testing.T) {
	bpftest.Require(t)
	ring := bpftest.RingBuffer(t)
	quiet, loud := bpftest.RingWriter(t, ring, bpftest.RingNoWakeup), bpftest.RingWriter(t, ring, bpftest.RingForceWakeup)
	w, err := ringwait.New(ring.FD())
	if err != nil {
		t.Fatalf("New: %v", err)
	}

	if !waitReturns(w, 10*time.Millisecond, 10*time.Second) {
		t.Fatal("a 10 ms wait did not end within 10 s")
	}
	parked := startWait(w, time.Hour)
	bpftest.RunOnce(t, quiet)
	if ends(parked, 300*time.Millisecond) {
		t.Error("a record written without a wake-up ended the wait")
	}
	bpftest.RunOnce(t, loud)
	if !ends(parked, 10*time.Second) {
		t.Fatal("a forced wake-up did not end the wait within 10 s")
	}
	// A wake-up before the wait counts for it.
	bpftest.RunOnce(t, loud)
	if !waitReturns(w, time.Hour, 10*time.Second) {
		t.Error("a wake-up that came before the wait did not end it")
	}
	w.Wake()
	for i := 0; i < 2; i++ {
		if !waitReturns(w, time.Hour, 10*time.Second) {
			t.Fatalf("wait %d after Wake did not end", i+1)
		}
	}
	if !w.Woken() {
		t.Error("Woken is false after Wake")
	}

	w2, err := ringwait.New(ring.FD())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	parked = startWait(w2, time.Hour)
	time.Sleep(50 * time.Millisecond)
	w2.Close()
	if !ends(parked, 10*time.Second) {
		t.Fatal("Close did not end the wait")
	}
	w.Close()
}
