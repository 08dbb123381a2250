// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/usdt"
)

// USDT probe pairs (KindUSDT): a call is the time from an entry probe to
// a return probe of the same thread (bpf/usdt.bpf.c), the pairs nesting
// as calls do. Targets are written
//
//	usdt:[BINARY:]PROVIDER:ENTRY,RETURN   two probes named
//	usdt:[BINARY:]PROVIDER:STEM           STEM__entry/STEM__return,
//	                                      STEM__start/STEM__done, ...
//	py:[BINARY:][MODULE.]FUNCTION         CPython's function__entry and
//	                                      function__return, filtered by
//	                                      function name (and module file);
//	                                      on 3.12+ without them, the eval
//	                                      loop (pyeval.go)
//
// BINARY is as for native functions (the process's executable when
// omitted, a library name, or a path). A probe with a semaphore gets its
// reference counter set by the kernel while the probe is attached
// (link.UprobeOptions.RefCtrOffset), so a program that tests it before
// computing the probe's arguments (CPython does) fires it.

// USDTPair is what a KindUSDT target probes.
type USDTPair struct {
	// Entry and Return are the two probes.
	Entry, Return usdt.Probe
	// Name, when set, keeps only the calls whose NameArg-th argument (a
	// string pointer, at both probes) is Name; File, when set, those
	// whose FileArg-th argument is a path ending in File after a '/'.
	Name, File       string
	NameArg, FileArg int
	// Eval, when set, is the eval-loop route of CPython 3.12+
	// (pyeval.go): Entry is _PyEval_EvalFrameDefault, timed with a uprobe
	// and a uretprobe, and the names are read from the frame's code
	// object at these offsets.
	Eval *PyEvalLayout
}

// Python's probes: function__entry and function__return take (filename,
// funcname, lineno).
const (
	pyFileArg = 0
	pyNameArg = 1
)

// Limits of the filter strings (UT_NAME_LEN, UT_FILE_LEN in
// bpf/usdt.bpf.c, less the NUL).
const (
	maxUSDTName = 63
	maxUSDTFile = 127
)

// IsUSDTTarget reports whether a -u target names a USDT pair or a Python
// function rather than a native function.
func IsUSDTTarget(arg string) bool {
	return strings.HasPrefix(arg, "usdt:") || strings.HasPrefix(arg, "py:")
}

// ResolveUSDT resolves a usdt: or py: target (IsUSDTTarget) in process pid
// (0: none; BINARY is then needed).
func ResolveUSDT(pid int, arg string) ([]Spec, error) {
	if rest, ok := strings.CutPrefix(arg, "py:"); ok {
		return resolvePython(pid, arg, rest)
	}
	rest := strings.TrimPrefix(arg, "usdt:")
	parts := strings.Split(rest, ":")
	if len(parts) < 2 || parts[len(parts)-1] == "" || parts[len(parts)-2] == "" {
		return nil, fmt.Errorf("target %q: want usdt:[BINARY:]PROVIDER:ENTRY,RETURN (or PROVIDER:STEM for STEM__entry,STEM__return)", arg)
	}
	names, provider := parts[len(parts)-1], parts[len(parts)-2]
	bin := strings.Join(parts[:len(parts)-2], ":")
	path, display, probes, err := usdtProbes(pid, bin)
	if err != nil {
		return nil, err
	}
	entry, ret, err := usdt.Pair(probes, provider, names)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	name := "usdt:" + provider + ":" + entry.Name + "," + ret.Name
	if bin != "" {
		name = "usdt:" + filepath.Base(display) + ":" + provider + ":" + entry.Name + "," + ret.Name
	}
	return []Spec{usdtSpec(name, path, display, USDTPair{Entry: entry, Return: ret})}, nil
}

// usdtSpec is the spec of a pair in the file at path.
func usdtSpec(name, path, display string, p USDTPair) Spec {
	return Spec{Kind: KindUSDT, Name: name, Binary: path, File: display, Symbol: p.Entry.String(),
		Offset: p.Entry.Offset, Addr: p.Entry.PC, Arg: p.Return.Offset, USDT: &p}
}

