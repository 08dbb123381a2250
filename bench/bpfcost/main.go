// SPDX-License-Identifier: Apache-2.0

// Command bpfcost measures where the BPF program time of timing a user
// function goes: it attaches, in turn, the pairs of cost.bpf.c (each
// adds one piece of tickprof's entry and exit programs to the one before)
// and tickprof's own programs (loader, jiffies clock) to a C target calling
// a ~200 ns function, and reports per call the programs' run time
// (ebpf.EnableStats) and the target's own time per call. Every repetition
// runs every configuration once (interleaved, A B C A B C ...), and the
// ratios are taken within a repetition, so that a change of machine load
// hits them alike; medians and ranges over repetitions are printed.
//
// Run as root from the repository root:
//
//	go run ./bench/bpfcost [-calls 200000] [-reps 7]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/loader"
)

// config is one configuration: attach returns the programs whose run time
// counts and a function that detaches.
type config struct {
	name   string
	vs     string // the key of the configuration "over the one it extends" compares with
	attach func(pid int, bin string, objs *CostObjects) (progs []*ebpf.Program, detach func(), err error)
}

// sample is one run of one configuration.
type sample struct {
	nsPerCall float64 // the target's own time per call
	bpfNs     float64 // program run time per call (entry + exit)
}

func main() {
	calls := flag.Int("calls", 200000, "calls per run")
	reps := flag.Int("reps", 7, "repetitions of every configuration")
	rt := flag.Bool("rt", true, "run the target SCHED_FIFO (chrt -f 50)")
	goPair := flag.Bool("go", false, "measure a Go function's entry+exit against the C pair instead")
	flag.BoolVar(&withStats, "stats", true, "enable BPF run-time statistics (they add ~100 ns to every probe pair; off for ratios as users see them)")
	flag.StringVar(&perRun, "per-run", "median", "a run's time per call: median (the median over chunks of 1000 calls) or mean (the whole loop)")
	flag.IntVar(&pinCPU, "cpu", -1, "pin the C target to this CPU (-1: not pinned)")
	flag.StringVar(&base, "base", "0", "the empty pair the ratios compare with: 0 (single uprobe links) or 0m (a multi-uprobe link, as tickprof attaches)")
	flag.StringVar(&only, "only", "", "comma-separated configuration numbers to run (0 1 1t 2 3 4 5 6 s; tj tc tn tq tf tr tg for tickprof jiffies without and with the clock check, ns, ns with quantiles, ns with refined quantiles, ns without crossing records, ns with a 1 ms record grid); the unprobed run and the empty pair always run")
	flag.Parse()
	if err := run(*calls, *reps, *rt, *goPair); err != nil {
		fmt.Fprintln(os.Stderr, "bpfcost:", err)
		os.Exit(1)
	}
}

// pair attaches the entry and exit programs e and x to bench_fn, on single
// uprobe links or, with multi, on multi-uprobe links.
func pair(e, x func(*CostObjects) *ebpf.Program, multi bool) func(int, string, *CostObjects) ([]*ebpf.Program, func(), error) {
	return func(pid int, bin string, objs *CostObjects) ([]*ebpf.Program, func(), error) {
		specs, err := loader.ResolveUser(pid, "bench_fn", 1)
		if err != nil {
			return nil, nil, err
		}
		ex, err := link.OpenExecutable(bin)
		if err != nil {
			return nil, nil, err
		}
		attach := func(p *ebpf.Program, ret bool) (link.Link, error) {
			if multi {
				o := &link.UprobeMultiOptions{Addresses: []uint64{specs[0].Offset}, PID: uint32(pid)}
				if ret {
					return ex.UretprobeMulti(nil, p, o)
				}
				return ex.UprobeMulti(nil, p, o)
			}
			o := &link.UprobeOptions{Address: specs[0].Offset, PID: pid}
			if ret {
				return ex.Uretprobe("bench_fn", p, o)
			}
			return ex.Uprobe("bench_fn", p, o)
		}
		lx, err := attach(x(objs), true)
		if err != nil {
			return nil, nil, err
		}
		le, err := attach(e(objs), false)
		if err != nil {
			lx.Close()
			return nil, nil, err
		}
		return []*ebpf.Program{e(objs), x(objs)}, func() { le.Close(); lx.Close() }, nil
	}
}

