// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tickprof/tickprof/timing"
	"gonum.org/v1/gonum/stat/distuv"
)

// A paired round runs the target unprobed twice (A1, A2) and once under
// each configuration, all in a random order. Per round, a configuration's
// slowdown is the mean throughput of A1 and A2 over its own, minus 1; the
// control, A1's throughput over A2's minus 1, is what the same method
// reports with no profiler at all (its mean shows the bias of a ratio of
// noisy runs, its spread the noise of one pair). Rounds are independent
// pairs: load that drifts between rounds is shared by the runs of one
// round, so the mean over rounds has a Student t interval.

// round is one paired round's measurements: throughputs and, for tickprof
// configurations, the duty cycle the run had (1 without a budget, 0 for
// other tools).
type round struct {
	a1, a2 tput
	probed []tput
	duty   []float64
}

// pairedRounds runs n paired rounds of cs and prints their table; raw, when
// not nil, gets one line per round (A1, A2, then each configuration's calls
// per CPU second and per wall-clock second and its duty cycle). SIGTERM or
// SIGINT ends the rounds after the current one.
func pairedRounds(w workload, cs []config, base timing.Config, n int, raw io.Writer) ([]round, error) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(stop)
	var rs []round
	for r := 0; r < n && len(stop) == 0; r++ {
		rd := round{probed: make([]tput, len(cs)), duty: make([]float64, len(cs))}
		order := rand.Perm(len(cs) + 2)
		for _, k := range order {
			var err error
			switch k {
			case 0:
				rd.a1, err = w.unprobed()
			case 1:
				rd.a2, err = w.unprobed()
			default:
				var run *timing.Result
				rd.probed[k-2], run, err = probed(w, cs[k-2], base)
				rd.duty[k-2] = dutyOf(run)
			}
			if err != nil {
				return rs, fmt.Errorf("round %d: %w", r+1, err)
			}
		}
		rs = append(rs, rd)
		line := fmt.Sprintf("%d %.1f %.1f %.1f %.1f", r+1, rd.a1.cpu, rd.a1.wall, rd.a2.cpu, rd.a2.wall)
		for i := range cs {
			line += fmt.Sprintf(" %.1f %.1f %.4f", rd.probed[i].cpu, rd.probed[i].wall, rd.duty[i])
		}
		if raw != nil {
			fmt.Fprintln(raw, line)
		}
		fmt.Fprintf(os.Stderr, "round %d/%d (load %s): %s\n", r+1, n, loadavg(), line)
	}
	return rs, nil
}

// dutyOf is the duty cycle a tickprof run had: 1 without a budget, 0 for
// another tool (no result).
func dutyOf(run *timing.Result) float64 {
	switch {
	case run == nil:
		return 0
	case run.Budget == nil:
		return 1
	}
	return run.Budget.Duty
}

// tMean is a mean over rounds with its Student t interval.
type tMean struct{ mean, low, high, sd float64 }

func tInterval(xs []float64, conf float64) tMean {
	n := float64(len(xs))
	var s, ss float64
	for _, x := range xs {
		s += x
	}
	m := s / n
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	sd := math.Sqrt(ss / (n - 1))
	h := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1-(1-conf)/2) * sd / math.Sqrt(n)
	return tMean{m, m - h, m + h, sd}
}

// writePaired prints the paired rounds' table: per configuration the mean
// slowdown in points by CPU time and by wall-clock time with its interval,
// the duty cycle, and the control.
func writePaired(out io.Writer, cs []config, rs []round, conf float64) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "configuration\tslowdown by CPU time (points)\t%g%% interval\thalf-width\tsd over rounds\tby wall-clock time\tduty cycle, mean [range]\t\n", 100*conf)
	row := func(name string, cpu, wall []float64, duty string) {
		c, wl := tInterval(cpu, conf), tInterval(wall, conf)
		fmt.Fprintf(tw, "%s\t%+.2f\t[%+.2f, %+.2f]\t±%.2f\t%.2f\t%+.2f [%+.2f, %+.2f]\t%s\t\n", name, c.mean, c.low, c.high,
			(c.high-c.low)/2, c.sd, wl.mean, wl.low, wl.high, duty)
	}
	for i, c := range cs {
		var cpu, wall, duty []float64
		for _, r := range rs {
			a := tput{cpu: (r.a1.cpu + r.a2.cpu) / 2, wall: (r.a1.wall + r.a2.wall) / 2}
			cpu = append(cpu, 100*(a.cpu/r.probed[i].cpu-1))
			wall = append(wall, 100*(a.wall/r.probed[i].wall-1))
			duty = append(duty, r.duty[i])
		}
		d := "-"
		if c.argv == nil {
			lo, hi := minMax(duty)
			d = fmt.Sprintf("%.4f [%.4f, %.4f]", tInterval(duty, conf).mean, lo, hi)
		}
		row(c.name, cpu, wall, d)
	}
	var cpu, wall []float64
	for _, r := range rs {
		cpu = append(cpu, 100*(r.a1.cpu/r.a2.cpu-1))
		wall = append(wall, 100*(r.a1.wall/r.a2.wall-1))
	}
	row("control: unprobed A1 against A2", cpu, wall, "-")
	tw.Flush()
	var a []float64
	for _, r := range rs {
		a = append(a, r.a1.cpu, r.a2.cpu)
	}
	lo, hi := minMax(a)
	fmt.Fprintf(out, "unprobed: %.0f calls per CPU second on average [%.0f, %.0f] over %d rounds\n", tInterval(a, conf).mean, lo, hi, len(rs))
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// loadavg is the machine's load average (1, 5 and 15 minutes).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// paired runs the paired mode and prints its section.
func paired(w workload, cs []config, base timing.Config, n int, rawPath, costNote string) error {
	const conf = 0.95
	var raw io.Writer
	if rawPath != "" {
		f, err := os.OpenFile(rawPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_TRUNC|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return fmt.Errorf("raw file: %w", err)
		}
		defer f.Close()
		raw = f
	}
	load0, start := loadavg(), time.Now().UTC()
	rs, err := pairedRounds(w, cs, base, n, raw)
	if len(rs) < 2 {
		return err
	}
	fmt.Printf("%d paired rounds from %s (load average %s at the start, %s at the end); %d threads, %.0f s runs, %d work iterations per call; clock %s; %s\n\n",
		len(rs), start.Format("2006-01-02T15:04:05Z"), load0, loadavg(), w.threads, w.seconds, w.work, base.Clock, costNote)
	writePaired(os.Stdout, cs, rs, conf)
	return err
}
