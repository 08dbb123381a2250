// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/symbolize"
)

// KernelFuncError lists kernel functions that cannot be probed, each with
// the reason, found before anything is attached.
type KernelFuncError struct {
	Method   features.AttachMode
	Problems []string
}

func (e *KernelFuncError) Error() string {
	return fmt.Sprintf("kernel functions not attachable with %s: %s", e.Method, strings.Join(e.Problems, "; "))
}

// ResolveKernelFuncs turns the -k arguments into specs, after picking the
// attach method (mode, or for features.AttachAuto kprobes where the kernel has them,
// else fentry) and checking that every function can be probed that way:
// present in /proc/kallsyms as a function, not on the kprobe blacklist
// (kprobes), present in BTF and patchable by ftrace (fentry). All problems
// are reported together, by name, before anything starts.
func ResolveKernelFuncs(names []string, mode features.AttachMode) ([]Spec, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if mode == "" {
		mode = features.AttachAuto
	}
	m, err := features.ProbeKernelFuncs().KernelFuncMethod(mode)
	if err != nil {
		return nil, err
	}
	c, err := newKfuncCheck(m)
	if err != nil {
		return nil, err
	}
	var problems []string
	var out []Spec
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		if p := c.problem(name); p != "" {
			problems = append(problems, p)
			continue
		}
		arg := uint64(1)
		if m == features.AttachFentry {
			arg = 2
		}
		out = append(out, Spec{Kind: KindKernelFunc, Name: "kernel:" + name, Symbol: name, Arg: arg})
	}
	if len(problems) > 0 {
		return nil, &KernelFuncError{Method: m, Problems: problems}
	}
	return out, nil
}

// kfuncCheck holds what says whether a kernel function can be probed by
// one attach method: the kernel's text symbols, and the kprobe blacklist
// (kprobes) or the ftrace-patchable functions and kernel BTF (fentry).
type kfuncCheck struct {
	text, blacklist, traceable map[string]bool
	kbtf                       *btf.Spec
}

// newKfuncCheck reads what the method m's check needs.
func newKfuncCheck(m features.AttachMode) (*kfuncCheck, error) {
	text, err := kernelTextSymbols()
	if err != nil {
		return nil, err
	}
	c := &kfuncCheck{text: text}
	switch m {
	case features.AttachKprobe:
		c.blacklist = kprobeBlacklist()
	case features.AttachFentry:
		if c.traceable, err = ftraceFunctions(); err != nil {
			return nil, err
		}
		if c.kbtf, err = btf.LoadKernelSpec(); err != nil {
			return nil, fmt.Errorf("fentry needs kernel BTF: %w", err)
		}
	}
	return c, nil
}

