// SPDX-License-Identifier: Apache-2.0

// Command bench-unwind measures how complete tickprof's user stacks are and
// what unwinding costs, on Debian's sqlite3 and redis-server under load and on
// a C++ program built -O2 -fomit-frame-pointer, against perf record
// --call-graph dwarf on the same workloads. It prints a Markdown section.
//
//	bench-unwind -tickprof bin/tickprof -dir bench/sample-unwind/workload [-perf] [-cost]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// mainFuncs are the frames a complete stack of a process's main thread
// passes: main itself, or (where main's symbol is stripped, as in Debian's
// sqlite3) the libc frame that calls it.
var mainFuncs = []string{"main", "__libc_start_call_main", "__libc_start_main"}

// rootFuncs add the start of other threads.
var rootFuncs = append([]string{"start_thread", "clone3", "__clone3", "clone", "__clone"}, mainFuncs...)

type bench struct {
	tickprof string
	dir      string
	tmp      string
	freq     int
	perf     bool
	extra    []string // extra tickprof sample flags
	cxx      string
	sqlFile  string
	rounds   int
}

func main() {
	var b bench
	var workloads, extra string
	var cost bool
	var reps int
	tp := os.Getenv("TICKPROF")
	if tp == "" {
		tp = "bin/tickprof"
	}
	flag.StringVar(&b.tickprof, "tickprof", tp, "tickprof binary (default $TICKPROF or bin/tickprof)")
	flag.StringVar(&b.dir, "dir", "bench/sample-unwind/workload", "directory of cxx.cc and sqlite.sql")
	flag.IntVar(&b.freq, "F", 999, "sampling frequency (Hz)")
	flag.BoolVar(&b.perf, "perf", true, "compare with perf record --call-graph dwarf")
	flag.StringVar(&workloads, "workloads", "sqlite3,redis-server,cxx", "workloads whose stacks are compared with perf (none: only the cost measurements)")
	flag.StringVar(&extra, "sample-flags", "", "extra flags for tickprof sample (space separated)")
	flag.BoolVar(&cost, "cost", true, "also measure the target slowdown at 99 and 999 Hz")
	var tables, bpftime bool
	flag.BoolVar(&tables, "tables", true, "also measure unwind-table build time and memory")
	flag.BoolVar(&bpftime, "bpftime", true, "also measure the sampling program's run time per sample")
	flag.IntVar(&reps, "reps", 3, "repetitions of each cost configuration (interleaved)")
	flag.IntVar(&b.rounds, "rounds", 500, "rounds of the C++ workload")
	flag.Parse()
	if extra != "" {
		b.extra = strings.Fields(extra)
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "bench-unwind-"); err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(b.tmp)
	if err := b.prepare(); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Sampling at %d Hz; a stack is complete when it reaches `main` (shares with 95%% intervals).\n\n", b.freq)
	for _, w := range strings.Split(workloads, ",") {
		if w == "" || w == "none" {
			continue
		}
		if err := b.coverage(w); err != nil {
			log.Printf("%s: %v", w, err)
		}
	}
	if cost {
		if err := b.cost(reps); err != nil {
			log.Fatal(err)
		}
	}
	if bpftime {
		if err := b.bpfTime(reps); err != nil {
			log.Fatal(err)
		}
	}
	if tables {
		tableCost()
	}
}

// prepare builds the C++ program and the sqlite3 script.
func (b *bench) prepare() error {
	b.cxx = filepath.Join(b.tmp, "cxx")
	out, err := exec.Command("g++", "-O2", "-fomit-frame-pointer", "-o", b.cxx, filepath.Join(b.dir, "cxx.cc")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("build cxx.cc: %v: %s", err, out)
	}
	sql, err := os.ReadFile(filepath.Join(b.dir, "sqlite.sql"))
	if err != nil {
		return err
	}
	var all bytes.Buffer
	for i := 0; i < 4; i++ {
		all.WriteString("DROP TABLE IF EXISTS t;\n")
		all.Write(sql)
	}
	b.sqlFile = filepath.Join(b.tmp, "load.sql")
	return os.WriteFile(b.sqlFile, all.Bytes(), 0o600)
}

