package timing

import (
	"syscall"

	"github.com/tickprof/tickprof/internal/loader"
)

// Resolve turns the targets into loader specs for process pid (0: every
// process), without duplicates.
func (t Targets) Resolve(pid int) ([]loader.Spec, error) {
	var specs []loader.Spec
	for _, u := range t.Users {
		s, err := loader.ResolveUser(pid, u, t.MaxProbes)
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
		s, err := loader.ResolveKernelFuncs(t.Kernel, t.KernelAttach)
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
	}
	seen := map[key]bool{}
	out := specs[:0]
	for _, s := range specs {
		k := key{kind: s.Kind, off: s.Offset, arg: s.Arg}
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