// usdtProbes reads the USDT probes of the binary bin of process pid.
func usdtProbes(pid int, bin string) (path, display string, probes []usdt.Probe, err error) {
	path, display, err = proc.ResolveBinary(pid, bin)
	if err != nil {
		return "", "", nil, err
	}
	probes, err = usdt.Read(path)
	if err != nil {
		if errors.Is(err, usdt.ErrNoProbes) {
			return "", "", nil, fmt.Errorf("%s has no USDT probes (it was built without <sys/sdt.h> or dtrace probes)", display)
		}
		return "", "", nil, err
	}
	return path, display, probes, nil
}

// resolvePython resolves py:[BINARY:][MODULE.]FUNCTION: CPython's
// function__entry/function__return pair in the interpreter (the
// executable, or the libpython it maps), filtered by the function's name
// (its code object's co_name) and, with MODULE, by its file (MODULE's dots
// as slashes, .py appended).
func resolvePython(pid int, arg, rest string) ([]Spec, error) {
	bin, fn := proc.SplitTarget(rest)
	if fn == "" {
		return nil, fmt.Errorf("target %q: want py:[BINARY:][MODULE.]FUNCTION", arg)
	}
	p := USDTPair{NameArg: pyNameArg, FileArg: pyFileArg}
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		p.File = strings.ReplaceAll(fn[:i], ".", "/") + ".py"
		fn = fn[i+1:]
	}
	p.Name = fn
	if fn == "" || len(fn) > maxUSDTName || len(p.File) > maxUSDTFile || strings.ContainsAny(fn, "*?[") {
		return nil, fmt.Errorf("target %q: FUNCTION must be a name of 1 to %d characters (no globs), MODULE at most %d", arg, maxUSDTName, maxUSDTFile-3)
	}
	path, display, err := pythonBinary(pid, bin)
	if err != nil {
		return nil, err
	}
	v, vok := pythonVersion(path)
	if vok && v>>16 == 0x030b {
		return nil, fmt.Errorf("%s is CPython 3.11, %w", display, ErrBrokenPythonProbes)
	}
	probes, err := usdt.Read(path)
	if err != nil && !errors.Is(err, usdt.ErrNoProbes) {
		return nil, err
	}
	if p.Entry, p.Return, err = usdt.Pair(probes, "python", "function__entry,function__return"); err != nil {
		if !vok || v>>16 < 0x030c {
			return nil, fmt.Errorf("%s: %w", display, ErrNoPythonProbes)
		}
		if err := pyEvalRoute(pid, path, display, &p); err != nil {
			return nil, err
		}
	}
	return []Spec{usdtSpec("py:"+strings.TrimPrefix(rest, bin+":"), path, display, p)}, nil
}

// ErrNoPythonProbes is wrapped by the error for an interpreter without
// CPython's function__entry/function__return probes.
var ErrNoPythonProbes = errors.New("no function__entry/function__return USDT probes: py: timing needs CPython 3.10 or earlier " +
	"built --with-dtrace (pyenv's and python.org's builds have no probes), or 3.12 or later")

// ErrBrokenPythonProbes is wrapped by the error for CPython 3.11, whose
// function__entry probe fires only for calls from C, not for the calls
// between Python functions, while function__return fires for all
// (CPython issue gh-98894; 3.12 and 3.13 have no function__entry at all,
// gh-110385).
var ErrBrokenPythonProbes = errors.New("whose function__entry USDT probe does not fire for calls between Python functions " +
	"(CPython issue gh-98894): py: timing needs CPython 3.10 or earlier, or 3.15 or later, built --with-dtrace")

