// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Handing the probes to a helper process. Closing a uprobe link removes
// its breakpoints from the target's memory, and the kernel cannot write
// them back for a closing thread with a fatal signal pending: a SIGKILL
// (or the exit of the process, which kills its other threads) while a
// link is being closed leaves int3 instructions behind with no uprobe to
// handle them, and the target dies of SIGTRAP the next time it runs one
// (seen: 1,024 breakpoints left after an exit during the close of a
// multi-uprobe link). Closing links also takes time (0.1-0.2 s a link,
// one after another when the kernel closes them at an exit), which a
// SIGKILL turns into minutes of zombie with single links.
//
// HandOff therefore gives every link, once attached, to a helper process
// in its own session (DetachHelper, the same binary started again), which
// holds a reference to each and waits on a pipe; the session drops its
// own references at once, which costs nothing. Detach closes the pipe,
// and so does the kernel when this process ends in any way, SIGKILL
// included: the helper then closes the links, entries first, and exits.

// EnvDetachHelper is set (to the number of entry links, exit links and
// other links, "E,X,O") in the environment of a detach helper; its
// descriptor 3 is the pipe it waits on, the links follow from 4 on, in
// that order.
const EnvDetachHelper = "TICKPROF_DETACH_HELPER"

// fdLink is a link with a file descriptor (RawLink and the links built on
// it: perf-event and multi-uprobe links).
type fdLink interface {
	FD() int
}

// HandOff gives the session's links to the helper process that cmd starts
// (the caller's binary, which calls DetachHelper when EnvDetachHelper is
// set; HandOff sets it, the descriptors and a new session). From then on
// the probes stay attached until Detach or this process's end, and are
// detached by the helper. When a link has no descriptor to pass or the
// helper cannot start, HandOff returns an error and changes nothing:
// Detach then detaches in this process.
func (s *Session) HandOff(cmd *exec.Cmd) error {
	if s.helper != nil || s.detached {
		return nil
	}
	groups := [][]link.Link{s.entryLinks, s.exitLinks, reversed(s.links)}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("hand the probes to a helper: %w", err)
	}
	files := []*os.File{r}
	closeFiles := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, g := range groups {
		for _, l := range g {
			fl, ok := l.(fdLink)
			if !ok {
				closeFiles()
				w.Close()
				return fmt.Errorf("hand the probes to a helper: a %T has no descriptor", l)
			}
			fd, err := unix.FcntlInt(uintptr(fl.FD()), unix.F_DUPFD_CLOEXEC, 3)
			if err != nil {
				closeFiles()
				w.Close()
				return fmt.Errorf("hand the probes to a helper: %w", err)
			}
			files = append(files, os.NewFile(uintptr(fd), "bpf-link"))
		}
	}
	cmd.ExtraFiles = files
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d", EnvDetachHelper, len(groups[0]), len(groups[1]), len(groups[2])))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	err = cmd.Start()
	closeFiles()
	if err != nil {
		w.Close()
		return fmt.Errorf("start the detach helper: %w", err)
	}
	// The helper holds every link: closing ours only drops references.
	for _, g := range groups {
		for _, l := range g {
			l.Close()
		}
	}
	s.entryLinks, s.exitLinks, s.links = nil, nil, nil
	s.helper, s.helperRelease = cmd, w
	s.helperDone = make(chan error, 1)
	go func() { s.helperDone <- cmd.Wait() }()
	return nil
}

// detachHelper releases the helper (HandOff) and waits until it has
// closed every link or ctx ends; then it goes on alone.
func (s *Session) detachHelper(ctx context.Context) error {
	if s.helperRelease != nil {
		s.helperRelease.Close()
		s.helperRelease = nil
	}
	s.detached = true // by the helper, whatever happens here
	select {
	case err := <-s.helperDone:
		s.helper = nil
		if err != nil {
			return fmt.Errorf("the detach helper: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func reversed(ls []link.Link) []link.Link {
	out := make([]link.Link, len(ls))
	for i, l := range ls {
		out[len(ls)-1-i] = l
	}
	return out
}

// IsDetachHelper reports whether this process was started by HandOff.
func IsDetachHelper() bool { return os.Getenv(EnvDetachHelper) != "" }

// DetachHelper is the helper process of HandOff: it waits until its pipe
// (descriptor 3) is closed, then closes the links it was given
// (descriptors from 4 on), entry links first, then exit links, each set
// in parallel, then the others in order, ignoring the signals a terminal
// or a supervisor sends. Call it first thing in main when
// IsDetachHelper; it returns an error when the environment is not as
// HandOff sets it.
func DetachHelper() error {
	var n [3]int
	v := os.Getenv(EnvDetachHelper)
	if _, err := fmt.Sscanf(v, "%d,%d,%d", &n[0], &n[1], &n[2]); err != nil {
		return fmt.Errorf("%s=%q: want three counts E,X,O", EnvDetachHelper, v)
	}
	for _, c := range n {
		if c < 0 || c > 1<<20 {
			return errors.New("link count out of range")
		}
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	pipe := os.NewFile(3, "release")
	buf := make([]byte, 1)
	for {
		if _, err := pipe.Read(buf); err != nil {
			break // EOF: released, or the session's process ended
		}
	}
	fd := 4
	for g, count := range n {
		var fs []closerFunc
		for i := 0; i < count; i++ {
			f := fd
			fs = append(fs, func() error { return unix.Close(f) })
			fd++
		}
		if g < 2 {
			closeFuncsParallel(fs)
		} else {
			for _, f := range fs {
				f()
			}
		}
	}
	return nil
}

type closerFunc func() error

// closeFuncsParallel runs the closes with up to closeWorkers at once.
func closeFuncsParallel(fs []closerFunc) {
	work := make(chan closerFunc)
	done := make(chan struct{})
	n := min(closeWorkers, len(fs))
	for range n {
		go func() {
			for f := range work {
				f()
			}
			done <- struct{}{}
		}()
	}
	for _, f := range fs {
		work <- f
	}
	close(work)
	for range n {
		<-done
	}
}
