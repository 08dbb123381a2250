package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/proc"
)

// Errors a caller may test for with errors.Is.
var (
	// ErrNotRoot: the process lacks the privileges to load BPF programs.
	ErrNotRoot = errors.New("loading BPF programs needs root (or CAP_BPF and CAP_PERFMON): run with sudo")
	// ErrNoBTF: the kernel exposes no BTF.
	ErrNoBTF = errors.New("the kernel has no BTF (/sys/kernel/btf/vmlinux): use a kernel built with CONFIG_DEBUG_INFO_BTF=y")
	// ErrNoUprobes: the kernel cannot create uprobes.
	ErrNoUprobes = errors.New("this kernel does not support uprobes (CONFIG_UPROBE_EVENTS): user functions cannot be timed here")
	// ErrNoProcess: the process does not exist (or has exited).
	ErrNoProcess = proc.ErrNoProcess
	// ErrGoBinary: a Go executable cannot be timed with uretprobes.
	ErrGoBinary = errors.New("is a Go executable: uretprobes corrupt Go stacks, so tickprof needs RET-site probes for Go, which this build does not include")
	// ErrKindUnsupported: no attach method is registered for a target kind.
	ErrKindUnsupported = errors.New("not supported by this build of tickprof")
	// ErrSymbolNotFound: a symbol does not exist in the binary.
	ErrSymbolNotFound = errors.New("symbol not found")
)

// CheckPrivileges reports, as one actionable error, why this process
// cannot load BPF programs: not root, or no kernel BTF.
func CheckPrivileges() error {
	if os.Geteuid() != 0 {
		var caps unix.CapUserData
		// Without root, accept CAP_BPF + CAP_PERFMON (capability bits 39, 38).
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err == nil {
			caps = data[1]
		}
		const capPerfmon, capBPF = 38 - 32, 39 - 32
		if caps.Effective&(1<<capBPF) == 0 || caps.Effective&(1<<capPerfmon) == 0 {
			return ErrNotRoot
		}
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return ErrNoBTF
	}
	return nil
}

// CheckProcess reports whether process pid exists, is not a zombie and is
// not a kernel thread (each with its own reason).
func CheckProcess(pid int) error {
	t, err := proc.ReadTarget(pid)
	if err != nil {
		return err
	}
	return proc.Decide(proc.Creds{Ptrace: true}, t)
}

// CheckAccess reports whether this process may time or sample process
// pid: it exists, is a user process, and the caller passes the access
// check perf applies (proc.CheckAccess: root or CAP_SYS_PTRACE, or the
// same user and a dumpable process). CAP_BPF and CAP_PERFMON alone do not
// let a user observe another user's process.
func CheckAccess(pid int) error { return proc.CheckAccess(pid) }

// procErr explains why a file of process pid (its executable, its maps)
// could not be read: the process is gone, is a kernel thread, or may not
// be read; never "no such process" for a process that exists.
func procErr(pid int, what string, err error) error {
	if cerr := CheckProcess(pid); cerr != nil {
		return cerr
	}
	if errors.Is(err, fs.ErrPermission) {
		if aerr := CheckAccess(pid); aerr != nil {
			return aerr
		}
		return fmt.Errorf("process %d: cannot read its %s: %w", pid, what, err)
	}
	return fmt.Errorf("process %d: cannot read its %s: %w", pid, what, err)
}
