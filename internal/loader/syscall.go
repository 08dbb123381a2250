// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/symbolize"
)

// SyscallAttach is how system calls are probed.
type SyscallAttach uint32

// The syscall attach methods. SyscallAuto picks SyscallRaw, falling back
// to SyscallTracepoint when raw tracepoints cannot attach.
//
// Why raw_syscalls by default: measured by BenchmarkSyscallOverhead
// (syscall_bench_test.go) on a getppid loop here, the raw method in
// the jiffies clock adds about 230 ns per syscall (empty raw-tracepoint
// programs, the floor: about 185 ns; BPF work about 36 ns), the
// syscalls:sys_enter_NAME / sys_exit_NAME pair about 370 ns. The
// per-syscall events are themselves built on the raw tracepoint: the
// kernel's ftrace_syscall_enter runs for every syscall, looks up the event,
// copies the arguments into a perf record and only then calls the BPF
// program, where the raw program reads the syscall number from its
// arguments and looks it up in a 1024-entry array.
const (
	SyscallAuto       SyscallAttach = 0
	SyscallRaw        SyscallAttach = 1
	SyscallTracepoint SyscallAttach = 2
)

func (m SyscallAttach) String() string {
	switch m {
	case SyscallRaw:
		return "raw_syscalls"
	case SyscallTracepoint:
		return "syscall-tracepoints"
	}
	return "auto"
}

// scMaxNr is SC_MAX_NR in bpf/syscall.bpf.c.
const scMaxNr = 1024

// syscallAliases are the x86-64 syscalls whose kernel entry point (and
// tracepoint) is named differently from the syscall table's name.
var syscallAliases = map[string]string{
	"stat":     "newstat",
	"fstat":    "newfstat",
	"lstat":    "newlstat",
	"uname":    "newuname",
	"umount2":  "umount",
	"sendfile": "sendfile64",
}

// SyscallInfo is one system call of this architecture.
type SyscallInfo struct {
	// Name is the name in the syscall table ("fstat").
	Name string
	// Entry is the kernel's name for it, as in sys_enter_ENTRY and
	// __x64_sys_ENTRY ("newfstat").
	Entry string
	// Nr is the x86-64 syscall number.
	Nr int
}

