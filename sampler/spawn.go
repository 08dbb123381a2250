package sampler

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Spawned is a command started held at the gate: its process exists (so its
// PID can be made a target and probes attached) but it has not exec'd the
// command yet. Release lets it run.
type Spawned struct {
	// Cmd is the running shell that execs the command in the same process.
	Cmd *exec.Cmd
	// Exe is the absolute path of the command's executable.
	Exe  string
	gate *os.File
	done chan struct{}
	err  error
}

// Spawn starts args[0] with args[1:] behind a gate: /bin/sh waits for a line
// on file descriptor 3, then execs the command in place, so the PID stays
// the same and nothing of the command runs before Release.
func Spawn(args []string, stdin io.Reader, stdout, stderr io.Writer) (*Spawned, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no command to run")
	}
	exe, err := exec.LookPath(args[0])
	if err != nil {
		return nil, fmt.Errorf("find command %s: %w", args[0], err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return nil, fmt.Errorf("find command %s: %w", args[0], err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create start gate: %w", err)
	}
	sh := append([]string{"-c", `read -r _ <&3; exec 3<&-; exec "$0" "$@"`, exe}, args[1:]...)
	cmd := exec.Command("/bin/sh", sh...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	r.Close()
	s := &Spawned{Cmd: cmd, Exe: exe, gate: w, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// PID is the process ID of the command.
func (s *Spawned) PID() int { return s.Cmd.Process.Pid }

// Release lets the command run.
func (s *Spawned) Release() error {
	defer s.gate.Close()
	if _, err := s.gate.Write([]byte("go\n")); err != nil {
		return fmt.Errorf("start %s: %w", s.Exe, err)
	}
	return nil
}

// Kill stops a command that was never released or must be cut short.
func (s *Spawned) Kill() {
	s.gate.Close()
	_ = s.Cmd.Process.Kill()
	<-s.done
}

// Done is closed when the command exited.
func (s *Spawned) Done() <-chan struct{} { return s.done }

// Err is the command's exit error after Done.
func (s *Spawned) Err() error { return s.err }

// ExitNotify returns a channel closed when process pid exits (it turns
// zombie or disappears), watched with a pidfd.
func ExitNotify(pid int) (<-chan struct{}, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("watch process %d: %w (is the PID right?)", pid, err)
	}
	ch := make(chan struct{})
	go func() {
		defer unix.Close(fd)
		defer close(ch)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n > 0 {
				return
			}
		}
	}()
	return ch, nil
}
