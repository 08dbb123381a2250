// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/tickprof/tickprof/bench/benchkit"
)

// writeTable prints one row per configuration: the slowdown's median and
// range over the repetitions and, for tickprof, the duty cycle, the
// projected slowdown, the time to ±5% and the --validate verdicts.
func writeTable(out io.Writer, cs []config, all [][]outcome, unprobed []tput, t5 []time.Duration) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "configuration\tslowdown by CPU time, median [range]\tby wall-clock time\tduty median [range]\tprojected slowdown (median rep)\ttime to ±5%% (forecast)\tinterval holds the exact mean\t\n")
	for i, c := range cs {
		var slow, cpuSlow, duty []float64
		var proj []string
		covered, checked := 0, 0
		for _, o := range all[i] {
			slow = append(slow, 100*o.slowdown)
			cpuSlow = append(cpuSlow, 100*o.cpuSlowdown)
			if o.run == nil {
				continue
			}
			d, p := 1.0, "-"
			if b := o.run.Budget; b != nil {
				d = b.Duty
				p = fmt.Sprintf("%.2f%% [%.2f, %.2f]", 100*b.Slowdown.Mean, 100*b.Slowdown.Low, 100*b.Slowdown.High)
			}
			duty = append(duty, d)
			proj = append(proj, p)
			if cv := o.run.Targets[0].Covered; cv != nil {
				checked++
				if *cv {
					covered++
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s%%\t%s%%\t%s\t%s\t%s\t%s\t\n", c.name, benchkit.MedRange(cpuSlow, "%+.2f"), benchkit.MedRange(slow, "%+.2f"),
			medOr(duty, "%.3f"), medianString(proj), forecast(t5[i]), coverage(covered, checked))
	}
	tw.Flush()
	var wall, cpu, aaCPU, aaWall []float64
	for i, u := range unprobed {
		wall, cpu = append(wall, u.wall), append(cpu, u.cpu)
		if i > 0 && i+1 < len(unprobed) {
			// The control: an unprobed run against its neighbours.
			aaCPU = append(aaCPU, 100*((unprobed[i-1].cpu+unprobed[i+1].cpu)/2/u.cpu-1))
			aaWall = append(aaWall, 100*((unprobed[i-1].wall+unprobed[i+1].wall)/2/u.wall-1))
		}
	}
	if len(aaCPU) > 0 {
		fmt.Fprintf(out, "control, an unprobed run against its neighbours (the noise): %s%% by CPU time, %s%% by wall-clock time\n",
			benchkit.MedRange(aaCPU, "%+.2f"), benchkit.MedRange(aaWall, "%+.2f"))
	}
	fmt.Fprintf(out, "unprobed throughput: %s calls/s, %s calls per CPU second\n", benchkit.MedRange(wall, "%.0f"), benchkit.MedRange(cpu, "%.0f"))
}

func medOr(v []float64, f string) string {
	if len(v) == 0 {
		return "-"
	}
	return benchkit.MedRange(v, f)
}

// medianString is the middle one of the projected slowdowns, in run order
// (they are intervals, reported as one run gave them).
func medianString(v []string) string {
	if len(v) == 0 {
		return "-"
	}
	return v[len(v)/2]
}

func coverage(k, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d of %d", k, n)
}

func forecast(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(100 * time.Millisecond).String()
}
