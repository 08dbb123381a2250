// SPDX-License-Identifier: Apache-2.0

package features

import (
	"bufio"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/tick"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	ebpffeatures "github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bpf"
)

// FeatureID names one kernel capability that tickprof depends on.
type FeatureID string

// The capabilities ProbeFeatures checks, in the order it reports them.
const (
	FeatPrivileges    FeatureID = "privileges"
	FeatMemlock       FeatureID = "memlock"
	FeatBTF           FeatureID = "btf"
	FeatUprobe        FeatureID = "uprobe"
	FeatUretprobe     FeatureID = "uretprobe"
	FeatKprobe        FeatureID = "kprobe"
	FeatKretprobe     FeatureID = "kretprobe"
	FeatFentry        FeatureID = "fentry"
	FeatFexit         FeatureID = "fexit"
	FeatSyscallTP     FeatureID = "syscall_tracepoints"
	FeatRawTP         FeatureID = "raw_tracepoints"
	FeatPerfEvent     FeatureID = "perf_event_sampling"
	FeatRingBuf       FeatureID = "ring_buffer"
	FeatCookie        FeatureID = "bpf_cookie"
	FeatTaskStorage   FeatureID = "task_storage"
	FeatJiffies64     FeatureID = "bpf_jiffies64"
	FeatKtimeGetNs    FeatureID = "bpf_ktime_get_ns"
	FeatTickPeriod    FeatureID = "tick_period"
	FeatTracefs       FeatureID = "tracefs"
	FeatFilterFuncs   FeatureID = "available_filter_functions"
	FeatKernelSymbols FeatureID = "kallsyms"
)

// FeatureResult is what one probe found: whether the capability works for
// this process on this kernel, and a one-line detail (the error when it does
// not, or a measured value when it does).
type FeatureResult struct {
	ID     FeatureID `json:"id"`
	OK     bool      `json:"ok"`
	Detail string    `json:"detail,omitempty"`
}

// Features is the outcome of ProbeFeatures: every capability probed by
// loading (and where it matters attaching) a tiny BPF program, never guessed
// from the kernel version.
type Features struct {
	// Kernel is the running kernel's release (uname -r).
	Kernel string `json:"kernel"`
	// Results holds one entry per FeatureID, in a fixed order.
	Results []FeatureResult `json:"features"`
	// TickPeriod is the measured jiffies period (1/CONFIG_HZ), 0 when it
	// could not be measured.
	TickPeriod time.Duration `json:"tick_period_ns"`
	// KernelConfig holds the options of interest read from /proc/config.gz
	// or /boot/config-RELEASE, empty when neither is readable.
	KernelConfig map[string]string `json:"kernel_config,omitempty"`
	// ConfigSource is the file KernelConfig came from, empty when none
	// was readable.
	ConfigSource string `json:"kernel_config_source,omitempty"`
}

// Get returns the result for id (zero value with OK false when unknown).
func (f *Features) Get(id FeatureID) FeatureResult {
	for _, r := range f.Results {
		if r.ID == id {
			return r
		}
	}
	return FeatureResult{ID: id, Detail: "not probed"}
}

// Has reports whether capability id works here.
func (f *Features) Has(id FeatureID) bool { return f.Get(id).OK }

func (f *Features) add(id FeatureID, err error, okDetail string) {
	r := FeatureResult{ID: id, OK: err == nil, Detail: okDetail}
	if err != nil {
		r.Detail = oneLine(err.Error())
	}
	f.Results = append(f.Results, r)
}

// kernelConfigKeys are the options doctor shows and error messages cite.
var kernelConfigKeys = []string{
	"CONFIG_KPROBES", "CONFIG_KPROBE_EVENTS", "CONFIG_UPROBES", "CONFIG_UPROBE_EVENTS",
	"CONFIG_FUNCTION_TRACER", "CONFIG_DYNAMIC_FTRACE", "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS",
	"CONFIG_FTRACE_SYSCALLS", "CONFIG_BPF_EVENTS", "CONFIG_DEBUG_INFO_BTF", "CONFIG_BPF_JIT",
	"CONFIG_HZ",
}

