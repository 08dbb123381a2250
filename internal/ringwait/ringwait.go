// SPDX-License-Identifier: Apache-2.0

// Package ringwait waits for a BPF ring buffer's wake-ups in Go's network
// poller.
//
// A reader that waits in a blocking epoll call (cilium/ebpf's
// ringbuf.Reader does) holds a thread in a system call; Go's sysmon thread
// takes the processor back from any system call blocked for over 10 ms and
// then polls every 20 µs instead of sleeping, so a reader that waits 20-100
// ms at a time keeps sysmon awake for most of the run (it was 56% of an
// idle agent's CPU samples, and 9% of a `time` run's). A Waiter instead
// puts the ring's descriptor in an epoll instance of its own, edge
// triggered, and that instance's descriptor in Go's poller: the waiting
// goroutine parks, and the poller wakes it when the kernel wakes the
// ring's waiters (a record submitted with a wake-up) or at the deadline.
// The inner instance keeps a wake-up until a wait takes it, so one that
// comes between two waits ends the next (Go's poller alone forgets
// readiness when a wait begins). The records themselves are still read
// through the ring buffer reader, without blocking.
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
	// f is the inner epoll instance, in Go's poller; raw its raw
	// connection, epfd its descriptor.
	f    *os.File
	raw  syscall.RawConn
	epfd int
	// woken ends every wait once Wake was called.
	woken atomic.Bool
}

// New returns a Waiter on the ring buffer map whose descriptor is fd (the
// descriptor stays the caller's, and must outlive the Waiter). It fails
// where the descriptor cannot join Go's poller; the caller then waits in
// its reader.
func New(fd int) (*Waiter, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("ring buffer wait: epoll instance: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(fd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("ring buffer wait: add the ring: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("ring buffer wait: %w", err)
	}
	f := os.NewFile(uintptr(epfd), "ring buffer wait")
	// A file outside the poller has no deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return nil, fmt.Errorf("ring buffer wait cannot be polled: %w", err)
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ring buffer wait: %w", err)
	}
	return &Waiter{f: f, raw: raw, epfd: epfd}, nil
}

// Wait parks the calling goroutine until the ring's next wake-up (one that
// came since the last Wait counts), until d has passed, or until Wake or
// Close. It does not say which: the caller reads the ring either way.
func (w *Waiter) Wait(d time.Duration) {
	if err := w.f.SetReadDeadline(time.Now().Add(d)); err != nil || w.woken.Load() {
		return // closed, or woken before the deadline was set
	}
	var evs [1]unix.EpollEvent
	// Each call takes a wake-up the inner instance holds, if any, and
	// ends the wait; otherwise Read waits for the instance to become
	// readable. Its error (the deadline, a closed file) ends the wait
	// as well.
	_ = w.raw.Read(func(uintptr) bool {
		n, err := unix.EpollWait(w.epfd, evs[:], 0)
		return n > 0 || (err != nil && err != unix.EINTR)
	})
}

// Wake ends the wait under way, and every later one, at once.
func (w *Waiter) Wake() {
	w.woken.Store(true)
	_ = w.f.SetReadDeadline(time.Now())
}

// Woken reports whether Wake was called.
func (w *Waiter) Woken() bool { return w.woken.Load() }

// Close releases the inner epoll instance, ending a wait.
func (w *Waiter) Close() error {
	return w.f.Close()
}
