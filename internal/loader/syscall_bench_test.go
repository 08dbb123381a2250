// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/bpftest"
)

// BenchmarkSyscallOverhead measures what timing a syscall adds, on a tight
// getppid loop in this process: unprobed, with empty raw-tracepoint
// enter/exit programs (the floor), with tickprof's raw_syscalls and
// syscall-tracepoint methods in the jiffies (with and without its clock
// check), dithered tick and ns clocks, and with
// bpftrace's raw_syscalls one-liner when bpftrace is installed. The
// configurations run interleaved for several rounds and the medians are
// reported as ns added per syscall. Run with -benchtime=1x:
//
//	go test -run '^$' -bench SyscallOverhead -benchtime=1x ./internal/loader/
func BenchmarkSyscallOverhead(b *testing.B) {
	bpftest.Require(b)
	const calls, rounds = 200000, 5
	// The loop runs on a locked thread at SCHED_FIFO priority for its
	// ~0.1 s, so that other work on a shared machine does not preempt it.
	loop := func() float64 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rt := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 10}, 0) == nil
		start := time.Now()
		for i := 0; i < calls; i++ {
			unix.Getppid()
		}
		d := time.Since(start)
		if rt {
			unix.SchedSetAttr(0, &unix.SchedAttr{Policy: 0}, 0) // back to SCHED_OTHER
		}
		return float64(d.Nanoseconds()) / calls
	}
	type config struct {
		name  string
		setup func() (io.Closer, error)
	}
	sessionOpts := func(o Options, m SyscallAttach) func() (io.Closer, error) {
		return func() (io.Closer, error) {
			specs, err := ResolveSyscall("getppid", m)
			if err != nil {
				return nil, err
			}
			o.PID = os.Getpid()
			return Open(o, specs)
		}
	}
	session := func(clk Clock, m SyscallAttach) func() (io.Closer, error) {
		return sessionOpts(Options{Clock: clk}, m)
	}
	jiffies := Clock{Kind: ClockJiffies, Tick: 4 * time.Millisecond}
	ns := Clock{Kind: ClockNS}
	// The dithered tick clock (a random grid phase per call) at the jiffy
	// period and at a fine tick, where about 2% of getppid calls cross
	// a tick and write a record.
	tick4ms := Clock{Kind: ClockTick, Tick: 4 * time.Millisecond}
	tick10us := Clock{Kind: ClockTick, Tick: 10 * time.Microsecond}
	configs := []config{
		{"unprobed", nil},
		{"floor-empty-raw-tp", emptyRawTracepoints},
		{"raw-jiffies", session(jiffies, SyscallRaw)},
		{"raw-jiffies-nocheck", sessionOpts(Options{Clock: jiffies, CheckEvery: -1}, SyscallRaw)},
		{"raw-tick:4ms", session(tick4ms, SyscallRaw)},
		{"raw-tick:10us", session(tick10us, SyscallRaw)},
		{"raw-ns", session(ns, SyscallRaw)},
		{"tracepoint-jiffies", session(jiffies, SyscallTracepoint)},
		{"tracepoint-tick:4ms", session(tick4ms, SyscallTracepoint)},
		{"tracepoint-ns", session(ns, SyscallTracepoint)},
	}
	if _, err := exec.LookPath("bpftrace"); err == nil {
		configs = append(configs, config{"bpftrace-raw_syscalls", bpftraceOneLiner})
	}
	// Each probed run is paired with an unprobed run right before it, and
	// the added cost is the difference within the pair: other work on a
	// shared machine shifts both alike. Reported: the median and the
	// minimum difference over the rounds.
	added := map[string][]float64{}
	var base []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for _, c := range configs[1:] {
				loop()
				u := loop()
				base = append(base, u)
				cl, err := c.setup()
				if err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
				loop() // warm up with the probes in place
				added[c.name] = append(added[c.name], loop()-u)
				cl.Close()
			}
		}
	}
	sorted := func(xs []float64) []float64 {
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		return s
	}
	b.ReportMetric(sorted(base)[len(base)/2], "unprobed-ns/call")
	var lines []string
	for _, c := range configs[1:] {
		s := sorted(added[c.name])
		b.ReportMetric(s[len(s)/2], c.name+"-added-ns")
		lines = append(lines, fmt.Sprintf("%-24s %7.0f ns added per getppid (min %4.0f)", c.name, s[len(s)/2], s[0]))
	}
	b.Logf("getppid unprobed %.0f ns; medians of %d paired rounds of %d calls:\n%s",
		sorted(base)[len(base)/2], rounds, calls, strings.Join(lines, "\n"))
}

