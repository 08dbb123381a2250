// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Exec watch. A probe bound to a process (a uprobe's perf event, a
// multi-uprobe link's filter) is bound to its main thread: when another
// thread calls exec, the kernel makes that thread the main one and the old
// main thread exits, taking the probes with it, although the process (its
// PID) lives on. An exec by the main thread itself keeps them. ExecWatch
// tells the two apart with a dummy perf event bound to the main thread,
// which reports a hang-up when that thread is gone, and says when the
// process replaced its program (its memory map's layout and executable
// changed).

// ExecWatch follows one process's execs.
type ExecWatch struct {
	pid  int
	fd   int
	mmap []byte
	last Layout
	// hup is closed when the bound main thread is gone (HungUp); wake, an
	// eventfd, ends the goroutine that waits for it.
	hup  chan struct{}
	wake int
	done chan struct{}
}

// Layout is what changes when a process execs: the addresses of its code,
// stack and arguments (randomized at each exec), and its executable.
type Layout struct {
	StartCode, EndCode, StartStack, ArgStart uint64
	ExeDev, ExeIno                           uint64
	// Settled: the main thread lives (mid-exec by another thread, the
	// dead one still holds the PID and shows no layout).
	Settled bool
}

// ReadLayout reads process pid's Layout.
func ReadLayout(pid int) (Layout, error) {
	var l Layout
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return l, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return l, fmt.Errorf("process %d: unreadable /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields 26-28 and 48 of stat; f[0] is field 3.
	if len(f) < 46 {
		return l, fmt.Errorf("process %d: short /proc/%d/stat", pid, pid)
	}
	l.Settled = f[0] != "Z" && f[0] != "X"
	for j, dst := range []*uint64{&l.StartCode, &l.EndCode, &l.StartStack, &l.ArgStart} {
		idx := []int{23, 24, 25, 45}[j]
		*dst, _ = strconv.ParseUint(f[idx], 10, 64)
	}
	var st unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) == nil {
		l.ExeDev, l.ExeIno = st.Dev, st.Ino
	}
	return l, nil
}

// WatchExec starts watching process pid.
func WatchExec(pid int) (*ExecWatch, error) {
	w := &ExecWatch{pid: pid, fd: -1}
	if err := w.bind(); err != nil {
		return nil, err
	}
	l, err := ReadLayout(pid)
	if err != nil {
		w.Close()
		return nil, err
	}
	w.last = l
	return w, nil
}

// bind opens the dummy event on the process's main thread, with a ring
// buffer (without one a perf event always polls as hung up).
func (w *ExecWatch) bind() error {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_DUMMY,
		Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Bits: unix.PerfBitDisabled}
	fd, err := unix.PerfEventOpen(&attr, w.pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("watch process %d for exec: %w", w.pid, err)
	}
	page := os.Getpagesize()
	m, err := unix.Mmap(fd, 0, 2*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("watch process %d for exec: %w", w.pid, err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Munmap(m)
		unix.Close(fd)
		return fmt.Errorf("watch process %d for exec: %w", w.pid, err)
	}
	w.fd, w.mmap, w.wake = fd, m, wake
	w.hup, w.done = make(chan struct{}), make(chan struct{})
	go waitHup(fd, wake, w.hup, w.done)
	return nil
}

// waitHup closes hup when the perf event fd hangs up, and returns when
// that happened or wake is written; it closes done on return.
func waitHup(fd, wake int, hup, done chan struct{}) {
	defer close(done)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n > 0 && fds[1].Revents == 0 && fds[0].Revents&unix.POLLHUP != 0 {
			close(hup)
		}
		return
	}
}

// HungUp returns a channel closed as soon as the process's current main
// thread is gone: the process exited, or another thread exec'd (call
// Check to tell). Each call after Check may return a new channel; nil
// (never ready) while the watch could not bind to the new main thread
// yet (Check tries again).
func (w *ExecWatch) HungUp() <-chan struct{} { return w.hup }

// ExecEvent is what Check saw since the last call.
type ExecEvent struct {
	// Exec: the process replaced its program.
	Exec bool
	// ByThread: a thread other than the main one exec'd; probes bound to
	// the process must be attached again.
	ByThread bool
	// ExeChanged: the executable is another file.
	ExeChanged bool
}

// execSettle bounds the wait for an exec by a thread to complete.
const execSettle = time.Second

// Check reports whether the process exec'd since the last Check, and how.
// After an exec by a thread it waits for the exec to complete (the layout
// to differ from the one the last Check saw, at most a second: the old
// main thread is gone before the PID passes to the exec'ing thread and
// the new program is mapped, and a probe attached in between would bind
// to the dead thread), then binds the watch to the new main thread.
func (w *ExecWatch) Check() (ExecEvent, error) {
	var ev ExecEvent
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	if w.fd >= 0 {
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&unix.POLLHUP != 0 {
			w.release()
			w.settle()
			if err := CheckProcess(w.pid); err != nil {
				return ev, err // the process is gone
			}
			ev.Exec, ev.ByThread = true, true
		}
	}
	if w.fd < 0 {
		// Mid-exec the new main thread may not take an event yet.
		if err := w.bind(); err != nil && CheckProcess(w.pid) != nil {
			return ev, err
		}
	}
	l, err := ReadLayout(w.pid)
	if err != nil {
		return ev, err
	}
	if !l.Settled || l.StartCode == 0 {
		return ev, nil // mid-exec or exiting: the next Check sees it
	}
	if l.Code() != w.last.Code() {
		ev.Exec = true
	}
	// The executable is compared when both were read (mid-exec it may not
	// be readable).
	if l.ExeIno != 0 && w.last.ExeIno != 0 && (l.ExeDev != w.last.ExeDev || l.ExeIno != w.last.ExeIno) {
		ev.Exec, ev.ExeChanged = true, true
	}
	if l.ExeIno == 0 {
		l.ExeDev, l.ExeIno = w.last.ExeDev, w.last.ExeIno
	}
	w.last = l
	return ev, nil
}

// settle waits until the process's layout differs from w.last (the exec
// completed: the main thread lives and has a program mapped), it is gone,
// or execSettle passed. A process exiting has no program mapped either
// and is a zombie a moment later.
func (w *ExecWatch) settle() {
	for end := time.Now().Add(execSettle); time.Now().Before(end); time.Sleep(time.Millisecond) {
		l, err := ReadLayout(w.pid)
		if err != nil || CheckProcess(w.pid) != nil || l.Settled && l.StartCode != 0 && l.Code() != w.last.Code() {
			return
		}
	}
}

// Code is the part of a Layout an exec changes: where the code, the stack
// and the arguments lie.
func (l Layout) Code() [4]uint64 { return [4]uint64{l.StartCode, l.EndCode, l.StartStack, l.ArgStart} }

func (w *ExecWatch) release() {
	if w.done != nil {
		var one [8]byte
		one[0] = 1
		unix.Write(w.wake, one[:])
		<-w.done
		unix.Close(w.wake)
		w.done, w.hup = nil, nil
	}
	if w.mmap != nil {
		unix.Munmap(w.mmap)
		w.mmap = nil
	}
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// Close stops watching.
func (w *ExecWatch) Close() { w.release() }