// tickprof attaches tickprof's own programs through the loader, as `time`
// does (multi-uprobe links where the kernel has them), with the clock
// kind, Exact and CheckEvery of o.
func tickprof(o loader.Options) func(int, string, *CostObjects) ([]*ebpf.Program, func(), error) {
	return func(pid int, bin string, _ *CostObjects) ([]*ebpf.Program, func(), error) {
		s, err := openBench(o, pid)
		if err != nil {
			return nil, nil, err
		}
		return s.Programs(), func() { s.Stop(); s.Close() }, nil
	}
}

// openBench opens a loader session on the target's bench_fn.
func openBench(o loader.Options, pid int) (*loader.Session, error) {
	specs, err := loader.ResolveUser(pid, "bench_fn", 1)
	if err != nil {
		return nil, err
	}
	o.PID = pid
	return loader.Open(o, specs)
}

// tickprofRefined is tickprof with the buckets near p50, p90, p99 and
// p99.9 refined every 50 ms, as `time` refines them (bench_fn's calls
// all fall in a few buckets: nearly every call is counted in a bin).
func tickprofRefined(o loader.Options) func(int, string, *CostObjects) ([]*ebpf.Program, func(), error) {
	return func(pid int, bin string, _ *CostObjects) ([]*ebpf.Program, func(), error) {
		s, err := openBench(o, pid)
		if err != nil {
			return nil, nil, err
		}
		done, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					_ = s.Refine(histogram.Refiner{Levels: []float64{0.5, 0.9, 0.99, 0.999}})
				}
			}
		}()
		return s.Programs(), func() { close(done); <-finished; s.Stop(); s.Close() }, nil
	}
}

func costPair(e, x func(*CostObjects) *ebpf.Program) func(int, string, *CostObjects) ([]*ebpf.Program, func(), error) {
	return pair(e, x, false)
}

var configs = []config{
	{"unprobed", "unprobed", nil},
	{"0 empty pair", "unprobed", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE0 }, func(o *CostObjects) *ebpf.Program { return o.CostX0 })},
	{"0m empty pair, multi link", "0", pair(func(o *CostObjects) *ebpf.Program { return o.CostEm }, func(o *CostObjects) *ebpf.Program { return o.CostXm }, true)},
	{"1 + attach cookie", "0", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE1 }, func(o *CostObjects) *ebpf.Program { return o.CostX1 })},
	{"1t 1 + get_current_task_btf", "1", costPair(func(o *CostObjects) *ebpf.Program { return o.CostEt }, func(o *CostObjects) *ebpf.Program { return o.CostXt })},
	{"2 1 + task storage", "1", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE2 }, func(o *CostObjects) *ebpf.Program { return o.CostX2 })},
	{"3 2 + jiffies, push/pop", "2", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE3 }, func(o *CostObjects) *ebpf.Program { return o.CostX3 })},
	{"4 3 + counters (before)", "3", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE4 }, func(o *CostObjects) *ebpf.Program { return o.CostX4 })},
	{"5 4 - exit cookie (after)", "4", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE5 }, func(o *CostObjects) *ebpf.Program { return o.CostX5 })},
	{"6 frame table (after)", "5", costPair(func(o *CostObjects) *ebpf.Program { return o.CostE6 }, func(o *CostObjects) *ebpf.Program { return o.CostX6 })},
	{"s uprobe session (4's work)", "4", session},
	{"tj tickprof jiffies, no check", "0m", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockJiffies}, CheckEvery: -1})},
	{"tc tickprof jiffies (loader)", "tj", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockJiffies}})},
	{"tn tickprof ns", "tj", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true})},
	{"tq tickprof ns+quantiles", "tn", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true, Quantiles: true, NoRefine: true})},
	{"tf tickprof ns+quantiles, refined", "tq", tickprofRefined(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true, Quantiles: true})},
	{"tr tickprof ns, no records", "tn", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true, NoRecords: true})},
	// tn with a record grid 8 times coarser (2^20 ns): records, each with
	// its stack copy, 8 times rarer.
	{"tg tickprof ns, 1 ms record grid", "tn", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true, RecordGrid: (1 << 20) * time.Nanosecond})},
	// Caller stacks: tc's crossing records copy the user stack (the
	// default); tp is tc with the kernel's frame-pointer walk instead (as
	// before the copy). rc/rp write a record on every call (ns clock, a
	// 1 ns record grid), so that their difference is what a record's copy
	// costs over a frame-pointer walk.
	{"tp tickprof jiffies, frame-pointer stacks", "tj", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockJiffies}, StackBytes: -1})},
	{"rc tickprof ns, a record every call, stack copy", "rp", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true, RecordGrid: 1})},
	{"rp tickprof ns, a record every call, frame pointers", "tn", tickprof(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS}, Exact: true, RecordGrid: 1, StackBytes: -1})},
}

