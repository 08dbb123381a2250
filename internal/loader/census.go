// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf/link"

	"github.com/tickprof/tickprof/bpf"
)

// SyscallCensus counts the system calls one process makes, by name, while
// it is open (bpf/census.bpf.c on raw_syscalls:sys_enter).
type SyscallCensus struct {
	objs bpf.CensusObjects
	l    link.Link
}

// StartSyscallCensus starts counting the system calls of process pid (0:
// every process).
func StartSyscallCensus(pid int) (*SyscallCensus, error) {
	spec, err := bpf.LoadCensus()
	if err != nil {
		return nil, fmt.Errorf("read the syscall census BPF object: %w", err)
	}
	if err := setConstants(spec, map[string]any{"cs_tgid": uint32(pid)}); err != nil {
		return nil, err
	}
	c := &SyscallCensus{}
	if err := spec.LoadAndAssign(&c.objs, nil); err != nil {
		return nil, loadError(err)
	}
	c.l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: c.objs.CsEnter})
	if err != nil {
		c.objs.Close()
		return nil, fmt.Errorf("attach the syscall census to raw_syscalls:sys_enter: %w", err)
	}
	return c, nil
}

// Counts returns the system calls counted so far by name (numbers without
// a name as "syscall_NR").
func (c *SyscallCensus) Counts() (map[string]uint64, error) {
	out := map[string]uint64{}
	var per []uint64
	it := c.objs.CsCounts.Iterate()
	var nr uint32
	for it.Next(&nr, &per) {
		var sum uint64
		for _, v := range per {
			sum += v
		}
		if sum == 0 {
			continue
		}
		name := fmt.Sprintf("syscall_%d", nr)
		if int(nr) < len(syscallTableAMD64) && syscallTableAMD64[nr] != "" {
			name = syscallTableAMD64[nr]
		}
		out[name] += sum
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read the syscall census: %w", err)
	}
	return out, nil
}

// Close detaches the census.
func (c *SyscallCensus) Close() error {
	c.l.Close()
	return c.objs.Close()
}

// relatedSyscalls are the system calls a library function of one name
// commonly makes instead (glibc and musl on x86-64), or that do the same
// work: the first place to look when a syscall gets no calls.
var relatedSyscalls = map[string][]string{
	"nanosleep":  {"clock_nanosleep"},
	"open":       {"openat", "openat2"},
	"creat":      {"openat"},
	"stat":       {"newfstatat", "statx"},
	"lstat":      {"newfstatat", "statx"},
	"fstat":      {"newfstatat", "statx"},
	"newfstat":   {"newfstatat", "statx"},
	"access":     {"faccessat", "faccessat2"},
	"read":       {"pread64", "readv", "preadv", "preadv2"},
	"write":      {"pwrite64", "writev", "pwritev", "pwritev2"},
	"poll":       {"ppoll"},
	"select":     {"pselect6"},
	"epoll_wait": {"epoll_pwait", "epoll_pwait2"},
	"wait4":      {"waitid"},
	"accept":     {"accept4"},
	"dup2":       {"dup3"},
	"pipe":       {"pipe2"},
	"fork":       {"clone", "clone3"},
	"vfork":      {"clone", "clone3"},
	"clone":      {"clone3"},
	"recv":       {"recvfrom", "recvmsg"},
	"send":       {"sendto", "sendmsg"},
	"getdents":   {"getdents64"},
	"unlink":     {"unlinkat"},
	"rmdir":      {"unlinkat"},
	"rename":     {"renameat", "renameat2"},
	"mkdir":      {"mkdirat"},
	"chmod":      {"fchmodat"},
	"chown":      {"fchownat"},
	"link":       {"linkat"},
	"symlink":    {"symlinkat"},
	"readlink":   {"readlinkat"},
	"utime":      {"utimensat"},
	"utimes":     {"utimensat"},
	"futex":      {"futex_waitv"},
	"signalfd":   {"signalfd4"},
	"eventfd":    {"eventfd2"},
	"sigaction":  {"rt_sigaction"},
	"alarm":      {"setitimer", "timer_settime"},
	"sleep":      {"clock_nanosleep", "nanosleep"},
	"usleep":     {"clock_nanosleep", "nanosleep"},
}

