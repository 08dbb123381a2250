// SPDX-License-Identifier: Apache-2.0

// Package proc owns what tickprof does with processes: starting a command
// held before exec, reading /proc/PID/maps, noticing a process's exit,
// checking the privileges BPF needs, checking that the caller may observe
// a process (perf's access check, access.go), and resolving a [LIB|PATH:]SYMBOL
// target's binary. Of third-party modules it imports only x/sys (checked by
// internal/layers).
package proc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Errors a caller may test for with errors.Is.
var (
	// ErrNotPrivileged: the process lacks the privileges to load BPF
	// programs.
	ErrNotPrivileged = errors.New("loading BPF programs needs root (or CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN): run with sudo")
	// ErrNeedProcess: a target names no file and there is no process to
	// find it in.
	ErrNeedProcess = errors.New("needs a process")
	// ErrNoProcess: the process does not exist (or has exited).
	ErrNoProcess = errors.New("no such process")
)

// CheckPrivileges reports whether this process may load and attach BPF
// tracing programs: root, CAP_SYS_ADMIN (which holds CAP_BPF's and
// CAP_PERFMON's powers), or both CAP_BPF and CAP_PERFMON.
func CheckPrivileges() error {
	if os.Geteuid() == 0 {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(unix.CAP_SYS_ADMIN) || (has(unix.CAP_BPF) && has(unix.CAP_PERFMON)) {
		return nil
	}
	return ErrNotPrivileged
}

// CheckProcess reports whether process pid exists, has not exited and is
// not a kernel thread, each with its own reason (no access check: see
// CheckAccess).
func CheckProcess(pid int) error {
	t, err := ReadTarget(pid)
	if err != nil {
		return err
	}
	return Decide(Creds{Ptrace: true}, t)
}

// readErr explains why a file of process pid (its executable, its maps)
// could not be read: the process is gone, is a kernel thread, or may not
// be observed; never "no such process" for a process that exists.
func readErr(pid int, what string, err error) error {
	if cerr := CheckProcess(pid); cerr != nil {
		return cerr
	}
	if errors.Is(err, os.ErrPermission) {
		if aerr := CheckAccess(pid); aerr != nil {
			return aerr
		}
	}
	return fmt.Errorf("process %d: cannot read its %s: %w", pid, what, err)
}
