// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
)

// Held is a command started and stopped right after exec, before its
// dynamic loader or any of its code ran: probes attached now see its very
// first calls. Release lets it run.
type Held struct {
	// Pid is the command's process ID; Exe the absolute path of its
	// executable.
	Pid int
	Exe string

	release chan struct{}
	started chan error
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
}

// Stdio are the standard streams of a command started; a nil one is this
// process's own.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// StartHeld starts argv under ptrace, which stops it at its exec: its
// process exists with the command's image (so /proc/PID/exe and its
// mappings are the command's) but none of its code ran. The tracing thread
// waits for Release, detaches, and then reaps the command. Wait reports
// its exit. The command is killed when this process ends, however it ends.
func StartHeld(argv []string, stdio Stdio) (*Held, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to run")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	h := &Held{Exe: path, release: make(chan struct{}), started: make(chan error, 1), done: make(chan struct{})}
	go h.run(path, argv, stdio)
	if err := <-h.started; err != nil {
		return nil, err
	}
	return h, nil
}

// run owns the command: ptrace requests must come from the thread that
// started it, so the goroutine stays locked to its thread.
func (h *Held) run(path string, argv []string, stdio Stdio) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(h.done)
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if stdio.In != nil {
		cmd.Stdin = stdio.In
	}
	if stdio.Out != nil {
		cmd.Stdout = stdio.Out
	}
	if stdio.Err != nil {
		cmd.Stderr = stdio.Err
	}
	// Pdeathsig: the command ends with this process, also when it is
	// killed (a command started by tickprof is part of its run, never left
	// behind unobserved). The signal follows the thread that started the
	// command, and this goroutine keeps that thread locked until the
	// command has been reaped, so only this process's end sends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.started <- fmt.Errorf("start %s: %w", argv[0], err)
		return
	}
	h.Pid = cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(h.Pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		cmd.Process.Kill()
		cmd.Wait()
		h.started <- fmt.Errorf("start %s: it did not stop at exec (%v, status %v)", argv[0], err, ws)
		return
	}
	h.started <- nil
	<-h.release
	if err := syscall.PtraceDetach(h.Pid); err != nil {
		cmd.Process.Kill()
	}
	h.waitErr = cmd.Wait()
	h.state = cmd.ProcessState
}

// Release lets the command run. Calling it more than once is harmless.
func (h *Held) Release() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// Done is closed when the command has exited (after Release).
func (h *Held) Done() <-chan struct{} { return h.done }

// Wait waits for the command to exit and returns its state.
func (h *Held) Wait() (*os.ProcessState, error) {
	<-h.done
	if h.state != nil {
		return h.state, nil
	}
	return nil, h.waitErr
}

// Kill ends the command (a held one is released first so it can be reaped).
func (h *Held) Kill() {
	syscall.Kill(h.Pid, syscall.SIGKILL)
	h.Release()
}