// NoCallsHint says, for a syscall target name ("nanosleep" or
// "syscall:nanosleep") that got no calls, which system calls the process
// made in the census: the related ones first (relatedSyscalls, and those
// whose name contains it or is contained in it), then the most frequent.
// window is how long the census ran.
func NoCallsHint(target string, counts map[string]uint64, window time.Duration) string {
	name := strings.TrimPrefix(target, "syscall:")
	if len(counts) == 0 {
		return fmt.Sprintf("%s had no calls, and the process made no system call at all in %s of watching", target, window.Round(10*time.Millisecond))
	}
	type kv struct {
		name string
		n    uint64
	}
	var all []kv
	for k, v := range counts {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].name < all[j].name
	})
	isRelated := map[string]bool{}
	for _, r := range relatedSyscalls[name] {
		isRelated[r] = true
	}
	var related, top []string
	for _, e := range all {
		if e.name == name {
			continue
		}
		s := fmt.Sprintf("%s %d", e.name, e.n)
		if isRelated[e.name] || strings.Contains(e.name, name) || (len(e.name) >= 4 && strings.Contains(name, e.name)) {
			related = append(related, s)
		} else if len(top) < 5 {
			top = append(top, s)
		}
	}
	msg := fmt.Sprintf("%s had no calls; in %s of watching the process made", target, window.Round(10*time.Millisecond))
	if len(related) > 0 {
		msg += " the related " + strings.Join(related, ", ")
		if len(top) > 0 {
			msg += ", and most often " + strings.Join(top, ", ")
		}
		return msg + " (time those with -s NAME)"
	}
	return msg + " none related to it; most often " + strings.Join(top, ", ")
}

// NoCallsWatch finds out, for the syscall targets of a session that get
// no calls, which system calls the process does make: at the first poll
// where such a target has had no calls, it starts a census
// (StartSyscallCensus) for a second, then closes it. The census adds its own cost to the
// other syscall targets' windows while it runs, which is why it runs only
// then and only briefly.
type NoCallsWatch struct {
	pid     int
	window  time.Duration
	census  *SyscallCensus
	started time.Duration
	counts  map[string]uint64
	ran     time.Duration
	err     error
	done    bool
}

// NewNoCallsWatch returns a watch for process pid (0: every process).
func NewNoCallsWatch(pid int) *NoCallsWatch {
	return &NoCallsWatch{pid: pid, window: time.Second}
}

// Update is called with every poll of s.
func (w *NoCallsWatch) Update(s *Session, p Poll) {
	if w.done {
		return
	}
	if w.census != nil {
		if p.Elapsed-w.started >= w.window {
			w.finish(p.Elapsed)
		}
		return
	}
	if len(noCallSyscalls(s, p)) == 0 {
		return
	}
	w.census, w.err = StartSyscallCensus(w.pid)
	if w.err != nil {
		w.census, w.done = nil, true
		return
	}
	w.started = p.Elapsed
}

func (w *NoCallsWatch) finish(now time.Duration) {
	w.counts, w.err = w.census.Counts()
	w.ran = now - w.started
	w.census.Close()
	w.census, w.done = nil, true
}

// Hints ends the watch and returns one line per syscall target of the
// final poll p without calls: what the process made instead, or why that
// is not known.
func (w *NoCallsWatch) Hints(s *Session, p Poll) []string {
	if w.census != nil {
		w.finish(p.Elapsed)
	}
	var out []string
	for _, name := range noCallSyscalls(s, p) {
		switch {
		case w.err != nil:
			out = append(out, fmt.Sprintf("%s had no calls (could not watch which system calls the process makes: %v)", name, w.err))
		case w.counts == nil:
			out = append(out, fmt.Sprintf("%s had no calls (the run was too short to watch which system calls the process makes)", name))
		default:
			out = append(out, NoCallsHint(name, w.counts, w.ran))
		}
	}
	return out
}

// noCallSyscalls returns the names of s's syscall targets without calls in p.
func noCallSyscalls(s *Session, p Poll) []string {
	var out []string
	for i, t := range s.Targets() {
		if t.Spec.Kind == KindSyscall && i < len(p.Totals) && p.Totals[i].Calls == 0 && p.Totals[i].Orphans == 0 {
			out = append(out, t.Name)
		}
	}
	return out
}