// problem says why the kernel function name cannot be probed ("" if it
// can).
func (c *kfuncCheck) problem(name string) string {
	switch {
	case !c.text[name]:
		p := name + ": not a function in /proc/kallsyms (inlined, static and renamed, or absent from this kernel)"
		if cl := closestNames(name, keys(c.text), 5); len(cl) > 0 {
			p += " (closest: " + strings.Join(cl, ", ") + ")"
		}
		return p
	case c.blacklist[name]:
		return name + ": on the kprobe blacklist (the kernel forbids probing it)"
	case c.traceable != nil && !c.traceable[name]:
		return name + ": not in available_filter_functions (notrace or inlined), so fentry cannot attach; try kprobes on a kernel with kprobes"
	case c.kbtf != nil:
		var fn *btf.Func
		if err := c.kbtf.TypeByName(name, &fn); errors.Is(err, btf.ErrNotFound) {
			return name + ": no BTF function record, so fentry cannot attach"
		}
	}
	return ""
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// kernelTextSymbols returns the names of the kernel's functions (text
// symbols of vmlinux; module symbols are left out).
func kernelTextSymbols() (map[string]bool, error) {
	out := map[string]bool{}
	err := symbolize.EachKallsym(func(f []string) bool {
		if len(f) == 3 && (f[1] == "T" || f[1] == "t") {
			out[f[2]] = true
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read kernel symbols: %w", err)
	}
	return out, nil
}

// kprobeBlacklist returns the functions kprobes refuse (empty when the
// list is not readable: the attach itself then reports the refusal).
func kprobeBlacklist() map[string]bool {
	out := map[string]bool{}
	symbolize.EachFields("/sys/kernel/debug/kprobes/blacklist", func(f []string) bool {
		if len(f) == 2 {
			out[f[1]] = true
		}
		return true
	})
	return out
}

// ftraceFunctions returns the functions ftrace can patch (the ones BPF
// trampolines can attach to).
func ftraceFunctions() (map[string]bool, error) {
	tfs, err := features.EnsureTracefs()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(tfs, "available_filter_functions")
	out := map[string]bool{}
	err = symbolize.EachFields(p, func(f []string) bool {
		if len(f) >= 1 {
			out[f[0]] = true
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return out, nil
}

// kfKprobeObjects are the kprobe-method programs.
type kfKprobeObjects struct {
	Entry *ebpf.Program `ebpf:"kf_kprobe_entry"`
	Exit  *ebpf.Program `ebpf:"kf_kprobe_exit"`
}

func (o *kfKprobeObjects) Close() error { return errors.Join(o.Entry.Close(), o.Exit.Close()) }

// kfFentryObjects are one function's fentry/fexit programs.
type kfFentryObjects struct {
	Entry *ebpf.Program `ebpf:"kf_fentry"`
	Exit  *ebpf.Program `ebpf:"kf_fexit"`
}

func (o *kfFentryObjects) Close() error { return errors.Join(o.Entry.Close(), o.Exit.Close()) }

// attachKernelFuncs attaches entry and exit programs to every kernel
// function target, with the method ResolveKernelFuncs chose (Spec.Arg 1:
// kprobe, 2: fentry).
func attachKernelFuncs(s *Session, ts []*Target) error {
	if _, err := features.EnsureTracefs(); err != nil {
		return err
	}
	var kp, fe []*Target
	for _, t := range ts {
		if t.Spec.Arg == 2 {
			fe = append(fe, t)
		} else {
			kp = append(kp, t)
		}
	}
	if len(kp) > 0 {
		spec, err := bpf.LoadKfunc()
		if err != nil {
			return fmt.Errorf("read the kernel-function BPF object: %w", err)
		}
		var objs kfKprobeObjects
		if err := s.LoadShared(spec, &objs); err != nil {
			return err
		}
		s.AddCloser(&objs)
		if err := s.linkProbes(func() error { return linkKprobes(s, &objs, kp) }); err != nil {
			return err
		}
	}
	for _, t := range fe {
		spec, err := bpf.LoadKfunc()
		if err != nil {
			return fmt.Errorf("read the kernel-function BPF object: %w", err)
		}
		spec.Programs["kf_fentry"].AttachTo = t.Spec.Symbol
		spec.Programs["kf_fexit"].AttachTo = t.Spec.Symbol
		if err := spec.Variables["kf_target"].Set(t.Index); err != nil {
			return fmt.Errorf("set kf_target: %w", err)
		}
		var objs kfFentryObjects
		if err := s.LoadShared(spec, &objs); err != nil {
			return fmt.Errorf("load fentry/fexit for %s: %w", t.Spec.Symbol, err)
		}
		s.AddCloser(&objs)
		sym := t.Spec.Symbol
		if err := s.linkProbes(func() error { return linkTracing(s, sym, objs.Exit, objs.Entry) }); err != nil {
			return err
		}
	}
	return nil
}

// linkKprobes links the kprobe-method programs to every target in kp, the
// exit first: an exit without its entry is only an orphan. In windowed
// sessions it runs again for every window (AttachProbes).
func linkKprobes(s *Session, objs *kfKprobeObjects, kp []*Target) error {
	for _, t := range kp {
		opts := &link.KprobeOptions{Cookie: uint64(t.Index)}
		rl, err := link.Kretprobe(t.Spec.Symbol, objs.Exit, opts)
		if err != nil {
			return fmt.Errorf("attach kretprobe to %s: %w (check `tickprof doctor`)", t.Spec.Symbol, err)
		}
		s.AddLink(rl)
		l, err := link.Kprobe(t.Spec.Symbol, objs.Entry, opts)
		if err != nil {
			return fmt.Errorf("attach kprobe to %s: %w (check `tickprof doctor`)", t.Spec.Symbol, err)
		}
		s.AddLink(l)
	}
	return nil
}

// linkTracing links one function's fentry/fexit programs (progs, the exit
// first). A tracing program loaded for a function can be linked again
// after its link is closed, so windowed sessions call this per window.
func linkTracing(s *Session, sym string, progs ...*ebpf.Program) error {
	for _, p := range progs {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return fmt.Errorf("attach BPF trampoline to %s: %w (check `tickprof doctor`)", sym, err)
		}
		s.AddLink(l)
	}
	return nil
}
