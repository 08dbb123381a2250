// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"os"

	"github.com/tickprof/tickprof/internal/proc"
)

// Errors a caller may test for with errors.Is.
var (
	// ErrNotRoot: the process lacks the privileges to load BPF programs.
	ErrNotRoot = proc.ErrNotPrivileged
	// ErrNoBTF: the kernel exposes no BTF.
	ErrNoBTF = errors.New("the kernel has no BTF (/sys/kernel/btf/vmlinux): use a kernel built with CONFIG_DEBUG_INFO_BTF=y")
	// ErrNoUprobes: the kernel cannot create uprobes.
	ErrNoUprobes = errors.New("this kernel does not support uprobes (CONFIG_UPROBE_EVENTS): user functions cannot be timed here")
	// ErrNoProcess: the process does not exist (or has exited).
	ErrNoProcess = proc.ErrNoProcess
	// ErrSymbolNotFound: a symbol does not exist in the binary.
	ErrSymbolNotFound = errors.New("symbol not found")
)

// CheckPrivileges reports, as one actionable error, why this process
// cannot load BPF programs: not privileged (proc.CheckPrivileges, the one
// check doctor makes too), or no kernel BTF.
func CheckPrivileges() error {
	if err := proc.CheckPrivileges(); err != nil {
		return err
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return ErrNoBTF
	}
	return nil
}
