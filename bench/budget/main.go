// SPDX-License-Identifier: Apache-2.0

// Command budget measures timing under an overhead budget on a real
// target: target.c calls bud_fn from 2 threads (about 200,000 calls a
// second here) and reports its own throughput over the run. Each
// repetition runs the target unprobed between every two probed runs
// (A B1 A B2 A ... A): tickprof probing all the time, tickprof under
// budgets of 5%, 1% and 0.5% (`tickprof time --overhead`, through package
// timing), bpftrace and funclatency on the same function. A probed run's
// slowdown is the mean unprobed throughput of the runs just before and
// after it over its own, minus 1, by the target's calls per CPU second
// (what other load on the machine leaves readable) and per wall-clock
// second. Budgeted runs also report the duty cycle and the projected
// slowdown with its interval; one longer run per tickprof configuration
// forecasts the time a ±5% interval takes (tickprof's own forecast).
//
// Run as root from the repository root:
//
//	bash bench/budget/run.sh [-reps 4] [-seconds 4] [-only "budget 1%"] [-validate]
//
// With -paired N it runs N paired rounds instead (paired.go: two unprobed
// runs and one per configuration in a random order each round) and prints
// the mean slowdown with its t interval and a control:
//
//	bash bench/budget/run.sh -paired 80 -seconds 8 -only "budget 1%" -budgets 1 -forecast 0 [-raw FILE]
//
// (run.sh runs it at nice -15; `make bench` runs it too).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tickprof/tickprof/timing"
)

// config is one probed configuration.
type config struct {
	name   string
	budget float64  // tickprof: the overhead budget (0: none)
	argv   []string // another tool: its command line (PID, BIN replaced)
	ready  string   // what it prints once attached
}

// outcome is one probed run: the slowdown by wall-clock and by CPU
// throughput and, for tickprof, its result.
type outcome struct {
	slowdown, cpuSlowdown float64
	run                   *timing.Result
}

func configs(only string, budgets []float64) []config {
	all := []config{{name: "tickprof, no budget"}}
	for _, b := range budgets {
		all = append(all, config{name: fmt.Sprintf("budget %g%%", 100*b), budget: b})
	}
	all = append(all, []config{
		{name: "bpftrace", argv: []string{"bpftrace", "-p", "PID", "-e",
			"uprobe:BIN:bud_fn { @s[tid] = nsecs; } uretprobe:BIN:bud_fn /@s[tid]/ { @ns = hist(nsecs - @s[tid]); delete(@s[tid]); }"},
			ready: "Attaching"},
		// libbpf-tools' funclatency (CO-RE): funclatency-bpfcc compiles
		// at run time and needs kernel headers, which this kernel lacks.
		// stdbuf: it says "Tracing" through a buffered stdout.
		{name: "funclatency", argv: []string{"stdbuf", "-oL", "funclatency", "-p", "PID", ":bud_fn"}, ready: "Tracing"},
	}...)
	var out []config
	for _, c := range all {
		if only == "" || strings.Contains(","+only+",", ","+c.name+",") {
			if c.argv != nil {
				tool := c.argv[0]
				if tool == "stdbuf" {
					tool = c.argv[2]
				}
				if _, err := exec.LookPath(tool); err != nil {
					fmt.Fprintf(os.Stderr, "budget: %s not installed: left out\n", tool)
					continue
				}
			}
			out = append(out, c)
		}
	}
	return out
}

