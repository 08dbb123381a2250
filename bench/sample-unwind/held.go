// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"

	"github.com/tickprof/tickprof/internal/proc"
)

// settle is how long both profilers are given to start before the load
// begins, so that they sample the same window of it: tickprof loads its
// BPF programs in 0.1-1.6 s on this machine, and a profiler that starts
// later than the other misses the first of redis-benchmark's tests, whose
// mix of work differs from the later ones.
const settle = 3 * time.Second

// heldWorkload starts the named workload without its load: the process to
// sample exists (for sqlite3 and the C++ program, held before exec) and
// begin starts the work. wait waits for the work to end.
func (b *bench) heldWorkload(name string) (pid int, begin, wait func() error, cleanup func(), err error) {
	switch name {
	case "cxx", "sqlite3":
		argv := []string{b.cxx, strconv.Itoa(b.rounds)}
		if name == "sqlite3" {
			argv = []string{"sqlite3", ":memory:", ".read " + b.sqlFile}
		}
		h, err := proc.StartHeld(argv, proc.Stdio{Out: io.Discard, Err: io.Discard})
		if err != nil {
			return 0, nil, nil, nil, err
		}
		wait := func() error {
			st, err := h.Wait()
			if err == nil && !st.Success() {
				err = fmt.Errorf("%s: %v", name, st)
			}
			return err
		}
		return h.Pid, func() error { h.Release(); return nil }, wait, func() { h.Kill(); h.Wait() }, nil
	case "redis-server":
		srv, port, stop, err := b.redisServer()
		if err != nil {
			return 0, nil, nil, nil, err
		}
		lg := b.redisLoad(port)
		begin := func() error { return lg.Start() }
		cleanup := func() {
			if lg.Process != nil {
				lg.Process.Kill()
				lg.Wait()
			}
			stop()
		}
		return srv.Process.Pid, begin, lg.Wait, cleanup, nil
	}
	return 0, nil, nil, nil, fmt.Errorf("unknown workload %q", name)
}

// redisServer starts redis-server on a free loopback port and waits until
// it listens.
func (b *bench) redisServer() (*exec.Cmd, int, func(), error) {
	port, err := freePort()
	if err != nil {
		return nil, 0, nil, err
	}
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", b.tmp, "--protected-mode", "yes")
	if err := cmd.Start(); err != nil {
		return nil, 0, nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	if err := waitPort(port); err != nil {
		stop()
		return nil, 0, nil, err
	}
	return cmd, port, stop, nil
}

// redisLoad is the bounded load on loopback: a fixed number of requests.
func (b *bench) redisLoad(port int) *exec.Cmd {
	return exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-q",
		"-n", "150000", "-c", "20", "-t", "set,get,incr,lpush,lpop,sadd,hset,zadd,lrange_100")
}