// KernelSyscalls returns the system calls the running kernel implements,
// sorted by number: the x86-64 syscall table, kept to the entries that
// have a syscalls:sys_enter_* tracepoint in tracefs or, where the kernel
// has no syscall tracepoints, a __x64_sys_* symbol in /proc/kallsyms.
func KernelSyscalls() ([]SyscallInfo, error) {
	have, err := kernelSyscallEntries()
	if err != nil {
		return nil, err
	}
	var out []SyscallInfo
	for nr, name := range syscallTableAMD64 {
		if name == "" {
			continue
		}
		entry := name
		if a, ok := syscallAliases[name]; ok {
			entry = a
		}
		if have[entry] {
			out = append(out, SyscallInfo{Name: name, Entry: entry, Nr: nr})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("found no system call of this kernel in tracefs or /proc/kallsyms (mount tracefs, run as root)")
	}
	return out, nil
}

// kernelSyscallEntries lists the kernel's syscall entry names.
func kernelSyscallEntries() (map[string]bool, error) {
	have := map[string]bool{}
	tfs, _ := features.EnsureTracefs()
	if ents, err := os.ReadDir(filepath.Join(tfs, "events/syscalls")); err == nil {
		for _, e := range ents {
			if n, ok := strings.CutPrefix(e.Name(), "sys_enter_"); ok {
				have[n] = true
			}
		}
		if len(have) > 0 {
			return have, nil
		}
	}
	err := symbolize.EachKallsym(func(f []string) bool {
		if len(f) >= 3 {
			if n, ok := strings.CutPrefix(f[2], "__x64_sys_"); ok {
				have[n] = true
			}
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("list the kernel's system calls: no syscall tracepoints and %w", err)
	}
	return have, nil
}

// SyscallError is an unknown or unimplemented system call name.
type SyscallError struct {
	Name    string
	Kernel  string
	Closest []string
	// InTable is true when the name is an x86-64 syscall that this kernel
	// does not implement (configured out).
	InTable bool
}

func (e *SyscallError) Error() string {
	if e.InTable {
		return fmt.Sprintf("system call %q is not implemented by kernel %s (configured out): pick another with -s", e.Name, e.Kernel)
	}
	msg := fmt.Sprintf("unknown system call %q on kernel %s (x86-64)", e.Name, e.Kernel)
	if len(e.Closest) > 0 {
		return msg + "; closest: " + strings.Join(e.Closest, ", ")
	}
	return msg + "; `-s all` times every one"
}

// ResolveSyscall turns one -s argument into specs: a syscall name as in
// the syscall table ("fstat") or as the kernel names its entry point
// ("newfstat", "sys_read", "__x64_sys_read"), or "all" for every system
// call this kernel implements. m forces an attach method (SyscallAuto:
// let the loader pick).
func ResolveSyscall(arg string, m SyscallAttach) ([]Spec, error) {
	all, err := KernelSyscalls()
	if err != nil {
		return nil, err
	}
	mk := func(s SyscallInfo) Spec {
		return Spec{Kind: KindSyscall, Name: "syscall:" + s.Name, Symbol: s.Entry, Arg: SyscallArg(s.Nr, m)}
	}
	if strings.TrimSpace(arg) == "" {
		return nil, errors.New("empty system call name: give one such as -s read, or -s all")
	}
	if arg == "all" {
		out := make([]Spec, 0, len(all))
		for _, s := range all {
			out = append(out, mk(s))
		}
		return out, nil
	}
	name := strings.TrimPrefix(strings.TrimPrefix(arg, "__x64_"), "sys_")
	for _, s := range all {
		if s.Name == name || s.Entry == name {
			return []Spec{mk(s)}, nil
		}
	}
	e := &SyscallError{Name: arg, Kernel: features.KernelRelease()}
	for _, n := range syscallTableAMD64 {
		if n == name {
			e.InTable = true
		}
	}
	names := make([]string, 0, len(all))
	for _, s := range all {
		names = append(names, s.Name)
	}
	e.Closest = closestNames(name, names, 5)
	return nil, e
}

// SyscallArg packs a syscall number and a forced attach method into
// Spec.Arg for KindSyscall.
func SyscallArg(nr int, m SyscallAttach) uint64 { return uint64(nr) | uint64(m)<<32 }

func splitSyscallArg(a uint64) (int, SyscallAttach) {
	return int(uint32(a)), SyscallAttach(a >> 32)
}

// closestNames returns up to n of names nearest to name: names containing
// it first, then by edit distance (at most a third of its length + 1).
func closestNames(name string, names []string, n int) []string {
	type cand struct {
		s     string
		score int
	}
	var cs []cand
	limit := len(name)/3 + 1
	for _, s := range names {
		switch {
		case strings.Contains(s, name):
			cs = append(cs, cand{s, len(s) - len(name)})
		default:
			if d := levenshtein(name, s); d <= limit {
				cs = append(cs, cand{s, 100 + d})
			}
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].score != cs[j].score {
			return cs[i].score < cs[j].score
		}
		return cs[i].s < cs[j].s
	})
	var out []string
	for _, c := range cs {
		if len(out) == n {
			break
		}
		out = append(out, c.s)
	}
	return out
}

// levenshtein is the optimal-string-alignment distance of a and b: edits
// and transpositions of neighbours ("getppdi" is one step from "getppid").
func levenshtein(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// scRawObjects are the programs and maps of the raw_syscalls method.
type scRawObjects struct {
	Enter   *ebpf.Program `ebpf:"sc_raw_enter"`
	Exit    *ebpf.Program `ebpf:"sc_raw_exit"`
	Targets *ebpf.Map     `ebpf:"sc_targets"`
	Slots   *ebpf.Map     `ebpf:"sc_slots"`
}

func (o *scRawObjects) Close() error {
	return errors.Join(o.Enter.Close(), o.Exit.Close(), o.Targets.Close(), o.Slots.Close())
}

// scTpObjects are the programs and maps of the syscall-tracepoint method.
type scTpObjects struct {
	Enter *ebpf.Program `ebpf:"sc_tp_enter"`
	Exit  *ebpf.Program `ebpf:"sc_tp_exit"`
	Slots *ebpf.Map     `ebpf:"sc_slots"`
}

func (o *scTpObjects) Close() error {
	return errors.Join(o.Enter.Close(), o.Exit.Close(), o.Slots.Close())
}

// sizeSlots sizes the per-thread entry slots of spec (sc_slots, indexed by
// thread id modulo its size): the next power of two at or above pid_max, so
// that thread ids never collide, capped at 2^18 slots (6 MiB). Above that
// two threads in flight at once whose ids collide lose one call as an
// orphan; they never mix their times.
func sizeSlots(spec *ebpf.CollectionSpec) error {
	size := uint32(1 << 15)
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			size = 1 << 12
			for size < uint32(n) && size < 1<<18 {
				size <<= 1
			}
		}
	}
	spec.Maps["sc_slots"].MaxEntries = size
	if err := spec.Variables["sc_slot_mask"].Set(size - 1); err != nil {
		return fmt.Errorf("set sc_slot_mask: %w", err)
	}
	return nil
}

// attachSyscalls attaches the syscall programs for every syscall target.
func attachSyscalls(s *Session, ts []*Target) error {
	tfs, tfsErr := features.EnsureTracefs()
	want := SyscallAuto
	for _, t := range ts {
		if _, m := splitSyscallArg(t.Spec.Arg); m != SyscallAuto {
			want = m
		}
	}
	spec, err := bpf.LoadSyscall()
	if err != nil {
		return fmt.Errorf("read the syscall BPF object: %w", err)
	}
	if want == SyscallTracepoint {
		return attachSyscallTracepoints(s, spec, ts)
	}
	err = attachSyscallsRaw(s, spec, ts)
	if err == nil || want == SyscallRaw {
		return err
	}
	if tfsErr != nil || !fileExists(filepath.Join(tfs, "events/syscalls")) {
		return fmt.Errorf("time system calls: raw tracepoints failed (%v) and the kernel has no syscall tracepoints (CONFIG_FTRACE_SYSCALLS); check `tickprof doctor`", err)
	}
	spec, err2 := bpf.LoadSyscall()
	if err2 != nil {
		return fmt.Errorf("read the syscall BPF object: %w", err2)
	}
	if err2 := attachSyscallTracepoints(s, spec, ts); err2 != nil {
		return fmt.Errorf("time system calls: raw tracepoints failed (%v), syscall tracepoints too: %w", err, err2)
	}
	return nil
}

// loadSyscallObjs sizes spec's entry slots (sizeSlots) and loads it into
// objs (LoadShared), which the session closes.
func loadSyscallObjs(s *Session, spec *ebpf.CollectionSpec, objs io.Closer) error {
	if err := sizeSlots(spec); err != nil {
		return err
	}
	if err := s.LoadShared(spec, objs); err != nil {
		return err
	}
	s.AddCloser(objs)
	return nil
}

func attachSyscallsRaw(s *Session, spec *ebpf.CollectionSpec, ts []*Target) error {
	var objs scRawObjects
	if err := loadSyscallObjs(s, spec, &objs); err != nil {
		return err
	}
	for _, t := range ts {
		nr, _ := splitSyscallArg(t.Spec.Arg)
		if nr < 0 || nr >= scMaxNr {
			return fmt.Errorf("system call %s: number %d out of range", t.Name, nr)
		}
		if err := objs.Targets.Put(uint32(nr), t.Index+1); err != nil {
			return fmt.Errorf("system call %s: set its target slot: %w", t.Name, err)
		}
	}
	return s.linkProbes(func() error {
		ls, err := attachRawSyscalls(objs.Enter, objs.Exit)
		for _, l := range ls {
			s.AddLink(l)
		}
		return err
	})
}

// attachRawSyscalls attaches exit to raw_syscalls:sys_exit, then enter to
// sys_enter, and returns the links made. Exit first: an exit without a
// recorded entry is harmless, while an entry whose exit program is not
// attached yet would leave a call in flight.
func attachRawSyscalls(enter, exit *ebpf.Program) ([]link.Link, error) {
	var ls []link.Link
	for _, p := range []struct {
		name string
		prog *ebpf.Program
	}{{"sys_exit", exit}, {"sys_enter", enter}} {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.name, Program: p.prog})
		if err != nil {
			return ls, fmt.Errorf("attach raw tracepoint raw_syscalls:%s: %w", p.name, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func attachSyscallTracepoints(s *Session, spec *ebpf.CollectionSpec, ts []*Target) error {
	var objs scTpObjects
	if err := loadSyscallObjs(s, spec, &objs); err != nil {
		return err
	}
	return s.linkProbes(func() error {
		for _, t := range ts {
			for _, p := range []struct {
				event string
				prog  *ebpf.Program
			}{{"sys_exit_" + t.Spec.Symbol, objs.Exit}, {"sys_enter_" + t.Spec.Symbol, objs.Enter}} {
				l, err := link.Tracepoint("syscalls", p.event, p.prog, &link.TracepointOptions{Cookie: uint64(t.Index)})
				if err != nil {
					return fmt.Errorf("attach tracepoint syscalls:%s: %w (check `tickprof doctor`)", p.event, err)
				}
				s.AddLink(l)
			}
		}
		return nil
	})
}

// fileExists says whether p names something that exists.
func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