func main() {
	reps := flag.Int("reps", 4, "repetitions")
	seconds := flag.Float64("seconds", 4, "run length")
	threads := flag.Int("threads", 2, "target threads")
	work := flag.Int("work", 8500, "work iterations between calls (8500: about 100,000 calls per second of a thread's CPU here, 200,000 a second from 2 threads that each have a CPU; 1500: about 1,000,000)")
	cost := flag.Float64("cost", 0, "assume this T_ovhd (ns) instead of measuring it, when this machine has no calibration")
	only := flag.String("only", "", "comma-separated configurations to run (default: all)")
	budgetList := flag.String("budgets", "5,1,0.5", "comma-separated budgets, percent")
	validate := flag.Bool("validate", false, "tickprof runs use the jiffies clock with --validate (default: the ns clock, as time does)")
	window := flag.Duration("window", 50*time.Millisecond, "window length under a budget")
	forecast := flag.Float64("forecast", 20, "length (s) of the one longer run per tickprof configuration that forecasts the time to ±5% (0: none)")
	rounds := flag.Int("paired", 0, "instead of the table: this many paired rounds (two unprobed runs and one per configuration, in a random order) and the mean slowdown with its t interval")
	raw := flag.String("raw", "", "with -paired: write each round's throughputs to this new file")
	flag.Parse()
	dir, err := os.MkdirTemp("", "tickprof-bench-budget")
	if err != nil {
		fmt.Fprintln(os.Stderr, "budget:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	bin, err := buildTarget(dir)
	if err == nil {
		w := workload{bin: bin, threads: *threads, seconds: *seconds, work: *work}
		var bs []float64
		for _, f := range strings.Split(*budgetList, ",") {
			var b float64
			if _, err = fmt.Sscanf(f, "%g", &b); err != nil || !(b > 0 && b < 100) {
				err = fmt.Errorf("-budgets: %q is not a percentage", f)
				break
			}
			bs = append(bs, b/100)
		}
		var base timing.Config
		var note string
		if err == nil {
			base, note, err = baseConfig(*cost, *validate, *window, dir)
		}
		if err == nil && *rounds > 0 {
			err = paired(w, configs(*only, bs), base, *rounds, *raw, note)
		} else if err == nil {
			err = bench(w, configs(*only, bs), base, note, *reps, *forecast)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "budget:", err)
		os.Exit(1)
	}
}

// baseConfig is the timing configuration of every tickprof run (the
// budget left to each configuration) and a note on the overhead correction.
func baseConfig(cost float64, validate bool, window time.Duration, dir string) (timing.Config, string, error) {
	corr, costNote, err := corrector(cost, cost == 0, dir)
	if err != nil {
		return timing.Config{}, "", err
	}
	cfg := timing.Config{Targets: budTarget(), Exact: validate, NoRecords: true,
		Corrector: corr, Correction: timing.CorrectionOn, Window: window}
	cfg.Clock = cfg.DefaultClock() // ns; jiffies to validate
	return cfg, costNote, nil
}

// bench runs reps interleaved repetitions and prints the table.
func bench(w workload, cs []config, base timing.Config, costNote string, reps int, forecast float64) error {
	all := make([][]outcome, len(cs))
	var unprobed []tput
	for r := 0; r < reps; r++ {
		a, err := w.unprobed()
		if err != nil {
			return err
		}
		unprobed = append(unprobed, a)
		for i, c := range cs {
			b, run, err := probed(w, c, base)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			a2, err := w.unprobed()
			if err != nil {
				return err
			}
			unprobed = append(unprobed, a2)
			o := outcome{slowdown: (a.wall+a2.wall)/2/b.wall - 1, cpuSlowdown: (a.cpu+a2.cpu)/2/b.cpu - 1, run: run}
			all[i] = append(all[i], o)
			fmt.Fprintf(os.Stderr, "rep %d %-20s %9.0f calls/s (%9.0f per CPU s), unprobed %9.0f and %9.0f (%9.0f, %9.0f): slowdown %+.2f%%, by CPU %+.2f%%\n",
				r+1, c.name, b.wall, b.cpu, a.wall, a2.wall, a.cpu, a2.cpu, 100*o.slowdown, 100*o.cpuSlowdown)
			a = a2
		}
	}
	t5, err := forecasts(w, cs, base, forecast)
	if err != nil {
		return err
	}
	writeTable(os.Stdout, cs, all, unprobed, t5)
	fmt.Printf("\n%d threads, %.0f s runs, %d repetitions interleaved A B A B; clock %s; %s (the budget counts twice that per call)\n",
		w.threads, w.seconds, reps, base.Clock, costNote)
	return nil
}

// forecasts runs each tickprof configuration once for seconds and returns
// the time it forecasts to a ±5% interval (0: none), in cs order: a run of
// a few seconds under a tight budget holds one or two windows, too few for
// an interval with windows as clusters.
func forecasts(w workload, cs []config, base timing.Config, seconds float64) ([]time.Duration, error) {
	out := make([]time.Duration, len(cs))
	if seconds <= 0 {
		return out, nil
	}
	w.seconds = seconds
	for i, c := range cs {
		if c.argv != nil {
			continue
		}
		_, run, err := probed(w, c, base)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		if out[i], err = timeTo(run, 0.05, base.Window); err != nil {
			fmt.Fprintf(os.Stderr, "%s: no forecast after %.0f s: %v\n", c.name, seconds, err)
		}
		fmt.Fprintf(os.Stderr, "forecast %-20s %v to ±5%%\n", c.name, out[i].Round(100*time.Millisecond))
	}
	return out, nil
}

// probed runs one probed configuration and returns the target's
// throughput.
func probed(w workload, c config, base timing.Config) (tput, *timing.Result, error) {
	if c.argv != nil {
		r, err := w.tool(c.argv, c.ready)
		return r, nil, err
	}
	cfg := base
	cfg.Overhead = c.budget
	run, r, err := w.timed(cfg)
	return r, run, err
}