// pythonVersion reads PY_VERSION_HEX from the Py_Version constant that
// CPython 3.11 and later export; false when the file has none (3.10 and
// earlier) or it cannot be read.
func pythonVersion(path string) (uint32, bool) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Name != "Py_Version" || s.Size < 4 {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value+4 <= p.Vaddr+p.Filesz {
				var b [4]byte
				if _, err := p.ReadAt(b[:], int64(s.Value-p.Vaddr)); err != nil {
					return 0, false
				}
				return f.ByteOrder.Uint32(b[:]), true
			}
		}
	}
	return 0, false
}

// pythonBinary finds the file holding CPython's eval loop in process pid:
// BINARY when given, else the libpython the process maps (a build with
// --enable-shared), else its executable.
func pythonBinary(pid int, bin string) (path, display string, err error) {
	if bin != "" {
		return proc.ResolveBinary(pid, bin)
	}
	if pid != 0 {
		if maps, err := proc.ReadMaps(pid); err == nil {
			for _, m := range maps {
				if strings.HasPrefix(filepath.Base(m.Path), "libpython") {
					return proc.RootPath(pid, m.Path), m.Path, nil
				}
			}
		}
	}
	if p, d, ok := neededLibpython(pid); ok {
		return p, d, nil
	}
	return proc.ResolveBinary(pid, "")
}

// neededLibpython finds the libpython that process pid's executable needs
// when it is not mapped yet (a command held before exec), through the
// executable's run path ($ORIGIN expanded) under the process's root.
func neededLibpython(pid int) (path, display string, ok bool) {
	if pid == 0 {
		return "", "", false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", "", false
	}
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	needed, _ := f.DynString(elf.DT_NEEDED)
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		paths, _ := f.DynString(tag)
		for _, p := range paths {
			dirs = append(dirs, strings.Split(strings.ReplaceAll(p, "$ORIGIN", filepath.Dir(exe)), ":")...)
		}
	}
	dirs = append(dirs, "/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib")
	for _, n := range needed {
		if !strings.HasPrefix(n, "libpython") {
			continue
		}
		for _, d := range dirs {
			display := filepath.Join(d, n)
			p := proc.RootPath(pid, display)
			if _, err := os.Stat(p); err == nil {
				return p, display, true
			}
		}
	}
	return "", "", false
}

