// SPDX-License-Identifier: Apache-2.0

// Command uprobe measures what timing a user function with tickprof costs
// (issue "Benchmark"): a C target calls a ~200 ns function in a loop, run
// unprobed, with an empty uprobe+uretprobe pair (the floor), with tickprof's
// programs in each clock mode, and with bpftrace's latency one-liner. It
// prints the per-call cost each adds, the ratio to the floor, tickprof's BPF
// program time per call (ebpf.EnableStats) and ring-buffer records per call.
//
// Run as root from the repository root:
//
//	go run ./bench/uprobe [-calls 100000] [-reps 5]
//
// Figures are medians over the repetitions, modes interleaved so that a
// change in machine load hits them alike.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/timing"
)

// chrt, when set, runs the target under SCHED_FIFO.
var chrt string

// onlyModes is the -modes flag.
var onlyModes string

// result is one run of the target under one mode.
type result struct {
	nsPerCall float64
	bpfNs     float64 // BPF run time per call (entry + exit), -1 if unknown
	records   float64 // ring-buffer records per call, -1 if none
	meanNs    float64 // tickprof ns mode: the reported mean (ns), else -1
}

// mode attaches something to the target (pid, binary) and returns a
// function that detaches it and reports.
type mode struct {
	name   string
	attach func(pid int, bin string) (func(calls int) result, error)
	endbr  bool // run the target built with endbr64 landing pads
}

func main() {
	calls := flag.Int("calls", 100000, "calls per probed run")
	reps := flag.Int("reps", 5, "repetitions of every mode")
	iters := flag.Int("iters", 60, "loop iterations of the target function (~200 ns at 60 here)")
	useBpftrace := flag.Bool("bpftrace", true, "include bpftrace's one-liner")
	rt := flag.Bool("rt", true, "run the target SCHED_FIFO (chrt -f 50) so that other load does not preempt it")
	only := flag.String("modes", "", "comma-separated names of the modes to run besides unprobed and the floor (default: all)")
	flag.Parse()
	onlyModes = *only
	chrt = benchkit.Chrt(*rt)
	if err := run(*calls, *reps, *iters, *useBpftrace); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(calls, reps, iters int, useBpftrace bool) error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	stats, err := benchkit.EnableStats()
	if err != nil {
		return err
	}
	defer stats.Close()
	bin, remove, err := benchkit.UprobeTarget("tickprof-bench", "-fcf-protection=none")
	if err != nil {
		return err
	}
	defer remove()
	// The same with an endbr64 landing pad first in every function, which
	// the kernel cannot emulate: a probe on it is single-stepped.
	binEndbr := filepath.Join(filepath.Dir(bin), "target-endbr")
	if err := benchkit.BuildC(binEndbr, benchkit.UprobeSource(), "-fcf-protection=full"); err != nil {
		return err
	}
	modes := selectModes(benchModes(useBpftrace), onlyModes)
	all, err := runReps(modes, [2]string{bin, binEndbr}, calls, reps, iters)
	if err != nil {
		return err
	}
	med := make([]result, len(modes))
	for i := range modes {
		med[i] = median(all[i])
	}
	writeTable(modes, med)
	fmt.Printf("median of %d runs; %d calls per probed run; function ~%.0f ns unprobed\n", reps, calls, med[0].nsPerCall)
	writeProbeBias(modes, med)
	writeQuantileCost(modes, all)
	fmt.Println("BPF ns/call: entry+exit program run time (ebpf.EnableStats), including the ~100 ns the")
	fmt.Println("statistics and program dispatch cost an empty pair; BPF over empty: tickprof's own code")
	return nil
}

// benchModes are the modes measured: unprobed and the floor first, then
// tickprof's clocks, bpftrace (if asked and installed) and the endbr64
// target's.
func benchModes(useBpftrace bool) []mode {
	modes := []mode{
		{name: "unprobed", attach: func(int, string) (func(int) result, error) {
			return func(int) result { return result{bpfNs: -1, records: -1, meanNs: -1} }, nil
		}},
		{name: "empty pair (floor)", attach: attachEmptyAt(0)},
		{name: "tickprof jiffies", attach: attachTickprof("jiffies")},
		{name: "tickprof tick:1ms", attach: attachTickprof("tick:1ms")},
		{name: "tickprof ns", attach: attachTickprof("ns")},
		{name: "tickprof ns+quantiles", attach: attachTickprofOpts("ns", true)},
	}
	if _, err := exec.LookPath("bpftrace"); err == nil && useBpftrace {
		modes = append(modes, mode{name: "bpftrace one-liner", attach: attachBpftrace})
	}
	return append(modes,
		mode{name: "endbr64: empty pair on it", attach: attachEmptyAt(-4), endbr: true},
		mode{name: "endbr64: empty pair after", attach: attachEmptyAt(0), endbr: true},
		mode{name: "endbr64: tickprof jiffies", attach: attachTickprof("jiffies"), endbr: true},
	)
}

