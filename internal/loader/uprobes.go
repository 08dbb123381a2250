// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	ebpffeatures "github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/symtab"
)

// Large probe sets. A single uprobe link is a perf event: attaching one
// registers one uprobe, and closing one waits for a grace period (about
// 85 ms here), so a glob over a thousand functions took minutes to detach
// one link at a time. Kernels 6.6 and later have multi-uprobe links
// (BPF_TRACE_UPROBE_MULTI): one link holds every offset of one binary for
// one program, with one BPF cookie per offset, and is attached and
// detached in one system call, the grace periods of its uprobes batched.
// Older kernels get single links, attached one by one (a cancellable
// loop) and detached by a pool of closers in parallel, whose grace periods
// overlap.

// closeWorkers is how many links are closed at once. Each close of a
// uprobe perf event waits for RCU grace periods, mostly under one kernel
// mutex (event_mutex): closers in parallel cut the time of one at a time
// by a third to a half here (118 links: 20.8 s one by one, 13.7 s with 8,
// 10.6 s with 64, on a loaded 2-CPU 6.18 machine). A signal waits for the
// closes under way (closeParallel), so 8 bounds that wait near 1.5 s.
const closeWorkers = 8

// MaxSingleLinks is the most single uprobe links a session attaches. At
// 85-220 ms per link to detach (measured here: 4,398 links took 511 s with
// 64 closers; 100 links 20-22 s with 8, on a machine at load 25-30), more
// would keep a run's overhead past 10 s (64 take 5-14 s). Kernels with multi-uprobe links
// (6.6+) have no such limit: 4,398 probes attach in 0.7 s and detach in
// 0.3 s (6.7-9.7 s and 1.1-1.2 s at load 30).
const MaxSingleLinks = 64

// multiChunk is the most offsets in one multi-uprobe link. Attaching a
// link is one system call, which a signal cannot interrupt (1,024 offsets
// take 0.1-0.4 s on a loaded machine), and closing one waits for a grace
// period (0.1-0.2 s), one link after another when the kernel closes them
// at a SIGKILL: 5,000 probes make 6 links.
const multiChunk = 1024

// screenChunk is the most offsets screened at once (screenUprobes): the
// screen's links are closed at once, so smaller sets only make a signal
// wait less.
const screenChunk = 512

// uprobeReq is one u(ret)probe of a target.
type uprobeReq struct {
	t      *Target
	binary string
	offset uint64
	cookie uint64
}

// Skipped is a function left out of a session because the kernel cannot
// probe its first instruction.
type Skipped struct {
	// Name is the target's display name.
	Name string
	// Reason says why.
	Reason string
}

// ErrUnprobeable is wrapped by the error for a function, named by itself
// rather than by a glob, whose probe site the kernel cannot probe.
var ErrUnprobeable = errors.New("the kernel cannot place a uprobe there")

// HaveUprobeMulti reports whether the kernel has multi-uprobe links
// (Linux 6.6+), with the reason when it has not.
func HaveUprobeMulti() error {
	return ebpffeatures.HaveBPFLinkUprobeMulti()
}

// multiObjects loads the uprobe.multi programs into the session once; nil
// when the kernel has no multi-uprobe links or Options.SingleLinks is set.
func (s *Session) multiObjects() *bpf.UmultiObjects {
	if s.opts.SingleLinks || s.noMulti {
		return nil
	}
	if s.umulti != nil {
		return s.umulti
	}
	if HaveUprobeMulti() != nil {
		s.noMulti = true
		return nil
	}
	if s.umultiSpec == nil {
		s.umultiSpec = &umultiSpec{}
	}
	spec, err := s.umultiSpec.get()
	if err != nil {
		s.noMulti = true
		return nil
	}
	objs := &bpf.UmultiObjects{}
	if err := s.LoadShared(spec, objs); err != nil {
		s.noMulti = true
		return nil
	}
	s.AddCloser(objs)
	s.umulti = objs
	return objs
}

