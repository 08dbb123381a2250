package loader

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
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
	ErrNoProcess = errors.New("no such process")
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