// ProbeFeatures finds out what this kernel and these privileges allow. It
// mounts tracefs when it is not mounted, raises the memlock limit, then loads
// and attaches tiny programs; it leaves nothing attached behind.
func ProbeFeatures() (*Features, error) {
	f := &Features{Kernel: KernelRelease()}
	f.KernelConfig, f.ConfigSource = readKernelConfig(kernelConfigKeys)

	tfs, tfsErr := EnsureTracefs()
	// Without the privileges every probe below fails, and says so; the
	// memlock limit (which only privileges can raise) is then left alone,
	// and a limit that cannot be raised is one more row, not a failure.
	privErr := proc.CheckPrivileges()
	memErr := errors.New("not raised: this process may not load BPF programs")
	if privErr == nil {
		memErr = rlimit.RemoveMemlock()
		if memErr != nil {
			memErr = fmt.Errorf("raise the memlock rlimit: %w (BPF maps count against it before kernel 5.11 memory accounting; root or CAP_SYS_RESOURCE raises it)", memErr)
		}
	}
	f.add(FeatPrivileges, privErr, "root, CAP_SYS_ADMIN, or CAP_BPF+CAP_PERFMON")
	f.add(FeatMemlock, memErr, "")
	f.add(FeatTracefs, tfsErr, tfs)

	_, btfErr := btf.LoadKernelSpec()
	f.add(FeatBTF, btfErr, "/sys/kernel/btf/vmlinux")

	exe, off, exeErr := entryOffset("/proc/self/exe")
	f.add(FeatUprobe, probeUprobe(exe, off, exeErr, false), "")
	f.add(FeatUretprobe, probeUprobe(exe, off, exeErr, true), "")

	f.add(FeatKprobe, probeKprobe(f, false), "")
	f.add(FeatKretprobe, probeKprobe(f, true), "")
	f.add(FeatFentry, probeFentry(f, ebpf.AttachTraceFEntry, btfErr), "")
	f.add(FeatFexit, probeFentry(f, ebpf.AttachTraceFExit, btfErr), "")

	f.add(FeatSyscallTP, probeSyscallTracepoint(), "syscalls:sys_enter_getppid")
	f.add(FeatRawTP, probeRawTracepoint(), "raw_syscalls sys_enter")
	f.add(FeatPerfEvent, probePerfEvent(), "cpu-clock on CPU 0")
	f.add(FeatRingBuf, ebpffeatures.HaveMapType(ebpf.RingBuf), "")
	f.add(FeatCookie, ebpffeatures.HaveProgramHelper(ebpf.Kprobe, asm.FnGetAttachCookie), "")
	f.add(FeatTaskStorage, probeTaskStorage(), "")
	f.add(FeatJiffies64, ebpffeatures.HaveProgramHelper(ebpf.Kprobe, asm.FnJiffies64), "")
	f.add(FeatKtimeGetNs, ebpffeatures.HaveProgramHelper(ebpf.Kprobe, asm.FnKtimeGetNs), "")

	period, perr := tick.Period(200 * time.Millisecond)
	detail := ""
	if perr == nil {
		f.TickPeriod = period
		detail = fmt.Sprintf("%v (CONFIG_HZ=%.0f)", period.Round(time.Microsecond), 1/period.Seconds())
	}
	f.add(FeatTickPeriod, perr, detail)

	f.add(FeatFilterFuncs, fileReadable(filepath.Join(tfs, "available_filter_functions"), tfsErr), "")
	f.add(FeatKernelSymbols, kallsymsReadable(), "/proc/kallsyms")
	return f, nil
}

// AttachMode says how a kernel function is probed.
type AttachMode string

// Attach modes for kernel functions (--attach).
const (
	AttachAuto   AttachMode = "auto"
	AttachKprobe AttachMode = "kprobe"
	AttachFentry AttachMode = "fentry"
)

// ParseAttachMode parses the --attach flag value.
func ParseAttachMode(s string) (AttachMode, error) {
	switch m := AttachMode(s); m {
	case AttachAuto, AttachKprobe, AttachFentry:
		return m, nil
	}
	return "", fmt.Errorf("unknown attach mode %q: use kprobe, fentry or auto", s)
}

