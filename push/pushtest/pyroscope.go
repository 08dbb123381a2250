// SPDX-License-Identifier: Apache-2.0

package pushtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvPyroscopeStart names the script that starts a real Grafana Pyroscope
// server, overriding the one beside the repository (PyroscopeScript).
const EnvPyroscopeStart = "TICKPROF_PYROSCOPE_START"

// PyroscopeScript returns the start script of the real Pyroscope server:
// $TICKPROF_PYROSCOPE_START, else shared/pyroscope/start in the directory
// that holds the repository (the directory of go.mod above the working
// directory), where CI lays it. The error says why there is none.
func PyroscopeScript() (string, error) {
	if s := os.Getenv(EnvPyroscopeStart); s != "" {
		return s, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
	s := filepath.Join(filepath.Dir(dir), "shared", "pyroscope", "start")
	if _, err := os.Stat(s); err != nil {
		return "", fmt.Errorf("no real Pyroscope server: %s is absent (set %s to its start script)", s, EnvPyroscopeStart)
	}
	return s, nil
}

// Pyroscope is a real Grafana Pyroscope server started by its start
// script on loopback, its data in a directory the caller chooses (kept
// across restarts).
type Pyroscope struct {
	script     string
	http, grpc int
	// Data is the data directory.
	Data string
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string
	pid int
	// Log is the server's log file (removed when it exits).
	Log string
}

// StartPyroscope starts a server on the given ports with its data in dir
// and waits until it is ready (45-70 s on 2 cores).
func StartPyroscope(script string, httpPort, grpcPort int, dir string) (*Pyroscope, error) {
	p := &Pyroscope{script: script, http: httpPort, grpc: grpcPort, Data: dir}
	return p, p.Start()
}

// Start starts the server again (after Stop or Kill) on its data
// directory, which may have been replaced, and waits until it is ready.
func (p *Pyroscope) Start() error {
	if p.pid != 0 && p.alive() {
		return fmt.Errorf("pyroscope %d is still running", p.pid)
	}
	out, err := p.run()
	for try := 1; err != nil && strings.Contains(err.Error(), "exited before ready") && try < startTries; try++ {
		// Once in a CI rehearsal the server exited at once, its log
		// gone with it (the script removes its directory), and a
		// server started on the same ports minutes later ran.
		time.Sleep(3 * time.Second)
		out, err = p.run()
	}
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "url":
			p.URL = v
		case "pid":
			p.pid, _ = strconv.Atoi(v)
		case "log":
			p.Log = v
		}
	}
	if p.URL == "" || p.pid <= 0 {
		return fmt.Errorf("start pyroscope: no url= or pid= line in %q", out)
	}
	return nil
}

// startTries bounds the starts of a server that exits before it is ready.
const startTries = 3

// run runs the start script once and returns what it printed.
func (p *Pyroscope) run() ([]byte, error) {
	cmd := exec.Command(p.script, strconv.Itoa(p.http), strconv.Itoa(p.grpc))
	cmd.Env = append(os.Environ(), "PYROSCOPE_DATA="+p.Data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("start pyroscope: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// PID is the server's process.
func (p *Pyroscope) PID() int { return p.pid }

func (p *Pyroscope) alive() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return false
	}
	// A zombie waiting for its parent counts as gone.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// Signal sends sig to the server.
func (p *Pyroscope) Signal(sig syscall.Signal) error {
	if p.pid <= 0 {
		return errors.New("pyroscope was not started")
	}
	return syscall.Kill(p.pid, sig)
}

// Wait waits at most d for the server to exit and reports whether it did.
func (p *Pyroscope) Wait(d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !p.alive() {
			return true
		}
	}
	return !p.alive()
}

// Kill ends the server at once (SIGKILL) and waits for it to be gone.
func (p *Pyroscope) Kill() {
	if p.pid > 0 && p.alive() {
		syscall.Kill(p.pid, syscall.SIGKILL)
		p.Wait(10 * time.Second)
	}
}

// Shared is a server a test binary starts once, in the background, for
// all its tests (TestMain calls StartShared; tests call Wait).
type Shared struct {
	ready chan struct{}
	srv   *Pyroscope
	err   error
	skip  string
	dirs  []string
}

// StartShared starts a server on the given ports in the background, its
// data in a new directory, unless skip says why not to (or there is no
// start script); stop kills it and removes its data directories.
func StartShared(httpPort, grpcPort int, skip string) (s *Shared, stop func()) {
	s = &Shared{ready: make(chan struct{}), skip: skip}
	script, err := PyroscopeScript()
	if s.skip == "" && err != nil {
		s.skip = err.Error()
	}
	if s.skip != "" {
		close(s.ready)
		return s, func() {}
	}
	go func() {
		defer close(s.ready)
		dir, err := s.NewDir()
		if err != nil {
			s.err = err
			return
		}
		s.srv, s.err = StartPyroscope(script, httpPort, grpcPort, dir)
	}()
	return s, func() {
		<-s.ready
		if s.srv != nil {
			s.srv.Kill()
		}
		for _, d := range s.dirs {
			os.RemoveAll(d)
		}
	}
}

// NewDir makes a new empty data directory, removed by stop.
func (s *Shared) NewDir() (string, error) {
	d, err := os.MkdirTemp("", "tickprof-pyroscope-")
	if err == nil {
		s.dirs = append(s.dirs, d)
	}
	return d, err
}

// Wait waits until the server is ready and returns it; skip says why
// there is none (no start script, or what StartShared was told), err why
// it failed to start.
func (s *Shared) Wait() (srv *Pyroscope, skip string, err error) {
	<-s.ready
	return s.srv, s.skip, s.err
}