// LinkKind says which kind of uprobe links the session uses: "multi"
// (one multi-uprobe link per binary and side), "single" (one link per
// probe) or "" when it attached no user function.
func (s *Session) LinkKind() string { return s.linkKind }

// attachUprobes attaches prog (or, when the kernel has them, multiProg in
// one multi-uprobe link per binary) at every request; ret selects
// uretprobes. The links are kept as entry or exit links for Detach.
func (s *Session) attachUprobes(ctx context.Context, reqs []uprobeReq, ret, entry bool, prog, multiProg *ebpf.Program) error {
	if len(reqs) == 0 {
		return nil
	}
	if multiProg != nil {
		s.linkKind = "multi"
		bins, byBin := groupBy(reqs, func(r uprobeReq) string { return r.binary })
		for _, bin := range bins {
			if err := s.attachMulti(ctx, bin, byBin[bin], ret, entry, multiProg); err != nil {
				return err
			}
		}
		return nil
	}
	s.linkKind = "single"
	exes := map[string]*link.Executable{}
	for _, r := range reqs {
		if err := ctx.Err(); err != nil {
			return err
		}
		ex := exes[r.binary]
		if ex == nil {
			var err error
			ex, err = link.OpenExecutable(r.binary)
			if err != nil {
				return fmt.Errorf("open %s for uprobes: %w", r.binary, err)
			}
			exes[r.binary] = ex
		}
		opts := &link.UprobeOptions{Address: r.offset, PID: s.opts.PID, Cookie: r.cookie}
		var l link.Link
		var err error
		if ret {
			l, err = ex.Uretprobe(r.t.Spec.Symbol, prog, opts)
		} else {
			l, err = ex.Uprobe(r.t.Spec.Symbol, prog, opts)
		}
		if err != nil {
			return uprobeError(r.t, r.offset, s.opts.PID, err)
		}
		s.addRoleLink(l, entry)
	}
	return nil
}

// attachMulti attaches multiProg at the requests all of binary bin, in
// multi-uprobe links of at most multiChunk addresses.
func (s *Session) attachMulti(ctx context.Context, bin string, all []uprobeReq, ret, entry bool, multiProg *ebpf.Program) error {
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return fmt.Errorf("open %s for uprobes: %w", bin, err)
	}
	for len(all) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		rs := all[:min(multiChunk, len(all))]
		all = all[len(rs):]
		opts := &link.UprobeMultiOptions{PID: uint32(s.opts.PID)}
		for _, r := range rs {
			opts.Addresses = append(opts.Addresses, r.offset)
			opts.Cookies = append(opts.Cookies, r.cookie)
		}
		var l link.Link
		if ret {
			l, err = ex.UretprobeMulti(nil, multiProg, opts)
		} else {
			l, err = ex.UprobeMulti(nil, multiProg, opts)
		}
		if err != nil {
			if len(rs) == 1 {
				return uprobeError(rs[0].t, rs[0].offset, s.opts.PID, err)
			}
			return fmt.Errorf("attach %d uprobes to %s in one multi-uprobe link: %w", len(rs), bin, linkErr(err))
		}
		s.addRoleLink(l, entry)
	}
	return nil
}

// reserveSingleLinks counts n more single uprobe links against
// MaxSingleLinks.
func (s *Session) reserveSingleLinks(n int) error {
	if s.opts.Windowed {
		return nil // attached and detached window by window, in parallel
	}
	s.singleLinks += n
	return singleLinkCap(s.opts, s.singleLinks)
}

// checkSingleLinkCap refuses, before any program is loaded, a probe set
// whose native user functions would need more than MaxSingleLinks single
// uprobe links: single links were asked for, or the kernel has no
// multi-uprobe links. reserveSingleLinks checks again at attach time, for
// a kernel whose multi-uprobe programs fail to load.
func checkSingleLinkCap(opts Options, specs []Spec) error {
	if opts.Windowed || (!opts.SingleLinks && HaveUprobeMulti() == nil) {
		return nil
	}
	n := 0
	for _, sp := range specs {
		if sp.Kind == KindUser {
			n += 2
		}
	}
	n += 2 * countKind(specs, KindUSDT) // always single links (usdt.go)
	return singleLinkCap(opts, n)
}