// KernelFuncMethod picks how kernel functions are probed for the requested
// mode: kprobe/kretprobe when the kernel has kprobes, fentry/fexit when it has
// BPF trampolines and no kprobes. When neither works the error names the
// kernel options that are missing.
func (f *Features) KernelFuncMethod(want AttachMode) (AttachMode, error) {
	if err := f.privilegeErr(); err != nil {
		return "", err
	}
	kp := f.Has(FeatKprobe) && f.Has(FeatKretprobe)
	fe := f.Has(FeatFentry) && f.Has(FeatFexit)
	switch want {
	case AttachKprobe:
		if kp {
			return AttachKprobe, nil
		}
		return "", fmt.Errorf("kprobes unavailable on kernel %s (%s): %s; try attaching with fentry",
			f.Kernel, f.configSays("CONFIG_KPROBES"), f.firstFailure(FeatKprobe, FeatKretprobe))
	case AttachFentry:
		if fe {
			return AttachFentry, nil
		}
		return "", fmt.Errorf("fentry/fexit unavailable on kernel %s (%s, needs BTF and BPF trampolines): %s; try attaching with kprobes",
			f.Kernel, f.configSays("CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"), f.firstFailure(FeatFentry, FeatFexit))
	}
	if kp {
		return AttachKprobe, nil
	}
	if fe {
		return AttachFentry, nil
	}
	return "", fmt.Errorf("kernel %s can time no kernel function: neither kprobes (%s) nor fentry (%s; BPF trampolines need %s and BTF) work; use a kernel built with either, or time syscalls with -s",
		f.Kernel, f.configSays("CONFIG_KPROBES"), f.firstFailure(FeatFentry),
		f.configSays("CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"))
}

// SyscallMethod is how syscalls are timed: raw_syscalls tracepoints
// filtered by number where they attach (cheaper, see syscall.go), else the
// per-syscall tracepoints.
func (f *Features) SyscallMethod() (string, error) {
	if err := f.privilegeErr(); err != nil {
		return "", err
	}
	switch {
	case f.Has(FeatRawTP):
		return "raw tracepoint raw_syscalls:sys_enter/sys_exit, filtered by number (per-thread entry slots)", nil
	case f.Has(FeatSyscallTP):
		return "tracepoint syscalls:sys_enter_NAME/sys_exit_NAME", nil
	}
	return "", fmt.Errorf("kernel %s has neither raw tracepoints nor syscall tracepoints (%s): %s",
		f.Kernel, f.configSays("CONFIG_FTRACE_SYSCALLS"), f.firstFailure(FeatRawTP, FeatSyscallTP))
}

// UserFuncMethod is how user functions are timed.
func (f *Features) UserFuncMethod() (string, error) {
	if err := f.privilegeErr(); err != nil {
		return "", err
	}
	if f.Has(FeatUprobe) && f.Has(FeatUretprobe) {
		return "uprobe + uretprobe (Go binaries: uprobes at RET sites)", nil
	}
	if d := f.Get(FeatUprobe).Detail; strings.Contains(d, "CAP_SYS_ADMIN") {
		return "", errors.New(d)
	}
	return "", fmt.Errorf("uprobes unavailable on kernel %s (%s): %s",
		f.Kernel, f.configSays("CONFIG_UPROBES"), f.firstFailure(FeatUprobe, FeatUretprobe))
}

// SamplingMethod is how PC/stack samples are taken.
func (f *Features) SamplingMethod() (string, error) {
	if err := f.privilegeErr(); err != nil {
		return "", err
	}
	if f.Has(FeatPerfEvent) {
		return "perf_event cpu-clock + BPF perf_event program", nil
	}
	return "", fmt.Errorf("perf_event sampling unavailable: %s", f.firstFailure(FeatPerfEvent))
}

// privilegeErr says, when this process could not load BPF programs at all,
// that the kernel's answers are unknown rather than negative.
func (f *Features) privilegeErr() error {
	if r := f.Get(FeatPrivileges); !r.OK && r.Detail != "not probed" {
		return fmt.Errorf("not known: this process may not load BPF programs (%s); run tickprof doctor as root to see what the kernel allows", r.Detail)
	}
	return nil
}

func (f *Features) configSays(key string) string {
	v, ok := f.KernelConfig[key]
	switch {
	case f.ConfigSource == "":
		return key + " unknown: no kernel config readable"
	case !ok:
		return key + " is not set"
	}
	return key + "=" + v
}

func (f *Features) firstFailure(ids ...FeatureID) string {
	for _, id := range ids {
		if r := f.Get(id); !r.OK {
			return string(id) + ": " + r.Detail
		}
	}
	return "ok"
}