// emptyRawTracepoints attaches the empty raw_syscalls programs.
func emptyRawTracepoints() (io.Closer, error) {
	spec, err := bpf.LoadSyscall()
	if err != nil {
		return nil, err
	}
	var objs struct {
		Enter *ebpf.Program `ebpf:"sc_empty_enter"`
		Exit  *ebpf.Program `ebpf:"sc_empty_exit"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, err
	}
	c := closers{objs.Enter, objs.Exit}
	ls, err := attachRawSyscalls(objs.Enter, objs.Exit)
	for _, l := range ls {
		c = append(closers{l}, c...)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		c.Close()
	}
	return nil
}

// bpftraceOneLiner starts bpftrace with the usual syscall-latency
// one-liner on raw_syscalls, filtered to this process.
func bpftraceOneLiner() (io.Closer, error) {
	prog := fmt.Sprintf(`tracepoint:raw_syscalls:sys_enter /pid == %d/ { @s[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@s[tid]/ { @ns = hist(nsecs - @s[tid]); delete(@s[tid]); }`, os.Getpid())
	cmd := exec.Command("bpftrace", "-e", prog)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Attaching") {
			go io.Copy(io.Discard, out)
			time.Sleep(200 * time.Millisecond)
			return procCloser{cmd}, nil
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, fmt.Errorf("bpftrace did not attach")
}

type procCloser struct{ cmd *exec.Cmd }

func (p procCloser) Close() error {
	p.cmd.Process.Signal(unix.SIGINT)
	return p.cmd.Wait()
}

// BenchmarkSyscallProgramTime reports the BPF run time per getppid of the
// raw_syscalls enter and exit programs (kernel.bpf_stats_enabled), in the
// jiffies, dithered tick and ns clocks and the ns clock with the quantile
// histograms, next to an empty raw-tracepoint program measured the same way
// (the statistics' own cost, to subtract). -benchtime=Nx repeats the
// configurations in turn.
//
//	go test -run '^$' -bench SyscallProgramTime -benchtime=1x ./internal/loader/
func BenchmarkSyscallProgramTime(b *testing.B) {
	bpftest.Require(b)
	st, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		b.Fatalf("enable BPF run-time statistics: %v", err)
	}
	defer st.Close()
	const calls = 300000
	perRun := func(p *ebpf.Program) float64 {
		ps, err := p.Stats()
		if err != nil || ps.RunCount == 0 {
			b.Fatalf("program statistics: %v (%d runs)", err, ps.RunCount)
		}
		return float64(ps.Runtime.Nanoseconds()) / float64(ps.RunCount)
	}
	work := map[string][]float64{} // BPF work per syscall, per configuration and iteration
	summary := func() {
		ns, q := work["ns"], work["ns+quantiles"]
		if len(ns) == 0 || len(ns) != len(q) {
			return
		}
		d := make([]float64, len(ns))
		for i := range ns {
			d[i] = q[i] - ns[i]
		}
		sort.Float64s(d)
		b.ReportMetric(d[len(d)/2], "quantiles-paired-median-ns/call")
		b.ReportMetric(d[0], "quantiles-paired-min-ns/call")
		b.ReportMetric(d[len(d)-1], "quantiles-paired-max-ns/call")
		b.Logf("quantile histograms, paired by iteration (ns+quantiles - ns): %+.1f ns of BPF work per syscall (median of %d; range %+.1f to %+.1f)",
			d[len(d)/2], len(d), d[0], d[len(d)-1])
	}
	defer summary()
	for i := 0; i < b.N; i++ {
		spec, err := bpf.LoadSyscall()
		if err != nil {
			b.Fatal(err)
		}
		var empty struct {
			Enter *ebpf.Program `ebpf:"sc_empty_enter"`
		}
		if err := spec.LoadAndAssign(&empty, nil); err != nil {
			b.Fatal(err)
		}
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: empty.Enter})
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < calls; j++ {
			unix.Getppid()
		}
		l.Close()
		floor := perRun(empty.Enter)
		empty.Enter.Close()
		b.ReportMetric(floor, "empty-prog-ns/run")
		for _, o := range []Options{
			{Clock: Clock{Kind: ClockJiffies, Tick: 4 * time.Millisecond}},
			{Clock: Clock{Kind: ClockJiffies, Tick: 4 * time.Millisecond}, CheckEvery: -1},
			{Clock: Clock{Kind: ClockTick, Tick: 4 * time.Millisecond}},
			{Clock: Clock{Kind: ClockTick, Tick: 10 * time.Microsecond}},
			{Clock: Clock{Kind: ClockNS}},
			{Clock: Clock{Kind: ClockNS}, Quantiles: true},
		} {
			clk := o.Clock
			name := clk.String()
			if o.Quantiles {
				name += "+quantiles"
			}
			if o.CheckEvery < 0 {
				name += "-nocheck"
			}
			specs, err := ResolveSyscall("getppid", SyscallRaw)
			if err != nil {
				b.Fatal(err)
			}
			o.PID = os.Getpid()
			s, err := Open(o, specs)
			if err != nil {
				b.Fatal(err)
			}
			for j := 0; j < calls; j++ {
				unix.Getppid()
			}
			for _, c := range s.closers {
				if o, ok := c.(*scRawObjects); ok {
					enter, exit := perRun(o.Enter), perRun(o.Exit)
					b.ReportMetric(enter+exit-2*floor, "raw-"+name+"-prog-ns/call")
					work[name] = append(work[name], enter+exit-2*floor)
					b.Logf("%s: enter %.0f ns, exit %.0f ns per run; empty program %.0f ns (statistics' own cost): %.0f ns of BPF work per syscall",
						name, enter, exit, floor, enter+exit-2*floor)
				}
			}
			s.Close()
		}
	}
}