// singleLinkCap is the error for n single uprobe links past MaxSingleLinks.
func singleLinkCap(opts Options, n int) error {
	if n <= MaxSingleLinks {
		return nil
	}
	why := "this kernel has no multi-uprobe links (Linux 6.6+)"
	if opts.SingleLinks {
		why = "single links were asked for"
	}
	return fmt.Errorf("%w: %s, and detaching more than %d single uprobes takes 85-220 ms each; time fewer functions (a narrower glob) or use a kernel from 6.6 on", ErrTooManyProbes, why, MaxSingleLinks)
}

// ErrTooManyProbes is wrapped by the error for a probe set too large to
// attach with single links.
var ErrTooManyProbes = errors.New("too many uprobes for single links")

// linkErr names the errno of the kernel's refusals that mean an
// instruction cannot be probed.
func linkErr(err error) error {
	if errors.Is(err, errnoNotSupp) {
		return fmt.Errorf("%w (errno 524: %v)", ErrUnprobeable, err)
	}
	return err
}

// addRoleLink keeps a link as an entry link (detached first) or an exit
// link (detached after every entry link).
func (s *Session) addRoleLink(l link.Link, entry bool) {
	s.noteOwnLink(l)
	if entry {
		s.entryLinks = append(s.entryLinks, l)
	} else {
		s.exitLinks = append(s.exitLinks, l)
	}
}

// AddEntryLink keeps a link that pushes entries (a uprobe at a function's
// entry) until Detach, which closes every entry link, in parallel, before
// any other link: once no entry can be pushed, exits still complete the
// calls in flight.
func (s *Session) AddEntryLink(l link.Link) { s.addRoleLink(l, true) }

// AddExitLink keeps a link that pops entries until Detach, which closes
// exit links in parallel after every entry link and before the links of
// AddLink.
func (s *Session) AddExitLink(l link.Link) { s.addRoleLink(l, false) }

// closeParallel closes links with up to closeWorkers at once. When ctx
// ends it stops starting closes, waits for those under way (a thread
// killed in the middle of a close can leave breakpoints behind, see
// HandOff) and returns the links it did not close with ctx's error.
func closeParallel(ctx context.Context, ls []link.Link) ([]link.Link, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	work := make(chan link.Link)
	var wg sync.WaitGroup
	for range min(closeWorkers, len(ls)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				l.Close()
			}
		}()
	}
	for i, l := range ls {
		select {
		case work <- l:
		case <-ctx.Done():
			close(work)
			wg.Wait()
			return ls[i:], ctx.Err()
		}
	}
	close(work)
	wg.Wait()
	return nil, nil
}