// EnsureTracefs returns the tracefs mount point, mounting tracefs at
// /sys/kernel/tracing when no tracefs is mounted. Call it before any
// tracepoint or kprobe attach: the BPF library remembers the first lookup.
func EnsureTracefs() (string, error) {
	for _, p := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return p, nil
		}
	}
	const p = "/sys/kernel/tracing"
	if err := unix.Mount("tracefs", p, "tracefs", 0, ""); err != nil {
		return p, fmt.Errorf("mount tracefs on %s: %w (mount it: mount -t tracefs tracefs %s)", p, err, p)
	}
	return p, nil
}

func emptyProg(pt ebpf.ProgramType, at ebpf.AttachType, attachTo string) (*ebpf.Program, error) {
	return ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		// Set, so that cilium/ebpf does not read /proc/self/mem for it.
		KernelVersion: bpf.KernelVersionCode(),
		Type:          pt,
		AttachType:    at,
		AttachTo:      attachTo,
		License:       "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	}, ebpf.ProgramOptions{LogDisabled: true})
}

// withEmptyProg loads an empty program (emptyProg; what names it in the
// error) and runs try with it, closing it after.
func withEmptyProg(pt ebpf.ProgramType, at ebpf.AttachType, attachTo, what string, try func(*ebpf.Program) error) error {
	prog, err := emptyProg(pt, at, attachTo)
	if err != nil {
		return fmt.Errorf("load %s: %w", what, err)
	}
	defer prog.Close()
	return try(prog)
}

// attached closes a link just made, or returns the error that made none.
func attached(l link.Link, err error) error {
	if err != nil {
		return err
	}
	return l.Close()
}

// entryOffset returns the file offset of path's ELF entry point: a place
// that runs once at process start and never again, so a probe there (even a
// return probe on a Go binary) cannot fire during the check.
func entryOffset(path string) (string, uint64, error) {
	target, err := os.Readlink(path)
	if err != nil {
		target = path
	}
	ef, err := elf.Open(path)
	if err != nil {
		return target, 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && ef.Entry >= p.Vaddr && ef.Entry < p.Vaddr+p.Filesz {
			return target, ef.Entry - p.Vaddr + p.Off, nil
		}
	}
	return target, 0, fmt.Errorf("entry point of %s is in no executable segment", path)
}

func probeUprobe(path string, off uint64, pathErr error, ret bool) error {
	if pathErr != nil {
		return pathErr
	}
	return withEmptyProg(ebpf.Kprobe, ebpf.AttachNone, "", "kprobe-type program", func(prog *ebpf.Program) error {
		ex, err := link.OpenExecutable(path)
		if err != nil {
			return err
		}
		attach := ex.Uprobe
		if ret {
			attach = ex.Uretprobe
		}
		err = attached(attach("", prog, &link.UprobeOptions{Address: off, PID: os.Getpid()}))
		if errors.Is(err, os.ErrPermission) && !proc.HasCap(unix.CAP_SYS_ADMIN) {
			return fmt.Errorf("%w (%v)", proc.ErrUprobeNeedsSysAdmin, err)
		}
		return err
	})
}

// kprobeProbeSymbol is a function every kernel of interest has and that
// kprobes and fentry accept.
const kprobeProbeSymbol = "vfs_read"

func probeKprobe(f *Features, ret bool) error {
	return withEmptyProg(ebpf.Kprobe, ebpf.AttachNone, "", "kprobe-type program", func(prog *ebpf.Program) error {
		attach := link.Kprobe
		if ret {
			attach = link.Kretprobe
		}
		err := attached(attach(kprobeProbeSymbol, prog, nil))
		if err != nil && !pathExists("/sys/bus/event_source/devices/kprobe") && !pathExists(filepath.Join(tracefsDir(), "kprobe_events")) {
			return fmt.Errorf("no kprobe PMU and no kprobe_events (%s)", f.configSays("CONFIG_KPROBES"))
		}
		return err
	})
}

func probeFentry(f *Features, at ebpf.AttachType, btfErr error) error {
	if btfErr != nil {
		return fmt.Errorf("needs kernel BTF: %w", btfErr)
	}
	what := fmt.Sprintf("%s program for %s", at, kprobeProbeSymbol)
	return withEmptyProg(ebpf.Tracing, at, kprobeProbeSymbol, what, func(prog *ebpf.Program) error {
		if err := attached(link.AttachTracing(link.TracingOptions{Program: prog, AttachType: at})); err != nil {
			return fmt.Errorf("attach BPF trampoline (%s): %w", f.configSays("CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"), err)
		}
		return nil
	})
}

