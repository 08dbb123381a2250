// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"fmt"
	"syscall"

	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/loader"
)

// Target is one resolved target: a function or system call Open attached
// probes to.
type Target struct {
	// Name is the display name ("libc.so.6:malloc", "syscall:read",
	// "vfs_read").
	Name string
	// Kind is how it is probed.
	Kind TargetKind
	// Binary is the file holding a user function as this process opens it
	// (through /proc/PID/root for a process in a container), File its path
	// as the target process sees it; both empty for other kinds.
	Binary, File string
	// Offset is the probe's file offset in Binary (user functions).
	Offset uint64
}

// TargetKind says how a target is probed.
type TargetKind string

// The target kinds.
const (
	// KindUser is a native (C, C++, Rust, ...) function: a uprobe at its
	// entry and a uretprobe.
	KindUser TargetKind = "user"
	// KindGo is a Go function: uprobes at its entry and at its RET
	// instructions (never a uretprobe).
	KindGo TargetKind = "go"
	// KindSyscall is a system call's kernel path.
	KindSyscall TargetKind = "syscall"
	// KindKernel is a kernel function.
	KindKernel TargetKind = "kernel"
	// KindUSDT is a pair of USDT probes (an entry and a return), or a
	// Python function timed through CPython's: uprobes on the probes'
	// nops.
	KindUSDT TargetKind = "usdt"
)

// targetOf is a loader spec as this package shows it, with its display
// name.
func targetOf(sp loader.Spec, name string) Target {
	return Target{Name: name, Kind: TargetKind(sp.Kind.String()), Binary: sp.Binary, File: sp.File, Offset: sp.Offset}
}

// resolve turns the targets into loader specs for process pid (0: every
// process), without duplicates.
func (t Targets) resolve(pid int) ([]loader.Spec, error) {
	var specs []loader.Spec
	for _, u := range t.Users {
		resolve := func(pid int, u string) ([]loader.Spec, error) { return loader.ResolveUser(pid, u, t.MaxProbes) }
		if loader.IsUSDTTarget(u) {
			resolve = loader.ResolveUSDT
		}
		s, err := resolve(pid, u)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	for _, a := range t.Syscalls {
		s, err := loader.ResolveSyscall(a, loader.SyscallAuto)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	if len(t.Kernel) > 0 {
		s, err := loader.ResolveKernelFuncs(t.Kernel, features.AttachMode(t.KernelAttach))
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	return dedupeSpecs(specs), nil
}

// dedupeSpecs drops targets that name a function already given (an alias,
// or a glob and a name that overlap): two probes at one address fire in
// the same order at entry and at exit, which is not how calls nest.
func dedupeSpecs(specs []loader.Spec) []loader.Spec {
	type key struct {
		kind      loader.Kind
		dev, ino  uint64
		file, sym string
		off, arg  uint64
		filter    string // a USDT pair's (py:)
	}
	seen := map[key]bool{}
	out := specs[:0]
	for _, s := range specs {
		k := key{kind: s.Kind, off: s.Offset, arg: s.Arg}
		if s.USDT != nil {
			k.filter = s.USDT.Name + "\x00" + s.USDT.File
		}
		if s.Binary != "" {
			var st syscall.Stat_t
			if err := syscall.Stat(s.Binary, &st); err == nil {
				k.dev, k.ino = st.Dev, st.Ino
			} else {
				k.file = s.Binary
			}
		} else {
			k.sym = s.Symbol
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

// filteredUnderBudget refuses a USDT target filtered in BPF (py:) under an
// overhead budget: its probes fire on every call of the process's
// functions, timed or not, which the budget's cost per timed call does not
// count.
func filteredUnderBudget(specs []loader.Spec, windowed bool) error {
	if !windowed {
		return nil
	}
	for _, sp := range specs {
		if sp.USDT != nil && (sp.USDT.Name != "" || sp.USDT.File != "") {
			return fmt.Errorf("%s cannot be timed under an overhead budget: its probes fire on every Python call of the process, not only the timed function's, and the budget counts the timed calls only", sp.Name)
		}
	}
	return nil
}