// screenUprobes checks, before anything is attached, that the kernel can
// probe the first instruction at every user-function target (the uprobe
// instruction analysis refuses, among others, lock-prefixed instructions,
// segment-override prefixes, instructions that mask exceptions and
// opcodes it cannot single-step or emulate, errno 524). Where the kernel
// has multi-uprobe links the kernel itself decides: the binary is mapped
// into this process and a multi-uprobe link limited to this process is
// attached at every offset and closed again (our copy is never run);
// when that fails, halving finds the refused offsets. Elsewhere a static
// check of the instruction's prefixes and opcode stands in (symtab
// UprobeRefusal). A process or a command held before exec (whose
// libraries are not mapped yet) are screened alike.
//
// Targets from a glob that cannot be probed are returned as skipped; a
// function named by itself is an error.
func screenUprobes(ctx context.Context, specs []Spec, useKernel bool, um *umultiSpec) (kept []Spec, skipped []Skipped, err error) {
	var user []int
	for i, sp := range specs {
		if sp.Kind == KindUser {
			user = append(user, i)
		}
	}
	bins, byBin := groupBy(user, func(i int) string { return specs[i].Binary })
	reason := make(map[int]string)
	var checker *ebpf.Program
	if useKernel && len(bins) > 0 {
		checker, err = loadChecker(um)
		if err != nil {
			checker = nil // fall back to the static check
		} else {
			defer checker.Close()
		}
	}
	for _, bin := range bins {
		idx := byBin[bin]
		static, err := staticScreen(bin, specs, idx)
		if err != nil {
			return nil, nil, err
		}
		for i, r := range static {
			reason[i] = r
		}
		if checker == nil {
			continue
		}
		var rest []int
		for _, i := range idx {
			if _, bad := reason[i]; !bad {
				rest = append(rest, i)
			}
		}
		bad, err := kernelScreen(ctx, checker, bin, specs, rest)
		if err != nil {
			return nil, nil, err
		}
		for i, r := range bad {
			reason[i] = r
		}
	}
	for i, sp := range specs {
		r, bad := reason[i]
		if !bad {
			kept = append(kept, sp)
			continue
		}
		if sp.Glob == "" {
			return nil, nil, fmt.Errorf("%s (%s offset %#x) %w: %s; time its callers instead", sp.Name, sp.File, sp.Offset, ErrUnprobeable, r)
		}
		skipped = append(skipped, Skipped{Name: sp.Name, Reason: r})
	}
	return kept, skipped, nil
}

// staticScreen reads the first instruction of every target idx of one
// binary and returns the reasons the kernel would refuse it.
func staticScreen(bin string, specs []Spec, idx []int) (map[int]string, error) {
	f, err := os.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("open %s to check its probe sites: %w", bin, err)
	}
	defer f.Close()
	out := map[int]string{}
	buf := make([]byte, 16)
	for _, i := range idx {
		n, err := f.ReadAt(buf, int64(specs[i].Offset))
		if n == 0 && err != nil {
			return nil, fmt.Errorf("read the probe site of %s in %s: %w", specs[i].Name, bin, err)
		}
		if r := symtab.UprobeRefusal(buf[:n]); r != "" {
			out[i] = r
		}
	}
	return out, nil
}

// umultiSpec reads umulti.bpf.c's object on first use and keeps it: the
// kernel screen's checker and the session's programs come from the same
// read (each read parses the object's ELF and BTF: several ms).
type umultiSpec struct {
	spec *ebpf.CollectionSpec
	err  error
	read bool
}

// get returns the object, read on the first call. Loading a program from
// it leaves it as read (ebpf.NewProgram copies the instructions).
func (u *umultiSpec) get() (*ebpf.CollectionSpec, error) {
	if !u.read {
		u.spec, u.err = bpf.LoadUmulti()
		u.read = true
	}
	return u.spec, u.err
}

// release drops the object read: the next get reads it again.
func (u *umultiSpec) release() {
	if u != nil {
		u.spec, u.err, u.read = nil, nil, false
	}
}

// loadChecker loads the program the kernel screen attaches: an empty
// uprobe.multi program (never run: the probes sit in this process's own
// mapping of the binary, which it never executes).
func loadChecker(um *umultiSpec) (*ebpf.Program, error) {
	spec, err := um.get()
	if err != nil {
		return nil, err
	}
	ps := spec.Programs["tp_check_multi"]
	if ps == nil {
		return nil, errors.New("no tp_check_multi program")
	}
	return ebpf.NewProgram(ps)
}

// kernelScreen maps bin into this process and finds, with multi-uprobe
// links limited to this process, the targets idx whose probe site the
// kernel refuses.
func kernelScreen(ctx context.Context, checker *ebpf.Program, bin string, specs []Spec, idx []int) (map[int]string, error) {
	out := map[int]string{}
	if len(idx) == 0 {
		return out, nil
	}
	mem, err := mapExecutable(bin)
	if err != nil || mem == nil {
		return out, err
	}
	defer unix.Munmap(mem)
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		return nil, fmt.Errorf("open %s for uprobes: %w", bin, err)
	}
	sc := &siteScreen{ctx: ctx, ex: ex, checker: checker, bin: bin, specs: specs, pid: uint32(os.Getpid()), refused: out}
	for len(idx) > 0 {
		n := min(screenChunk, len(idx))
		if err := sc.bisect(idx[:n]); err != nil {
			return nil, err
		}
		idx = idx[n:]
	}
	return out, nil
}