// attachUSDT attaches the USDT programs: for each target an uprobe on its
// return probe's nop and one on its entry probe's, the target's index as
// cookie, the process as filter, the probes' semaphores counted up while
// attached. Every return is attached before any entry (see attachUser).
func attachUSDT(s *Session, ts []*Target) error {
	spec, err := bpf.LoadUsdt()
	if err != nil {
		return fmt.Errorf("read the USDT BPF object: %w", err)
	}
	spec.Maps["ut_targets"].MaxEntries = uint32(len(s.targets))
	spec.Maps["ut_pyeval"].MaxEntries = uint32(len(s.targets))
	var objs bpf.UsdtObjects
	if err := s.LoadShared(spec, &objs); err != nil {
		return err
	}
	s.AddCloser(&objs)
	for _, t := range ts {
		if err := setUSDTFilter(&objs, t); err != nil {
			return err
		}
		echo := objs.TpUsdtEcho
		if t.Spec.USDT.Eval != nil {
			echo = objs.TpPyevalEcho
		}
		s.addEchoSite(t, t.Spec.Binary, t.Spec.USDT.Entry.Offset, echo, nil)
	}
	if err := s.reserveSingleLinks(2 * len(ts)); err != nil {
		return err
	}
	return s.linkUprobes(func() error {
		for _, ret := range []bool{true, false} {
			for _, t := range ts {
				if err := s.attachUSDTProbe(t, ret, &objs); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// attachUSDTProbe attaches target t's return probe (ret) or entry probe;
// on the eval-loop route, a uretprobe or a uprobe on the eval loop.
func (s *Session) attachUSDTProbe(t *Target, ret bool, objs *bpf.UsdtObjects) error {
	p, prog := t.Spec.USDT.Entry, objs.TpUsdtEntry
	if ret {
		p, prog = t.Spec.USDT.Return, objs.TpUsdtReturn
	}
	eval := t.Spec.USDT.Eval != nil
	if eval {
		prog = objs.TpPyevalEntry
		if ret {
			prog = objs.TpPyevalExit
		}
	}
	ex, err := link.OpenExecutable(t.Spec.Binary)
	if err != nil {
		return fmt.Errorf("open %s for uprobes: %w", t.Spec.Binary, err)
	}
	opts := &link.UprobeOptions{Address: p.Offset, PID: s.opts.PID, Cookie: uint64(t.Index), RefCtrOffset: p.SemaphoreOffset}
	var l link.Link
	if eval && ret {
		l, err = ex.Uretprobe(p.String(), prog, opts)
	} else {
		l, err = ex.Uprobe(p.String(), prog, opts)
	}
	if err != nil {
		return uprobeError(t, p.Offset, s.opts.PID, err)
	}
	s.addRoleLink(l, !ret)
	return nil
}

// setUSDTFilter writes target t's filter (and eval-loop layout) for the
// programs.
func setUSDTFilter(objs *bpf.UsdtObjects, t *Target) error {
	v, err := usdtFilter(t.Spec.USDT)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if err := objs.UtTargets.Put(t.Index, &v); err != nil {
		return fmt.Errorf("set the filter of %s: %w", t.Name, err)
	}
	if e := t.Spec.USDT.Eval; e != nil {
		l := bpf.UsdtUtPylayout{FrameCode: e.FrameCode, CodeName: e.CodeName, CodeFile: e.CodeFile, StrState: e.StrState, StrData: e.StrData}
		if err := objs.UtPyeval.Put(t.Index, &l); err != nil {
			return fmt.Errorf("set the frame layout of %s: %w", t.Name, err)
		}
	}
	return nil
}

// usdtFilter is the BPF value of a pair's filter.
func usdtFilter(p *USDTPair) (bpf.UsdtUtTarget, error) {
	var v bpf.UsdtUtTarget
	if p == nil {
		return v, errors.New("no USDT probes given")
	}
	if p.Name != "" {
		v.Filter |= 1
		putCString(v.Name[:], p.Name)
		for side, pr := range []usdt.Probe{p.Entry, p.Return} {
			if p.Eval != nil {
				break // read from the frame's code object
			}
			a, err := usdtArg(pr, p.NameArg)
			if err != nil {
				return v, err
			}
			v.NameArg[side] = a
		}
	}
	if p.File != "" {
		v.Filter |= 2
		v.FileLen = uint32(len(p.File))
		putCString(v.File[:], p.File)
		for side, pr := range []usdt.Probe{p.Entry, p.Return} {
			if p.Eval != nil {
				break
			}
			a, err := usdtArg(pr, p.FileArg)
			if err != nil {
				return v, err
			}
			v.FileArg[side] = a
		}
	}
	return v, nil
}

// putCString writes s into the C char array b (the rest stays zero).
func putCString(b []int8, s string) {
	for i := 0; i < len(s) && i < len(b); i++ {
		b[i] = int8(s[i])
	}
}

// usdtArg is the BPF form of argument i of probe p (a string pointer).
func usdtArg(p usdt.Probe, i int) (bpf.UsdtUtArg, error) {
	if i >= len(p.Args) {
		return bpf.UsdtUtArg{}, fmt.Errorf("probe %s has %d arguments, the filter reads argument %d", p, len(p.Args), i)
	}
	a := p.Args[i]
	if a.Size != 8 {
		return bpf.UsdtUtArg{}, fmt.Errorf("argument %d of probe %s (%d bytes) is not a pointer", i, p, a.Size)
	}
	return bpf.UsdtUtArg{Kind: uint32(a.Kind), Size: uint32(a.Size), RegOff: uint32(a.RegOffset), Value: a.Value}, nil
}

// countKind counts the specs of kind k.
func countKind(specs []Spec, k Kind) int {
	n := 0
	for _, sp := range specs {
		if sp.Kind == k {
			n++
		}
	}
	return n
}