// selectModes keeps unprobed, the floor and the modes only names
// (comma-separated; "": all).
func selectModes(modes []mode, only string) []mode {
	if only == "" {
		return modes
	}
	keep := modes[:2]
	for _, m := range modes[2:] {
		for _, name := range strings.Split(only, ",") {
			if strings.TrimSpace(name) == m.name {
				keep = append(keep, m)
			}
		}
	}
	return keep
}

// runReps runs every mode reps times, interleaved, on bins[0] (bins[1]
// for the endbr64 modes); the unprobed run makes ten times the calls.
func runReps(modes []mode, bins [2]string, calls, reps, iters int) ([][]result, error) {
	all := make([][]result, len(modes))
	for r := 0; r < reps; r++ {
		for i, m := range modes {
			n := calls
			if i == 0 {
				n = calls * 10
			}
			b := bins[0]
			if m.endbr {
				b = bins[1]
			}
			res, err := runOnce(b, iters, n, m)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			all[i] = append(all[i], res)
			fmt.Fprintf(os.Stderr, "rep %d %-20s %8.0f ns/call %6.0f BPF ns/call\n", r+1, m.name, res.nsPerCall, res.bpfNs)
		}
	}
	return all, nil
}

// writeTable prints each mode's median cost, against unprobed (med[0])
// and the floor (med[1]).
func writeTable(modes []mode, med []result) {
	base, floor := med[0].nsPerCall, med[1].nsPerCall-med[0].nsPerCall
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode\tns/call\tadded ns/call\tx floor\tBPF ns/call\tBPF over empty\trecords/call\t\n")
	for i, m := range modes {
		r := med[i]
		added := r.nsPerCall - base
		ratio := "-"
		if i > 0 && floor > 0 {
			ratio = fmt.Sprintf("%.3f", added/floor)
		}
		over := -1.0
		if r.bpfNs >= 0 && i > 1 {
			over = r.bpfNs - med[1].bpfNs
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t%s\t%s\t%s\t\n", m.name, r.nsPerCall, added, ratio, opt(r.bpfNs, "%.0f"), opt(over, "%.0f"), opt(r.records, "%.4f"))
	}
	tw.Flush()
}

// writeProbeBias prints, for each mode that reports a mean, how far it is
// from the unprobed time per call.
func writeProbeBias(modes []mode, med []result) {
	base := med[0].nsPerCall
	for i, m := range modes {
		if med[i].meanNs >= 0 {
			fmt.Printf("probe bias: %s reports the function at %.0f ns; unprobed it takes %.0f ns per loop iteration (call included): +%.0f ns\n",
				m.name, med[i].meanNs, base, med[i].meanNs-base)
		}
	}
}

// writeQuantileCost prints the histogram update's cost, paired by
// repetition (the two modes run one after the other in every repetition).
func writeQuantileCost(modes []mode, all [][]result) {
	qi, ni := -1, -1
	for i, m := range modes {
		switch m.name {
		case "tickprof ns":
			ni = i
		case "tickprof ns+quantiles":
			qi = i
		}
	}
	if qi < 0 || ni < 0 {
		return
	}
	var dBPF, dCall []float64
	for r := range all[qi] {
		dBPF = append(dBPF, all[qi][r].bpfNs-all[ni][r].bpfNs)
		dCall = append(dCall, all[qi][r].nsPerCall-all[ni][r].nsPerCall)
	}
	sort.Float64s(dBPF)
	sort.Float64s(dCall)
	fmt.Printf("quantile histograms, paired by repetition (ns+quantiles - ns): BPF %+.0f ns/call (median; range %+.0f to %+.0f), whole call %+.0f ns (range %+.0f to %+.0f)\n",
		dBPF[len(dBPF)/2], dBPF[0], dBPF[len(dBPF)-1], dCall[len(dCall)/2], dCall[0], dCall[len(dCall)-1])
}

func opt(v float64, f string) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

func median(rs []result) result {
	pick := func(get func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return result{
		nsPerCall: pick(func(r result) float64 { return r.nsPerCall }),
		bpfNs:     pick(func(r result) float64 { return r.bpfNs }),
		records:   pick(func(r result) float64 { return r.records }),
		meanNs:    pick(func(r result) float64 { return r.meanNs }),
	}
}

// runOnce starts the target, attaches the mode, lets the target run its
// calls and reports.
func runOnce(bin string, iters, calls int, m mode) (result, error) {
	t, err := benchkit.Start(bin, chrt, fmt.Sprint(calls), fmt.Sprint(iters))
	if err != nil {
		return result{}, err
	}
	defer t.Kill()
	done, err := m.attach(t.Pid(), bin)
	if err != nil {
		return result{}, err
	}
	ns := t.Run("ns_per_call")
	res := done(calls)
	if ns == 0 {
		return result{}, errors.New("the target printed no timing")
	}
	res.nsPerCall = ns
	return res, nil
}

// attachEmptyAt attaches the empty entry and exit programs (the floor) at
// tickprof's probe offset plus delta (-4: on an endbr64 tickprof skips).
func attachEmptyAt(delta int64) func(int, string) (func(int) result, error) {
	return func(pid int, bin string) (func(int) result, error) { return attachEmpty(pid, bin, delta) }
}

func attachEmpty(pid int, bin string, delta int64) (func(int) result, error) {
	var objs bpf.TimingObjects
	if err := bpf.LoadTimingObjects(&objs, nil); err != nil {
		return nil, err
	}
	specs, err := loader.ResolveUser(pid, "bench_fn", 1)
	if err != nil {
		objs.Close()
		return nil, err
	}
	ex, err := link.OpenExecutable(bin)
	if err != nil {
		objs.Close()
		return nil, err
	}
	o := &link.UprobeOptions{Address: uint64(int64(specs[0].Offset) + delta), PID: pid}
	lr, err := ex.Uretprobe("bench_fn", objs.TpEmptyExit, o)
	if err != nil {
		objs.Close()
		return nil, err
	}
	le, err := ex.Uprobe("bench_fn", objs.TpEmptyEntry, o)
	if err != nil {
		lr.Close()
		objs.Close()
		return nil, err
	}
	before := benchkit.ProgRuntime(objs.TpEmptyEntry, objs.TpEmptyExit)
	return func(calls int) result {
		rt := benchkit.ProgRuntime(objs.TpEmptyEntry, objs.TpEmptyExit) - before
		le.Close()
		lr.Close()
		objs.Close()
		return result{bpfNs: float64(rt) / float64(calls), records: -1, meanNs: -1}
	}, nil
}

// attachTickprof attaches tickprof's timing programs with a clock.
func attachTickprof(clock string) func(int, string) (func(int) result, error) {
	return attachTickprofOpts(clock, false)
}

// attachTickprofOpts is attachTickprof with the quantile histograms on or
// off (they need the ns clock).
func attachTickprofOpts(clock string, quantiles bool) func(int, string) (func(int) result, error) {
	return func(pid int, bin string) (func(int) result, error) {
		clk, err := timing.ParseClock(clock)
		if err != nil {
			return nil, err
		}
		s, err := timing.Open(context.Background(), timing.Config{PID: pid, Clock: clk, Correction: timing.CorrectionOff,
			Targets: timing.Targets{Users: []string{"bench_fn"}, MaxProbes: 1}})
		if err != nil {
			return nil, err
		}
		// The one timing loop, stopped by cancel when the calls are done.
		ctx, cancel := context.WithCancel(context.Background())
		type outcome struct {
			run *timing.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			run, err := s.Run(ctx)
			done <- outcome{run, err}
		}()
		return func(calls int) result {
			cancel()
			o := <-done
			s.Close()
			if o.err != nil || len(o.run.Targets) == 0 {
				return result{bpfNs: -1, records: -1, meanNs: -1}
			}
			tr := o.run.Targets[0]
			n := 1.0
			if tr.Calls > 0 {
				n = float64(tr.Calls)
			}
			mean := -1.0
			if clk.Kind == timing.ClockNS && tr.Exact != nil {
				mean = float64(tr.Exact.Sum) / n
			}
			// BPFRuntime covers the run: the calls are done before cancel.
			return result{bpfNs: float64(o.run.BPFRuntime) / n, records: float64(o.run.Records) / n, meanNs: mean}
		}, nil
	}
}

// attachBpftrace runs bpftrace's latency one-liner on the function.
func attachBpftrace(pid int, bin string) (func(int) result, error) {
	prog := fmt.Sprintf(`uprobe:%[1]s:bench_fn { @s[tid] = nsecs; } uretprobe:%[1]s:bench_fn /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }`, bin)
	cmd := exec.Command("bpftrace", "-p", fmt.Sprint(pid), "-e", prog)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	attached := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Attaching") || strings.Contains(sc.Text(), "Attached") {
			attached = true
			break
		}
	}
	if !attached {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, errors.New("bpftrace did not attach")
	}
	time.Sleep(300 * time.Millisecond) // "Attaching" comes just before the attach
	go io.Copy(io.Discard, out)
	return func(int) result {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		return result{bpfNs: -1, records: -1, meanNs: -1}
	}, nil
}