// mapExecutable maps bin into this process, executable, so that uprobes
// limited to this process can be tried on it; nil without an error when
// the file system forbids it (mounted noexec: the kernel cannot be asked).
func mapExecutable(bin string) ([]byte, error) {
	f, err := os.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("open %s to check its probe sites: %w", bin, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("open %s to check its probe sites: empty or unreadable", bin)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil
	}
	return mem, nil
}

// siteScreen tries probe sites of one binary in multi-uprobe links on this
// process (pid); refused collects the sites the kernel refuses, by index
// in specs, with the reason.
type siteScreen struct {
	ctx     context.Context
	ex      *link.Executable
	checker *ebpf.Program
	bin     string
	specs   []Spec
	pid     uint32
	refused map[int]string
}

// try attaches one link at the sites set and closes it (in the background).
func (sc *siteScreen) try(set []int) error {
	opts := &link.UprobeMultiOptions{PID: sc.pid}
	for _, i := range set {
		opts.Addresses = append(opts.Addresses, sc.specs[i].Offset)
	}
	l, err := sc.ex.UprobeMulti(nil, sc.checker, opts)
	if err != nil {
		return err
	}
	// The kernel took every site: that is the answer. Closing the link
	// waits for a grace period (0.2 s on a loaded machine, most of a
	// one-function run's start), which nothing here needs to wait for.
	go func() { _ = l.Close() }()
	return nil
}

// bisect finds the refused sites of set by halving the sets the kernel
// refuses.
func (sc *siteScreen) bisect(set []int) error {
	if err := sc.ctx.Err(); err != nil {
		return err
	}
	err := sc.try(set)
	if err == nil {
		return nil
	}
	if !refused(err) {
		return fmt.Errorf("check the probe sites in %s: %w", sc.bin, err)
	}
	if len(set) == 1 {
		sc.refused[set[0]] = refusalReason(err)
		return nil
	}
	h := len(set) / 2
	if err := sc.bisect(set[:h]); err != nil {
		return err
	}
	return sc.bisect(set[h:])
}

// refused reports whether a link error is the kernel refusing to probe an
// instruction (or to read one: a site past the mapped text).
func refused(err error) bool {
	return errors.Is(err, errnoNotSupp) || errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EFAULT)
}

func refusalReason(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		switch en {
		case errnoNotSupp:
			return "the kernel cannot single-step or emulate its first instruction (errno 524)"
		case unix.ENOEXEC:
			return "the kernel cannot decode its first instruction"
		}
		return fmt.Sprintf("the kernel refused a uprobe there (%v)", en)
	}
	return "the kernel refused a uprobe there: " + err.Error()
}

// FormatSkipped is one line naming the skipped functions (at most max of
// them, then a count) with their reasons grouped.
func FormatSkipped(sk []Skipped, max int) string {
	byReason := map[string][]string{}
	var reasons []string
	for _, s := range sk {
		if byReason[s.Reason] == nil {
			reasons = append(reasons, s.Reason)
		}
		byReason[s.Reason] = append(byReason[s.Reason], s.Name)
	}
	sort.Strings(reasons)
	var parts []string
	for _, r := range reasons {
		names := byReason[r]
		if len(names) > max {
			names = append(names[:max:max], fmt.Sprintf("%d more", len(byReason[r])-max))
		}
		parts = append(parts, strings.Join(names, ", ")+": "+r)
	}
	return strings.Join(parts, "; ")
}

// errnoNotSupp is the kernel's internal ENOTSUPP (524), which uprobe
// registration returns for an instruction it cannot probe.
const errnoNotSupp = syscall.Errno(524)