var (
	withStats bool
	only      string
	perRun    string
	pinCPU    int
	base      string
)

// configIndex returns the index of the configuration whose name starts
// with key.
func configIndex(key string) int {
	for i, c := range configs {
		if k, _, _ := strings.Cut(c.name, " "); k == key {
			return i
		}
	}
	panic("no configuration " + key)
}

// configByKey returns the configuration whose name starts with key.
func configByKey(key string) config { return configs[configIndex(key)] }

// selected reports whether configuration i runs.
func selected(i int) bool {
	if only == "" || i < 2 || i == configIndex(base) {
		return true
	}
	key, _, _ := strings.Cut(configs[i].name, " ")
	for _, k := range strings.Split(only, ",") {
		if strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}

func run(calls, reps int, rt, goPair bool) error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	if withStats {
		stats, err := benchkit.EnableStats()
		if err != nil {
			return err
		}
		defer stats.Close()
	}
	var objs CostObjects
	if err := loadCost(&objs); err != nil {
		return err
	}
	defer objs.Close()
	bin, remove, err := benchkit.UprobeTarget("tickprof-bpfcost", "-fcf-protection=none")
	if err != nil {
		return err
	}
	defer remove()
	chrt := benchkit.Chrt(rt)
	if goPair {
		return runGo(bin, calls, reps, chrt, &objs)
	}
	all := make([][]sample, len(configs))
	for r := 0; r < reps; r++ {
		for i, c := range configs {
			if !selected(i) {
				continue
			}
			s, err := runOnce(bin, chrt, calls, c, &objs)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			all[i] = append(all[i], s)
			fmt.Fprintf(os.Stderr, "rep %d %-28s %7.0f ns/call  BPF %5.0f ns/call\n", r+1, c.name, s.nsPerCall, s.bpfNs)
		}
	}
	report(all, reps, calls)
	return nil
}

// loadCost loads cost.bpf.c's programs. Any process filter turns on
// the frame table (pair 6); the filter itself is only read on orphan
// paths, and the kernel filters the probes by process.
func loadCost(objs *CostObjects) error {
	spec, err := LoadCost()
	if err != nil {
		return err
	}
	if err := spec.Variables["tp_filter_tgid"].Set(uint32(1)); err != nil {
		return err
	}
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return fmt.Errorf("load the cost programs: %w", err)
	}
	return nil
}

