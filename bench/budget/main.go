// Command budget measures timing under an overhead budget: a C target
// (target.c) calls bud_fn from 2 threads at about 200,000 calls a second,
// and reports its own throughput; each repetition runs it unprobed, probed
// all the time (tickprof's jiffies programs, no budget), and under budgets
// of 0.5%, 1% and 5% (package budget), interleaved. The slowdown of a
// configuration is the unprobed throughput of the same repetition over its
// own, minus 1. The budgeted runs also report the duty cycle used, the
// projected slowdown with its interval, and when ±5% was (or would be)
// reached.
//
// Run as root from the repository root:
//
//	go run ./bench/budget [-reps 5] [-seconds 6]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/budget"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/loader"
)

type outcome struct {
	rate     float64 // the target's calls per second
	duty     float64
	slowdown estimate.Slowdown
	mean     estimate.Result
	windows  int
}

func main() {
	reps := flag.Int("reps", 5, "repetitions")
	seconds := flag.Float64("seconds", 6, "run length")
	threads := flag.Int("threads", 2, "target threads")
	work := flag.Int("work", 1500, "work iterations between calls (about 200,000 calls a second from 2 threads here)")
	cost := flag.Float64("cost", 1500, "probe pair cost per call, ns (the calibration's T_ovhd)")
	flag.Parse()
	if err := run(*reps, *seconds, *threads, *work, *cost); err != nil {
		fmt.Fprintln(os.Stderr, "budget:", err)
		os.Exit(1)
	}
}

func run(reps int, seconds float64, threads, work int, cost float64) error {
	dir, err := os.MkdirTemp("", "tickprof-bench-budget")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(dir, "target")
	if err := benchkit.BuildC(bin, filepath.Join(filepath.Dir(file), "target.c"), "-pthread", "-fcf-protection=none"); err != nil {
		return err
	}
	costR := estimate.Result{Mean: cost, Low: 0.7 * cost, High: 1.3 * cost, Confidence: 0.95}
	configs := []struct {
		name   string
		budget float64 // 0: unprobed; -1: probed all the time
	}{{"unprobed", 0}, {"no budget (always probed)", -1}, {"budget 5%", 0.05}, {"budget 1%", 0.01}, {"budget 0.5%", 0.005}}
	all := make([][]outcome, len(configs))
	for r := 0; r < reps; r++ {
		for i, c := range configs {
			o, err := runOnce(bin, threads, seconds, work, c.budget, costR)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			all[i] = append(all[i], o)
			fmt.Fprintf(os.Stderr, "rep %d %-26s %9.0f calls/s duty %.3f\n", r+1, c.name, o.rate, o.duty)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "configuration\tcalls/s\tslowdown median [range]\tduty\tprojected slowdown (last rep)\tmean per call (last rep, raw)\twindows\t\n")
	for i, c := range configs {
		rates := make([]float64, reps)
		slow := make([]float64, reps)
		duty := make([]float64, reps)
		for r := 0; r < reps; r++ {
			rates[r] = all[i][r].rate
			slow[r] = 100 * (all[0][r].rate/all[i][r].rate - 1)
			duty[r] = all[i][r].duty
		}
		last := all[i][reps-1]
		proj, mean, wins := "-", "-", "-"
		if c.budget > 0 {
			proj = fmt.Sprintf("%.2f%% [%.2f, %.2f]", 100*last.slowdown.Mean, 100*last.slowdown.Low, 100*last.slowdown.High)
			mean = fmt.Sprintf("%.0f ns [%.0f, %.0f]", last.mean.Mean, last.mean.Low, last.mean.High)
			wins = fmt.Sprint(last.windows)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s%%\t%s\t%s\t%s\t%s\t\n", c.name, benchkit.MedRange(rates, "%.0f"), benchkit.MedRange(slow, "%.2f"), benchkit.MedRange(duty, "%.3f"), proj, mean, wins)
	}
	tw.Flush()
	fmt.Printf("%d threads, %.0f s runs, %d interleaved repetitions; slowdown = unprobed calls/s of the same repetition / calls/s - 1; probe cost assumed %.0f ns [%.0f, %.0f]\n",
		threads, seconds, reps, cost, costR.Low, costR.High)
	return nil
}

func runOnce(bin string, threads int, seconds float64, work int, b float64, cost estimate.Result) (outcome, error) {
	t, err := benchkit.Start(bin, "", fmt.Sprint(threads), fmt.Sprint(seconds), fmt.Sprint(work))
	if err != nil {
		return outcome{}, err
	}
	defer t.Kill()
	var o outcome
	var stop func() (outcome, error)
	if b != 0 {
		specs, err := loader.ResolveUser(t.Pid(), "bud_fn", 1)
		if err != nil {
			return o, err
		}
		ls, err := loader.Open(loader.Options{PID: t.Pid(), Clock: loader.Clock{Kind: loader.ClockJiffies}, Windowed: b > 0, NoRecords: true}, specs)
		if err != nil {
			return o, err
		}
		defer ls.Close()
		if b > 0 {
			ls.DetachProbes()
			r, err := budget.New(ls, budget.Config{Budget: b, Cost: cost, Window: 50 * time.Millisecond})
			if err != nil {
				return o, err
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			var st budget.Status
			var rerr error
			go func() { st, rerr = r.Run(ctx, nil); close(done) }()
			stop = func() (outcome, error) {
				cancel()
				<-done
				out := outcome{duty: st.Duty, slowdown: st.Slowdown, windows: st.Windows}
				if len(st.Targets) > 0 {
					out.mean = st.Targets[0].Windowed.Mean
				}
				if rerr != nil {
					// The target exits at the end of its run, maybe
					// while a window attaches: keep what was
					// estimated before.
					fmt.Fprintf(os.Stderr, "after the target's exit: %v\n", rerr)
				}
				return out, nil
			}
		}
	}
	o.rate = t.Run("calls_per_sec")
	if stop != nil {
		got, err := stop()
		if err != nil {
			return o, err
		}
		got.rate = o.rate
		o = got
	}
	if b < 0 {
		o.duty = 1
	}
	if o.rate == 0 {
		return o, fmt.Errorf("the target printed no throughput")
	}
	return o, nil
}
