// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors CheckAccess returns besides ErrNoProcess, for errors.Is.
var (
	// ErrKernelThread: the PID is a kernel thread, which runs no user
	// code and has no executable to probe.
	ErrKernelThread = errors.New("is a kernel thread")
	// ErrNotPermitted: the caller may not observe the process.
	ErrNotPermitted = errors.New("not permitted to observe the process")
)

// pfKthread is PF_KTHREAD, the flags bit of a kernel thread
// (include/linux/sched.h), field 9 of /proc/PID/stat.
const pfKthread = 0x00200000

// capSysPtrace is CAP_SYS_PTRACE's bit number.
const capSysPtrace = 19

// Creds are the credentials of a caller, as the kernel's check uses them.
type Creds struct {
	// UID and GID are the real user and group IDs (perf checks with
	// PTRACE_MODE_REALCREDS).
	UID, GID int
	// Ptrace is whether CAP_SYS_PTRACE is in the effective set.
	Ptrace bool
	// TGID is the caller's own process (itself it may always observe).
	TGID int
}

// Self returns the running process's credentials.
func Self() Creds {
	c := Creds{UID: os.Getuid(), GID: os.Getgid(), TGID: os.Getpid()}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err == nil {
		c.Ptrace = data[0].Effective&(1<<capSysPtrace) != 0
	}
	return c
}

// Target is what CheckAccess reads of a process.
type Target struct {
	PID int
	// UIDs and GIDs: real, effective, saved, filesystem.
	UIDs, GIDs [4]int
	// Kthread is set for a kernel thread.
	Kthread bool
	// Zombie is set for a process that has exited and not been reaped
	// (not for one whose main thread alone exited, by pthread_exit or
	// while another thread execs: the others run on).
	Zombie bool
	// OwnerUID is the owner of /proc/PID: the process's effective uid
	// when it is dumpable, root when it is not (the kernel's
	// task_dump_owner).
	OwnerUID int
}

// ReadTarget reads what the access check needs of process pid.
func ReadTarget(pid int) (Target, error) {
	t := Target{PID: pid}
	if pid <= 0 {
		return t, fmt.Errorf("process %d: %w (a PID is positive)", pid, ErrNoProcess)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return t, fmt.Errorf("process %d: %w (check the PID with ps)", pid, ErrNoProcess)
	}
	// The fields after the parenthesized command name: state is field 3,
	// flags field 9, num_threads field 20.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return t, fmt.Errorf("process %d: unreadable /proc/%d/stat", pid, pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 18 {
		return t, fmt.Errorf("process %d: unreadable /proc/%d/stat", pid, pid)
	}
	// num_threads (field 20) counts a dead main thread until the last
	// thread is gone.
	threads, _ := strconv.Atoi(f[17])
	t.Zombie = (f[0] == "Z" || f[0] == "X") && threads <= 1
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return t, fmt.Errorf("process %d: unreadable /proc/%d/stat flags %q", pid, pid, f[6])
	}
	t.Kthread = flags&pfKthread != 0
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return t, fmt.Errorf("process %d: %w (check the PID with ps)", pid, ErrNoProcess)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "Uid" && k != "Gid") {
			continue
		}
		ids := &t.UIDs
		if k == "Gid" {
			ids = &t.GIDs
		}
		for j, s := range strings.Fields(v) {
			if j < 4 {
				ids[j], _ = strconv.Atoi(s)
			}
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
		return t, fmt.Errorf("process %d: %w (check the PID with ps)", pid, ErrNoProcess)
	}
	t.OwnerUID = int(st.Uid)
	return t, nil
}

// Decide applies the check perf applies before it observes a process
// (ptrace_may_access with PTRACE_MODE_READ_REALCREDS, kernel/ptrace.c):
// a process may observe itself; a caller with CAP_SYS_PTRACE (root has
// it) may observe any process; otherwise the caller's real uid must equal
// the target's real, effective and saved uid, its real gid the target's
// real, effective and saved gid, and the target must be dumpable (not
// running a setuid program or one with file capabilities). Kernel threads
// and exited processes are refused with their own reasons. The error says
// what is wrong and what would be needed.
func Decide(c Creds, t Target) error {
	switch {
	case t.Kthread:
		return fmt.Errorf("process %d %w: it runs no user code to probe or sample; give the PID of a user process", t.PID, ErrKernelThread)
	case t.Zombie:
		return fmt.Errorf("process %d has exited: %w", t.PID, ErrNoProcess)
	case t.PID == c.TGID || c.Ptrace:
		return nil
	}
	u, g := t.UIDs, t.GIDs
	if c.UID != u[0] || c.UID != u[1] || c.UID != u[2] || c.GID != g[0] || c.GID != g[1] || c.GID != g[2] {
		return fmt.Errorf("process %d runs as uid %d, gid %d (real/effective/saved uid %d/%d/%d) and you are uid %d, gid %d: %w; observing another user's process needs root or CAP_SYS_PTRACE, as for perf",
			t.PID, u[1], g[1], u[0], u[1], u[2], c.UID, c.GID, ErrNotPermitted)
	}
	if t.OwnerUID != u[1] {
		return fmt.Errorf("process %d is not dumpable (it runs a setuid program or one with file capabilities, or set PR_SET_DUMPABLE 0): %w; observing it needs root or CAP_SYS_PTRACE, as for perf", t.PID, ErrNotPermitted)
	}
	return nil
}

// CheckAccess reports whether the running process may observe (time or
// sample) process pid: Decide on the process's own credentials, then the
// kernel's own answer for the same access mode, so that a security
// module's refusal is reported too. The kernel is asked with kcmp(2),
// which checks PTRACE_MODE_READ_REALCREDS on the target, perf's mode,
// and nothing else (a file under /proc/PID would add its own permission
// bits); without kcmp (CONFIG_KCMP unset) Decide's answer stands.
func CheckAccess(pid int) error {
	t, err := ReadTarget(pid)
	if err != nil {
		return err
	}
	if err := Decide(Self(), t); err != nil {
		return err
	}
	self := os.Getpid()
	if pid == self {
		return nil
	}
	_, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(self), uintptr(pid), kcmpVM, 0, 0, 0)
	switch errno {
	case 0, unix.ENOSYS:
		return nil
	case unix.ESRCH:
		return fmt.Errorf("process %d: %w (check the PID with ps)", pid, ErrNoProcess)
	case unix.EPERM, unix.EACCES:
		return fmt.Errorf("process %d: the kernel refuses read access to it (%v): %w; a security module (SELinux, AppArmor) or the process's namespace forbids it", pid, errno, ErrNotPermitted)
	}
	return fmt.Errorf("process %d: access check: %v", pid, errno)
}

// kcmpVM is KCMP_VM: compare address spaces (any type does the check).
const kcmpVM = 1