// report prints the table of the configurations' samples all.
func report(all [][]sample, reps, calls int) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "configuration\tBPF ns/call median [range]\tover the one it extends\tover empty\ttarget ns/call\tadded / the empty pair's added: median (95%% interval) [range]\tns/call / the empty pair's: median (95%% interval) [range]\t\n")
	nsPerCall := func(s sample) float64 { return s.nsPerCall }
	for i, c := range configs {
		if !selected(i) {
			continue
		}
		if i == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t%s\t-\t-\t\n", c.name, medRange(col(all[i], nsPerCall)))
			continue
		}
		bpfCol, prev, over := "-", "-", "-"
		if withStats {
			bpfCol = medRange(col(all[i], func(s sample) float64 { return s.bpfNs }))
			if i > 1 {
				if v := configIndex(c.vs); selected(v) {
					prev = medRange(diffs(all[i], all[v]))
				}
				over = medRange(diffs(all[i], all[1]))
			}
		}
		ratios, totals := make([]float64, reps), make([]float64, reps)
		floor := all[configIndex(base)]
		for r := 0; r < reps; r++ {
			unprobed := all[0][r].nsPerCall
			ratios[r] = (all[i][r].nsPerCall - unprobed) / (floor[r].nsPerCall - unprobed)
			totals[r] = all[i][r].nsPerCall / floor[r].nsPerCall
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.name, bpfCol, prev, over,
			medRange(col(all[i], nsPerCall)), medCI(ratios), medCI(totals))
	}
	tw.Flush()
	stats := "BPF ns/call includes what the run-time statistics add to every program run"
	if !withStats {
		stats = "run-time statistics off"
		// They are global: another process may have turned them on.
		on := 0
		for _, ss := range all {
			for _, s := range ss {
				if s.bpfNs > 0 {
					on++
				}
			}
		}
		if on > 0 {
			stats += fmt.Sprintf(" here, but on (turned on by another process) in %d runs", on)
		}
	}
	fmt.Printf("medians [min, max] over %d interleaved repetitions of %d calls; %s; ratios against %q\n", reps, calls, stats, configs[configIndex(base)].name)
	if perRun == "median" {
		fmt.Println("target ns/call: per run, the median over chunks of 1000 calls of their time per call")
	}
}

func col(ss []sample, f func(sample) float64) []float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	return v
}

// diffs returns a[r].bpfNs - b[r].bpfNs per repetition.
func diffs(a, b []sample) []float64 {
	v := make([]float64, len(a))
	for i := range a {
		v[i] = a[i].bpfNs - b[i].bpfNs
	}
	return v
}

func medRange(v []float64) string { return benchkit.MedRange(v, "%.0f") }

// medCI formats the median of the ratios v with its distribution-free 95%
// interval (order statistics, estimate.QuantileOfSamples: the runs are
// independent draws of the ratio whatever its distribution) and the range.
func medCI(v []float64) string {
	q, err := estimate.QuantileOfSamples(v, 0.5, estimate.Options{Confidence: 0.95})
	if err != nil {
		return err.Error()
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if q.TooFew {
		return fmt.Sprintf("%.3f (too few runs for an interval) [%.3f, %.3f]", q.Value, lo, hi)
	}
	return fmt.Sprintf("%.3f (%.3f, %.3f) [%.3f, %.3f]", q.Value, q.Low, q.High, lo, hi)
}

func runOnce(bin, chrt string, calls int, c config, objs *CostObjects) (sample, error) {
	t, err := benchkit.Start(bin, chrt, fmt.Sprint(calls))
	if err != nil {
		return sample{}, err
	}
	defer t.Kill()
	if pinCPU >= 0 {
		var set unix.CPUSet
		set.Set(pinCPU)
		if err := unix.SchedSetaffinity(t.Pid(), &set); err != nil {
			return sample{}, fmt.Errorf("pin the target to CPU %d: %w", pinCPU, err)
		}
	}
	var progs []*ebpf.Program
	detach := func() {}
	if c.attach != nil {
		if progs, detach, err = c.attach(t.Pid(), bin, objs); err != nil {
			return sample{}, err
		}
	}
	before := benchkit.ProgRuntime(progs...)
	key := "ns_per_call"
	if perRun == "median" {
		key = "chunk_median_ns_per_call"
	}
	ns := t.Run(key)
	spent := benchkit.ProgRuntime(progs...) - before
	detach()
	if ns == 0 {
		return sample{}, errors.New("the target printed no timing")
	}
	return sample{nsPerCall: ns, bpfNs: float64(spent) / float64(calls)}, nil
}
