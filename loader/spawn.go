package loader

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Held is a command started and stopped right after exec, before its
// dynamic loader or any of its code ran: probes attached now see its very
// first calls. Release lets it run.
type Held struct {
	// Pid is the command's process ID.
	Pid int

	release chan struct{}
	started chan error
	done    chan struct{}
	state   *os.ProcessState
	waitErr error
}

// StartHeld starts argv (with this process's stdin, stdout and stderr)
// under ptrace, which stops it at its exec; the tracing thread waits for
// Release, detaches, and then reaps the command. Wait reports its exit.
func StartHeld(argv []string) (*Held, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command given after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	h := &Held{release: make(chan struct{}), started: make(chan error, 1), done: make(chan struct{})}
	go h.run(path, argv)
	if err := <-h.started; err != nil {
		return nil, err
	}
	return h, nil
}

// run owns the command: ptrace requests must come from the thread that
// started it, so the goroutine stays locked to its thread.
func (h *Held) run(path string, argv []string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(h.done)
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
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
