// Package proc owns what tickprof does with processes: starting a command
// held before exec, reading /proc/PID/maps, noticing a process's exit,
// checking the privileges BPF needs, and resolving a [LIB|PATH:]SYMBOL
// target's binary. It may import only the standard library and x/sys.
package proc

import (
	"errors"
	"fmt"
	"os"
	"strings"

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

// CheckProcess reports whether process pid exists and is not a zombie.
func CheckProcess(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return fmt.Errorf("process %d: %w (check the PID with ps)", pid, ErrNoProcess)
	}
	// State follows the parenthesized command name.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
		return fmt.Errorf("process %d has exited: %w", pid, ErrNoProcess)
	}
	return nil
}