func probeSyscallTracepoint() error {
	return withEmptyProg(ebpf.TracePoint, ebpf.AttachNone, "", "tracepoint program", func(prog *ebpf.Program) error {
		return attached(link.Tracepoint("syscalls", "sys_enter_getppid", prog, nil))
	})
}

func probeRawTracepoint() error {
	return withEmptyProg(ebpf.RawTracepoint, ebpf.AttachNone, "", "raw tracepoint program", func(prog *ebpf.Program) error {
		return attached(link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: prog}))
	})
}

func probePerfEvent() error {
	return withEmptyProg(ebpf.PerfEvent, ebpf.AttachNone, "", "perf_event program", attachPerfEvent)
}

// attachPerfEvent attaches prog to a cpu-clock perf event of this process.
func attachPerfEvent(prog *ebpf.Program) error {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: 1000000, // 1 ms period
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("perf_event_open cpu-clock: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		return fmt.Errorf("attach BPF program to perf event: %w", err)
	}
	return nil
}

// probeTaskStorage checks both the map type and that a tracepoint-type
// program may call bpf_task_storage_get (what the syscall programs use).
func probeTaskStorage() error {
	if err := ebpffeatures.HaveMapType(ebpf.TaskStorage); err != nil {
		return err
	}
	return ebpffeatures.HaveProgramHelper(ebpf.RawTracepoint, asm.FnTaskStorageGet)
}

func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// readKernelConfig returns the values of keys in the running kernel's
// config (/proc/config.gz, else /boot/config-RELEASE) and the file read; keys
// that are not set are absent. An unreadable config gives source "".
func readKernelConfig(keys []string) (map[string]string, string) {
	var r io.Reader
	src := "/proc/config.gz"
	if fh, err := os.Open(src); err == nil {
		defer fh.Close()
		if zr, err := gzip.NewReader(fh); err == nil {
			r = zr
		}
	}
	if r == nil {
		src = "/boot/config-" + KernelRelease()
		fh, err := os.Open(src)
		if err != nil {
			return map[string]string{}, ""
		}
		defer fh.Close()
		r = fh
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && want[k] {
			out[k] = v
		}
	}
	if sc.Err() != nil {
		return map[string]string{}, ""
	}
	return out, src
}

func tracefsDir() string {
	for _, p := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if pathExists(filepath.Join(p, "events")) {
			return p
		}
	}
	return "/sys/kernel/tracing"
}

func pathExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func fileReadable(p string, prior error) error {
	if prior != nil {
		return prior
	}
	fh, err := os.Open(p)
	if err != nil {
		return err
	}
	return fh.Close()
}

// kallsymsReadable checks that /proc/kallsyms shows this process the
// addresses of kernel functions (kptr_restrict hides them from the
// unprivileged as zeros).
func kallsymsReadable() error {
	verdict := errors.New("/proc/kallsyms lists no kernel function")
	err := symbolize.EachKallsym(func(f []string) bool {
		if len(f) < 3 || (f[1] != "T" && f[1] != "t") {
			return true
		}
		verdict = nil
		if strings.Trim(f[0], "0") == "" {
			verdict = errors.New("/proc/kallsyms shows zero addresses (kptr_restrict): run as root")
		}
		return false
	})
	if err != nil {
		return err
	}
	return verdict
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// ProbeKernelFuncs probes only what timing kernel functions needs: kprobes and fentry.
func ProbeKernelFuncs() *Features {
	f := &Features{Kernel: KernelRelease()}
	f.KernelConfig, f.ConfigSource = readKernelConfig(kernelConfigKeys)
	_, _ = EnsureTracefs()
	_, btfErr := btf.LoadKernelSpec()
	f.add(FeatBTF, btfErr, "")
	f.add(FeatKprobe, probeKprobe(f, false), "")
	f.add(FeatKretprobe, probeKprobe(f, true), "")
	f.add(FeatFentry, probeFentry(f, ebpf.AttachTraceFEntry, btfErr), "")
	f.add(FeatFexit, probeFentry(f, ebpf.AttachTraceFExit, btfErr), "")
	return f
}
