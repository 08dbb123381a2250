// SPDX-License-Identifier: Apache-2.0

// Package ringwait waits for a BPF ring buffer's wake-ups in Go's network
// poller.
//
// A reader that waits in a blocking epoll call (cilium/ebpf's
// ringbuf.Reader does) holds a thread in a system call; Go's sysmon thread
// takes the processor back from any system call blocked for over 10 ms and
// then polls every 20 µs instead of sleeping, so a reader that waits 20-100
// ms at a time keeps sysmon awake for most of the run (it was 56% of an
// idle agent's CPU samples, and 9% of a `time` run's). A Waiter registers a
// duplicate of the ring's descriptor with Go's poller instead: the waiting
// goroutine parks, and the poller wakes it when the kernel wakes the
// ring's waiters (a record submitted with a wake-up) or at the deadline.
// The records themselves are still read through the ring buffer reader,
// without blocking.
package ringwait

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A Waiter waits for one ring buffer's wake-ups. Wait is called from one
// goroutine; Wake and Close from any.
type Waiter struct {
	f   *os.File
	raw syscall.RawConn
	// woken ends every wait once Wake was called.
	woken atomic.Bool
}

// New returns a Waiter on the ring buffer map whose descriptor is fd (the
// descriptor stays the caller's). It fails where the descriptor cannot
// join Go's poller; the caller then waits in its reader.
func New(fd int) (*Waiter, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicate ring buffer descriptor: %w", err)
	}
	// The duplicate shares the map's open file: the non-blocking flag
	// only changes read(2), which nothing calls on a ring buffer map.
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("ring buffer descriptor: %w", err)
	}
	f := os.NewFile(uintptr(dup), "ring buffer")
	// A file outside the poller has no deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("ring buffer descriptor cannot be polled: %w", err)
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ring buffer descriptor: %w", err)
	}
	return &Waiter{f: f, raw: raw}, nil
}

// Wait parks the calling goroutine until the ring's next wake-up (one that
// came since the last Wait counts), until d has passed, or until Wake or
// Close. It does not say which: the caller reads the ring either way.
func (w *Waiter) Wait(d time.Duration) {
	if err := w.f.SetReadDeadline(time.Now().Add(d)); err != nil || w.woken.Load() {
		return // closed, or woken before the deadline was set
	}
	first := true
	// The first call reports "not ready", so that Read waits for
	// readiness; the next, after it, ends the wait. Its error (the
	// deadline, a closed file) ends the wait as well.
	_ = w.raw.Read(func(uintptr) bool {
		done := !first
		first = false
		return done
	})
}

// Wake ends the wait under way, and every later one, at once.
func (w *Waiter) Wake() {
	w.woken.Store(true)
	_ = w.f.SetReadDeadline(time.Now())
}

// Woken reports whether Wake was called.
func (w *Waiter) Woken() bool { return w.woken.Load() }

// Close releases the duplicate descriptor, ending a wait.
func (w *Waiter) Close() error {
	return w.f.Close()
}
