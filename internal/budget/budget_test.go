// SPDX-License-Identifier: Apache-2.0

package budget

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestMain(m *testing.M) { testtarget.Main(m) }

// TestBudgetedRun times a function called back to back (spin1us, a few
// hundred thousand calls a second) under a 5% budget in 10 ms windows:
// the runner must settle on a duty cycle below 1, project a slowdown within
// the budget, and estimate the mean per call from its windows.
func TestBudgetedRun(t *testing.T) {
	bpftest.Require(t)
	g := testtarget.StartGated(t, testtarget.Timed(t), "spin1us", "0") // calls forever
	pid := g.Pid()
	specs, err := loader.ResolveUser(pid, "tp_spin1us", 1)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := loader.Open(loader.Options{PID: pid, Clock: loader.Clock{Kind: loader.ClockNS}, Windowed: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ls.DetachProbes()
	g.Release(t)
	const budget = 0.05
	r, err := New(ls, Config{Budget: budget, Window: 10 * time.Millisecond, Seed: 1,
		Cost: estimate.Result{Mean: 1500, Low: 1000, High: 2000, Confidence: 0.95}})
	if err != nil {
		t.Fatal(err)
	}
	// The run ends after its second window, the fewest a mean with
	// windows as clusters needs, not after a fixed time: a window's slot
	// is (window + attach and drain) / duty, and attaching and draining
	// take 10x longer on a loaded machine (with 6 s, 6 runs in 20 ended
	// with one window under a load of 6 on 2 CPUs; at a load of 8 a slot
	// took up to 30 s). The timeout only bounds a hang.
	const windows = 2
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := r.Run(ctx, func(st Status) {
		if st.Windows >= windows {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tg := st.Targets[0]
	w := tg.Windowed
	t.Logf("%d windows in %v: duty %.3f (next %.3f), mean %.0f ns [%.0f, %.0f], rate %.0f/s [%.0f, %.0f], slowdown %.2f%% [%.2f, %.2f], censored %d",
		st.Windows, st.Elapsed, st.Duty, st.NextDuty, w.Mean.Mean, w.Mean.Low, w.Mean.High,
		w.Rate.Mean, w.Rate.Low, w.Rate.High, 100*st.Slowdown.Mean, 100*st.Slowdown.Low, 100*st.Slowdown.High, w.Censored)
	if tg.Err != nil {
		t.Fatalf("no estimate: %v", tg.Err)
	}
	if st.Windows < windows {
		t.Errorf("%d windows in %v: the run ended before its %d windows", st.Windows, st.Elapsed, windows)
	}
	if !(st.NextDuty < 1) {
		t.Errorf("next duty %v: a function called back to back should make a 5%% budget bind", st.NextDuty)
	}
	if !(w.Mean.Mean > 1000 && w.Mean.Mean < 20000) {
		t.Errorf("mean per call %.0f ns: want a spin of 1 us plus the probes", w.Mean.Mean)
	}
	// The next windows are placed for the load's upper bound: at that
	// duty the projected slowdown's upper bound is the budget. (The duty
	// realized so far also counts attach and drain times, which depend on
	// the machine's load, so it is only logged.)
	at, err := estimate.ProjectSlowdown(st.Slowdown.Load, st.Slowdown.LoadLow, st.Slowdown.LoadHigh, 0.95, st.NextDuty)
	if err != nil {
		t.Fatal(err)
	}
	if at.High > budget*(1+1e-9) {
		t.Errorf("at the next duty %.4f the slowdown's upper bound is %.2f%%, over the %.0f%% budget", st.NextDuty, 100*at.High, 100*budget)
	}
	tot := r.stats[0].Total()
	t.Logf("pilot window: open %.1f ms, attached around it %.1f ms, %d calls; all %d windows: open %.1f ms, attached around them %.1f ms, %d calls",
		r.pilot[0].Length/1e6, r.pilot[0].Drain/1e6, r.pilot[0].Calls, r.windows(), tot.Length/1e6, tot.Drain/1e6, tot.Calls)
}

// TestRunnerMemoryBounded feeds a runner on a real windowed session 300,000
// made-up windows (a fast source: about 4 hours of 50 ms windows), taking a
// status every thousand as Run does after each window: the heap the runner
// holds must not grow with them (a slice of windows would take 14 MB), and
// the status must still estimate the mean the windows were made with.
func TestRunnerMemoryBounded(t *testing.T) {
	bpftest.Require(t)
	g := testtarget.StartGated(t, testtarget.Timed(t), "spin1us", "0") // held: no calls
	specs, err := loader.ResolveUser(g.Pid(), "tp_spin1us", 1)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := loader.Open(loader.Options{PID: g.Pid(), Clock: loader.Clock{Kind: loader.ClockNS}, Windowed: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ls.DetachProbes()
	r, err := New(ls, Config{Budget: 0.01, Cost: estimate.Result{Mean: 1500, Low: 1000, High: 2000, Confidence: 0.95}})
	if err != nil {
		t.Fatal(err)
	}
	r.start = time.Now().Add(-1000 * time.Hour)
	rng := rand.New(rand.NewPCG(3, 4))
	feed := func(k int) Status {
		var st Status
		for i := range k {
			n := uint64(rng.IntN(200))
			w := estimate.Window{Length: 5e7, Drain: 2e7, Calls: n, Sum: float64(n) * (1500 + 300*rng.NormFloat64())}
			if err := r.add([]estimate.Window{w}); err != nil {
				t.Fatal(err)
			}
			if i%1000 == 0 {
				st = r.status()
			}
		}
		return st
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	feed(10000)
	before := heap()
	st := feed(300000)
	after := heap()
	m := st.Targets[0].Windowed.Mean
	t.Logf("heap %d -> %d bytes over 300,000 windows; %d levels; mean %.1f ns [%.1f, %.1f]", before, after, r.stats[0].Levels(), m.Mean, m.Low, m.High)
	if after > before+256<<10 {
		t.Errorf("heap grew from %d to %d bytes over 300,000 windows", before, after)
	}
	if !(m.Low < 1500 && 1500 < m.High) {
		t.Errorf("mean %.1f ns [%.1f, %.1f]: want the 1500 ns the windows were made with", m.Mean, m.Low, m.High)
	}
}
