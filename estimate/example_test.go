// SPDX-License-Identifier: Apache-2.0

package estimate_test

import (
	"fmt"

	"github.com/tickprof/tickprof/estimate"
)

// Chan's worked example: 2000 executions timed with a 16.666 ms clock, 400 of
// which saw the clock advance once.
func ExampleTime() {
	r, err := estimate.Time(estimate.Counts{
		Resolution: 16.666e6, // ns
		Calls:      2000,
		Ticks:      400,
	}, estimate.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.3f ms [%.3f, %.3f] at %.0f%% (%s, %s)\n",
		r.Mean/1e6, r.Low/1e6, r.High/1e6, 100*r.Confidence, r.Method, r.Dist)
	// Output: 3.333 ms [3.051, 3.635] at 95% (two-point, wilson)
}

// Lilja 6.3.1: 12 of 800 PC samples every 10 ms fell in subroutine X.
func ExampleShare() {
	p, err := estimate.Share(12, 800, estimate.Options{Confidence: 0.99})
	if err != nil {
		fmt.Println(err)
		return
	}
	mean, low, high := p.Scale(8e9) // 8 s of sampled time
	fmt.Printf("share %.4f [%.4f, %.4f] (%s); %.0f ms [%.0f, %.0f] at 99%%\n",
		p.Share, p.Low, p.High, p.Method, mean/1e6, low/1e6, high/1e6)
	// Output: share 0.0150 [0.0062, 0.0300] (exact); 120 ms [50, 240] at 99%
}

// A 50 us activity measured with a 1 ms clock (d/ET = 20, a column of
// Beilner's Table 15) to ±5% at 95% confidence. Beilner prints 29500 with
// the quantile rounded to 1.97.
func ExamplePlanExecutions() {
	p, err := estimate.PlanExecutions(50e3, 1e6,
		estimate.Goal{RelHalfWidth: 0.05}, estimate.Options{Confidence: 0.95})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d executions, ±%.2f us; %.0f s at 200 calls/s\n",
		p.Executions, p.HalfWidth/1e3, estimate.RunTime(p.Executions, 200)/1e9)
	// Output: 29196 executions, ±2.50 us; 146 s at 200 calls/s
}

// Two runs of the same function, before and after a change.
func ExampleDiffResults() {
	base, _ := estimate.Time(estimate.Counts{Resolution: 1e6, Calls: 100000, Ticks: 5210}, estimate.Options{})
	next, _ := estimate.Time(estimate.Counts{Resolution: 1e6, Calls: 100000, Ticks: 4870}, estimate.Options{})
	d, err := estimate.DiffResults(base, next)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("change %+.2f us [%+.2f, %+.2f] at 95%%, significant: %v\n",
		d.Diff/1e3, d.Low/1e3, d.High/1e3, d.Significant)
	// Output: change -3.40 us [-5.32, -1.48] at 95%, significant: true
}