// workload starts the named workload and returns the PID to sample, a
// function that waits for the load to end, and a cleanup.
func (b *bench) workload(name string) (cmd *exec.Cmd, wait func() error, cleanup func(), err error) {
	switch name {
	case "cxx":
		cmd = exec.Command(b.cxx, strconv.Itoa(b.rounds))
		if err := cmd.Start(); err != nil {
			return nil, nil, nil, err
		}
		return cmd, cmd.Wait, func() {}, nil
	case "sqlite3":
		cmd = exec.Command("sqlite3", ":memory:", ".read "+b.sqlFile)
		if err := cmd.Start(); err != nil {
			return nil, nil, nil, err
		}
		return cmd, cmd.Wait, func() {}, nil
	case "redis-server":
		cmd, port, stopServer, err := b.redisServer()
		if err != nil {
			return nil, nil, nil, err
		}
		lg := b.redisLoad(port)
		if err := lg.Start(); err != nil {
			stopServer()
			return nil, nil, nil, err
		}
		return cmd, lg.Wait, func() { lg.Process.Kill(); lg.Wait(); stopServer() }, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown workload %q", name)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(port int) error {
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server did not listen on port %d", port)
}

// profileTickprof samples the workload with tickprof and reads the profile.
func (b *bench) profileTickprof(name string, freq int) (*stackSet, time.Duration, error) {
	out := filepath.Join(b.tmp, name+".pb.gz")
	r, cleanup, err := b.runUnder(name, func(pid string) *exec.Cmd {
		args := append([]string{"sample", "-F", strconv.Itoa(freq), "-p", pid, "-o", out, "--top", "0"}, b.extra...)
		return exec.Command(b.tickprof, args...)
	})
	if err != nil {
		return nil, 0, err
	}
	defer cleanup()
	if name == "redis-server" {
		r.prof.Process.Signal(syscall.SIGINT)
	}
	if err := r.prof.Wait(); err != nil {
		return nil, 0, fmt.Errorf("tickprof sample: %v: %s", err, r.log.String())
	}
	if r.werr != nil {
		return nil, 0, fmt.Errorf("workload: %v", r.werr)
	}
	ss, err := readPprof(out)
	return ss, r.cpu, err
}

// runUnder starts the workload name and the profiler mk makes for its PID,
// and waits for the workload to end (the profiler is left running);
// cleanup ends what the workload left.
func (b *bench) runUnder(name string, mk func(pid string) *exec.Cmd) (r *profiled, cleanup func(), err error) {
	cmd, wait, cleanup, err := b.workload(name)
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	r, err = underProfiler(mk(strconv.Itoa(cmd.Process.Pid)), cmd, wait, t0)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return r, cleanup, nil
}

// profiled is what underProfiler saw.
type profiled struct {
	prof *exec.Cmd     // the profiler, still running
	log  bytes.Buffer  // the profiler's output
	cpu  time.Duration // the workload's CPU time (wall time when unknown)
	werr error         // the workload's exit
}

// underProfiler starts the profiler prof on the workload cmd, started at
// t0, and waits (wait) for the workload to end.
func underProfiler(prof, cmd *exec.Cmd, wait func() error, t0 time.Time) (*profiled, error) {
	r := &profiled{prof: prof}
	prof.Stdout, prof.Stderr = &r.log, &r.log
	if err := prof.Start(); err != nil {
		return nil, err
	}
	r.werr = wait()
	r.cpu = time.Since(t0)
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return r, nil
}

// profilePerf records the workload with perf --call-graph dwarf, for its
// cost (the stacks are not read).
func (b *bench) profilePerf(name string, freq int) (*stackSet, time.Duration, error) {
	data := filepath.Join(b.tmp, name+".perf.data")
	r, cleanup, err := b.runUnder(name, func(pid string) *exec.Cmd {
		return exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", strconv.Itoa(freq), "--call-graph", "dwarf", "-o", data, "-p", pid)
	})
	if err != nil {
		return nil, 0, err
	}
	defer cleanup()
	r.prof.Process.Signal(syscall.SIGINT)
	if err := r.prof.Wait(); err != nil && !strings.Contains(err.Error(), "interrupt") {
		log.Printf("perf record: %v: %s", err, r.log.String())
	}
	if r.werr != nil {
		return nil, 0, fmt.Errorf("workload: %v", r.werr)
	}
	return nil, r.cpu, nil
}

// profileBoth samples one run of the workload with tickprof and perf
// --call-graph dwarf at once, so that both see the same work: the work
// begins when both have had settle to start.
func (b *bench) profileBoth(name string, freq int) (*stackSet, *stackSet, error) {
	out := filepath.Join(b.tmp, name+".pb.gz")
	data := filepath.Join(b.tmp, name+".perf.data")
	p, begin, wait, cleanup, err := b.heldWorkload(name)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	pid := strconv.Itoa(p)
	tp := exec.Command(b.tickprof, append([]string{"sample", "-F", strconv.Itoa(freq), "-p", pid, "-o", out, "--top", "0"}, b.extra...)...)
	var tlog, plog bytes.Buffer
	tp.Stdout, tp.Stderr = &tlog, &tlog
	if err := tp.Start(); err != nil {
		return nil, nil, err
	}
	pr := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-F", strconv.Itoa(freq), "--call-graph", "dwarf", "-o", data, "-p", pid)
	pr.Stdout, pr.Stderr = &plog, &plog
	if err := pr.Start(); err != nil {
		tp.Process.Kill()
		tp.Wait()
		return nil, nil, err
	}
	time.Sleep(settle)
	werr := begin()
	if werr == nil {
		werr = wait()
	}
	tp.Process.Signal(syscall.SIGINT)
	pr.Process.Signal(syscall.SIGINT)
	terr := tp.Wait()
	if err := pr.Wait(); err != nil && !strings.Contains(err.Error(), "interrupt") {
		log.Printf("perf record: %v: %s", err, plog.String())
	}
	if werr != nil {
		return nil, nil, fmt.Errorf("workload: %v", werr)
	}
	if terr != nil {
		return nil, nil, fmt.Errorf("tickprof sample: %v: %s", terr, tlog.String())
	}
	ts, err := readPprof(out)
	if err != nil {
		return nil, nil, err
	}
	ps, err := b.perfScript(data)
	return ts, ps, err
}

// perfScript reads a perf.data file's stacks.
func (b *bench) perfScript(data string) (*stackSet, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	txt, err := exec.CommandContext(ctx, "perf", "script", "--no-demangle", "-i", data, "-F", "tid,ip,sym").Output()
	if err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	return readPerfScript(bytes.NewReader(txt))
}

// coverage prints the share of stacks reaching main for tickprof and perf
// sampling the same run, and their top-20 cumulative shares side by side.
func (b *bench) coverage(name string) error {
	var tp, pf *stackSet
	var err error
	if b.perf {
		tp, pf, err = b.profileBoth(name, b.freq)
	} else {
		tp, _, err = b.profileTickprof(name, b.freq)
	}
	if err != nil {
		return err
	}
	fmt.Printf("### %s\n\n", name)
	fmt.Printf("| profiler | samples reaching `main` | reaching the process or a thread start | not marked truncated |\n|---|---|---|---|\n")
	fmt.Printf("| tickprof sample | %s | %s | %s |\n", share(tp.reaches(mainFuncs...), tp.total), share(tp.reaches(rootFuncs...), tp.total), share(tp.total-tp.truncated, tp.total))
	if pf != nil {
		fmt.Printf("| perf --call-graph dwarf | %s | %s | - |\n", share(pf.reaches(mainFuncs...), pf.total), share(pf.reaches(rootFuncs...), pf.total))
	}
	fmt.Println()
	if tp.copyNote != "" {
		fmt.Printf("tickprof: %s.\n\n", tp.copyNote)
	}
	if pf == nil {
		return nil
	}
	tc, pc := tp.cumulative(), pf.cumulative()
	fmt.Printf("Top 20 named functions by cumulative share (tickprof) against perf, both sampling the same run; agree = the 95%% interval of the difference holds 0; \"not named\" = perf names that code differently (an alias such as `__GI___libc_write` for `write`) or never reached it:\n\n")
	fmt.Printf("| function | tickprof | perf --call-graph dwarf | difference | agree |\n|---|---|---|---|---|\n")
	n, both := 0, 0
	for _, f := range top(named(tc), 20) {
		if pc[f] == 0 {
			fmt.Printf("| `%s` | %s | not named | | |\n", f, share(tc[f], tp.total))
			continue
		}
		both++
		ok, diff := agree(tc[f], tp.total, pc[f], pf.total)
		if ok {
			n++
		}
		fmt.Printf("| `%s` | %s | %s | %s | %v |\n", f, share(tc[f], tp.total), share(pc[f], pf.total), diff, ok)
	}
	fmt.Printf("\n%d of the %d functions both name agree.\n\n", n, both)
	return nil
}

// cost measures the wall time of the C++ workload alone, under tickprof and
// under perf --call-graph dwarf, at 99 and 999 Hz, interleaved.
func (b *bench) cost(reps int) error {
	type conf struct {
		name string
		run  func() (time.Duration, error)
	}
	plain := func() (time.Duration, error) {
		cmd, wait, cleanup, err := b.workload("cxx")
		if err != nil {
			return 0, err
		}
		defer cleanup()
		err = wait()
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), err
	}
	confs := []conf{{"unprofiled", plain}}
	for _, f := range []int{99, 999} {
		f := f
		confs = append(confs, conf{fmt.Sprintf("tickprof %d Hz, frame pointers", f), func() (time.Duration, error) {
			saved := b.extra
			b.extra = append(append([]string{}, b.extra...), "--user-stack", "0")
			defer func() { b.extra = saved }()
			_, d, err := b.profileTickprof("cxx", f)
			return d, err
		}})
		confs = append(confs, conf{fmt.Sprintf("tickprof %d Hz, stack copy", f), func() (time.Duration, error) {
			_, d, err := b.profileTickprof("cxx", f)
			return d, err
		}})
		if b.perf {
			confs = append(confs, conf{fmt.Sprintf("perf --call-graph dwarf %d Hz", f), func() (time.Duration, error) {
				_, d, err := b.profilePerf("cxx", f)
				return d, err
			}})
		}
	}
	times := make([][]float64, len(confs))
	for r := 0; r < reps; r++ {
		for i, c := range confs {
			d, err := c.run()
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			times[i] = append(times[i], d.Seconds())
		}
	}
	fmt.Printf("### Cost: CPU time (user+system) of the C++ workload, %d rounds (%d runs each, interleaved; median [min, max])\n\n", b.rounds, reps)
	fmt.Printf("The target's own CPU time, which includes the sampling work done in its context (the BPF program, the stack copy), and is less disturbed than wall time by other load on the machine.\n\n")
	fmt.Printf("| configuration | CPU seconds | added vs unprofiled, same repetition (median [range]) |\n|---|---|---|\n")
	base := times[0]
	for i, c := range confs {
		ratios := make([]float64, len(times[i]))
		for j := range times[i] {
			ratios[j] = times[i][j]/base[j] - 1
		}
		fmt.Printf("| %s | %.2f [%.2f, %.2f] | %+.1f%% [%+.1f, %+.1f] |\n", c.name, median(times[i]), minf(times[i]), maxf(times[i]),
			100*median(ratios), 100*minf(ratios), 100*maxf(ratios))
	}
	fmt.Println()
	return nil
}

func median(x []float64) float64 {
	s := append([]float64{}, x...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func minf(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = min(m, v)
	}
	return m
}

func maxf(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}
