// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
)

// Timing in windows: under an overhead budget the probes are attached only in
// time windows placed at random, at a duty cycle that holds the target's
// slowdown to the budget. This file estimates from such a run the mean per
// call, the call rate and the slowdown, each with its interval, chooses the
// duty cycle for a budget, and says how long a run under that budget needs.
//
// # The design
//
// The run's time is cut into slots of length L = W/q (W the window length, q
// the duty cycle). In each slot one window [s_j, s_j + W) starts at an offset
// drawn uniformly from [0, L - W], independently of the target. A call is
// counted in window j when its ENTRY falls in [s_j, s_j + W); the exit probe
// stays attached after the window closes until every counted call has
// returned (the drain), so a counted call's whole duration is measured
// however long it lasts. Calls entering during the drain are not counted.
//
// # Why entry-in-window is unbiased (proof sketch)
//
// Let the target's calls have entry times e_i and durations D_i: a marked
// point process, independent of the window placement (the windows are drawn
// by tickprof's random number generator, not by the target's clock). With
// the offsets uniform, every instant t of a slot lies in the slot's window
// with probability W/L = q, so the inclusion indicator I_i = [e_i in a window]
// has P(I_i = 1 | e, D) = q for every call, whatever its duration: inclusion
// depends on the entry time alone, and the entry time carries no information
// about the call's length once the window phase is random. Hence
//
//	E[sum_i I_i D_i] = q sum_i D_i,   E[sum_i I_i] = q N,
//
// and the ratio R = sum_i I_i D_i / sum_i I_i estimates the mean per call
// sum D_i / N with only the usual O(1/m) bias of a ratio estimator over m
// clusters (Cochran, Sampling Techniques, 6.8). The common alternatives fail
// exactly here: counting calls that both enter and return inside a window
// includes a call of duration D with probability (W - D)^+/L, which favours
// short calls and never includes a call longer than a window; detaching the
// exit probe with the window loses the calls still running, the long ones.
// Keeping the exit probe for the drain costs probe time, which is why the
// slowdown below is computed from the time the probes were attached, not
// from W/L.
//
// Calls are dependent within a window (a slow phase of the target slows them
// all) and across threads, so the interval treats windows as clusters: the
// batch-means ratio estimator of Time with one batch per window, variance
// m/(m-1) sum_j (S_j - R n_j)^2 / (sum n_j)^2 and Student t with m-1 degrees
// of freedom (Beilner eq. 11 is the reason for batch means; the windows are
// the natural batches). For quantized clocks Time's two-point candidate is a
// floor under it (rare crossings).
//
// # Slowdown
//
// A probe pair costs c of the calling thread's time per call (the calibrated
// T_ovhd, Lilja 6.2.1). If a thread makes r calls per second while probed, it
// spends u = r c of its time in the probes; with the probes attached a
// fraction q of the time its throughput is 1 - q u of the unprobed one, so
// the slowdown (extra run time for the same work) is
//
//	slowdown = q u / (1 - q u).
//
// The calls counted are spread over the target's busy threads; with the
// rate shared by k threads, u = r c / k. k = 1 is the safe default: no
// thread can call more often than all of them together.

// Window is what one probing window yields.
type Window struct {
	// Length is the window's length in ns: the time during which entering
	// calls were counted.
	Length float64
	// Drain is the time in ns the probes were attached outside the window:
	// attaching before it, and after it until the counted calls returned,
	// up to the next window's start (a call still running then returns
	// while that window's probes are on), so that windows and drains never
	// overlap. It costs the target like the window.
	Drain float64
	// Censored counts calls that entered the window and had not returned
	// when the probes were detached (a drain cut short): they are missing
	// from Calls and Sum, which biases the mean toward short calls.
	Censored uint64
	// Calls is the number of calls that entered inside the window.
	Calls uint64
	// Ticks is the clock ticks those calls crossed (quantized clocks).
	Ticks uint64
	// Sum is the total duration of those calls in ns (exact clock); it is
	// used when WindowedCounts.Resolution is 0.
	Sum float64
}

// WindowedCounts are the windows of a run and how they were placed.
type WindowedCounts struct {
	// Windows are the run's windows, in order, including those where no
	// call entered.
	Windows []Window
	// Elapsed is the run's length in ns, over which the windows were
	// placed; it must hold every window and drain.
	Elapsed float64
	// Resolution is the clock's tick length d in ns for a quantized
	// clock; 0 for the exact clock (Window.Sum).
	Resolution float64
}

// Windowed is the estimate from a windowed run.
type Windowed struct {
	// Mean is the mean per call (ns) with windows as clusters.
	Mean Result
	// Rate is the call rate while probed, in calls per second, with its
	// interval (Mean, Low, High and StdErr in calls per second).
	Rate Result
	// Windows is the number of windows, Probed the total length of the
	// windows (ns) and Attached that plus the drains (ns).
	Windows          int
	Probed, Attached float64
	// Duty is Attached / Elapsed: the fraction of the run the probes
	// were attached, the fraction that costs the target.
	Duty float64
	// Censored is the total of Window.Censored: when it is not 0 the mean
	// leaves out calls longer than their drain.
	Censored uint64
}

// WindowedTime estimates the mean per call and the call rate from a run
// probed in random windows (see the design above). When no call entered any
// window it returns an error with the rate, its interval from zero calls,
// and the duty filled in (Mean zero).
func WindowedTime(c WindowedCounts, o Options) (Windowed, error) {
	conf, _, err := o.check()
	if err != nil {
		return Windowed{}, err
	}
	m := len(c.Windows)
	if m < 2 {
		return Windowed{}, inputf("%d windows: an interval with windows as clusters needs at least 2", m)
	}
	if !(c.Resolution >= 0) || !finite(c.Resolution) {
		return Windowed{}, inputf("resolution %v ns is not a duration: give the tick length, or 0 for the exact clock", c.Resolution)
	}
	var w Windowed
	w.Windows = m
	var n uint64
	for i, win := range c.Windows {
		if err := checkWindow(i+1, win); err != nil {
			return Windowed{}, err
		}
		w.Probed += win.Length
		w.Attached += win.Length + win.Drain
		w.Censored += win.Censored
		n += win.Calls
	}
	if !(c.Elapsed >= w.Attached*(1-1e-12)) || !finite(c.Elapsed) {
		return Windowed{}, inputf("run of %v ns is shorter than its windows and drains (%v ns)", c.Elapsed, w.Attached)
	}
	w.Duty = math.Min(1, w.Attached/c.Elapsed)
	ws := clusters(c.Windows, w.Duty)
	if w.Rate, err = windowRate(ws, w.Probed, n, conf); err != nil {
		return Windowed{}, err
	}
	if n == 0 {
		// The rate (bounded from zero calls) and the duty still hold.
		return w, inputf("no call entered any of %d windows: no mean yet; probe longer", m)
	}
	if c.Resolution > 0 {
		bs := make([]Batch, len(ws))
		for i, win := range ws {
			bs[i] = Batch{Calls: win.Calls, Ticks: win.Ticks}
		}
		if w.Mean, err = Time(Counts{Resolution: c.Resolution, Batches: bs}, o); err != nil {
			return Windowed{}, err
		}
		return w, nil
	}
	w.Mean = clusterMean(ws, n, conf)
	return w, nil
}

// groupedBatches is the number of batches that windows are grouped into
// when they lie close together (see clusters).
const groupedBatches = 30

// clusters returns the clusters the intervals are computed over. Windows far
// apart are independent and each is a cluster. When the probes are attached
// more than half the time, windows lie closer together than their own length
// and a call longer than a window makes neighbours depend on each other (a
// long call leaves a thread with fewer entries in the next window as well);
// batch means need batches longer than that dependence (Beilner eq. 11), so
// consecutive windows are then merged into at most groupedBatches batches
// (groupSize). Measured (TestWindowedCoverage): with calls of 2-4 windows at
// a 100% duty, the call rate's interval covered 88% with one window per
// batch.
func clusters(ws []Window, duty float64) []Window {
	g := groupSize(len(ws), duty)
	if g == 1 {
		return ws
	}
	var out []Window
	for i := 0; i < len(ws); i += g {
		var b Window
		for _, w := range ws[i:min(i+g, len(ws))] {
			b.add(w)
		}
		out = append(out, b)
	}
	return out
}

// groupSize is the number of consecutive windows merged into a batch for m
// windows at duty cycle duty (see clusters): 1 at duties up to a half or
// below 2 groupedBatches windows, else the smallest power of two that
// leaves at most groupedBatches batches (so between groupedBatches/2 and
// groupedBatches). A power of two lets a run keep its batches' statistics
// as it goes (WindowStats) without keeping its windows.
func groupSize(m int, duty float64) int {
	g := 1
	if duty <= 0.5 || m < 2*groupedBatches {
		return g
	}
	for (m+g-1)/g > groupedBatches {
		g *= 2
	}
	return g
}

// add adds w's lengths, counts and sums to b.
func (b *Window) add(w Window) {
	b.Length += w.Length
	b.Drain += w.Drain
	b.Censored += w.Censored
	b.Calls += w.Calls
	b.Ticks += w.Ticks
	b.Sum += w.Sum
}

// clusterMean is the ratio estimator over windows for the exact clock: the
// batch-means candidate of Time with float sums (windows without calls add
// nothing to the residuals and are left out of the degrees of freedom, as
// Time leaves out empty batches).
func clusterMean(ws []Window, n uint64, conf float64) Result {
	var sum float64
	for _, win := range ws {
		sum += win.Sum
	}
	mean := sum / float64(n)
	var b int
	var s2, s3 float64
	for _, win := range ws {
		if win.Calls > 0 {
			e := win.Sum - mean*float64(win.Calls)
			b, s2, s3 = b+1, s2+e*e, s3+e*e*e
		}
	}
	return clusterResult(mean, n, b, s2, s3, conf)
}

// clusterResult is clusterMean from the b windows with calls and their
// residuals' sums s2 = sum_j e_j^2 and s3 = sum_j e_j^3 (e_j = S_j - mean
// n_j, ns).
func clusterResult(mean float64, n uint64, b int, s2, s3, conf float64) Result {
	r := Result{Mean: mean, Confidence: conf, Calls: n, Events: n, Method: "batch-means", Dist: "t"}
	if b < 2 {
		// One window with calls: no spread to build an interval from.
		r.Low, r.High, r.StdErr = 0, math.Inf(1), math.Inf(1)
		r.RelHalfWidth = math.Inf(1)
		r.Candidates = []Candidate{{Method: r.Method, Dist: r.Dist, Low: r.Low, High: r.High, StdErr: r.StdErr}}
		return r
	}
	r.Batches = b
	c := batchMeansFrom(b, s2, s3, 1, float64(n), mean, conf)
	lo := math.Max(0, math.Min(c.Low, mean))
	hi := math.Max(c.High, mean)
	r.Low, r.High, r.StdErr = lo, hi, c.StdErr
	r.RelHalfWidth = relHalfWidth(mean, lo, hi)
	r.Candidates = []Candidate{{Method: r.Method, Dist: r.Dist, Low: lo, High: hi, StdErr: c.StdErr}}
	return r
}

// windowRate is the call rate while probed: calls counted over the windows'
// total length, a ratio over windows like the mean. Its interval is the
// batch-means one (residuals n_j - rate W_j, Student t with m-1 degrees of
// freedom), which follows the calls' real dispersion (regular callers are
// less variable than Poisson, bursty ones more); below AutoExactBelow calls
// it is the exact Poisson (Garwood) interval on the count, which also bounds
// a rate from zero calls.
func windowRate(ws []Window, probed float64, n uint64, conf float64) (Result, error) {
	rate := float64(n) / (probed / 1e9)
	var ss float64
	for _, win := range ws {
		e := float64(win.Calls) - rate*win.Length/1e9
		ss += e * e
	}
	return rateResult(probed, n, len(ws), ss, conf), nil
}

// rateResult is windowRate from the m windows' residual sum of squares ss
// (calls^2).
func rateResult(probed float64, n uint64, m int, ss, conf float64) Result {
	sec := probed / 1e9
	rate := float64(n) / sec
	r := Result{Mean: rate, Confidence: conf, Calls: n, Events: n}
	if n < AutoExactBelow {
		lo, hi, _ := poissonInterval(n, conf, Exact)
		r.Low, r.High = lo/sec, hi/sec
		r.StdErr = math.Sqrt(float64(n)) / sec
		r.Method, r.Dist = "poisson", "exact"
	} else {
		mf := float64(m)
		se := math.Sqrt(mf/(mf-1)*ss) / sec
		q := tQuantile(conf, mf-1)
		r.Low, r.High, r.StdErr = math.Max(0, rate-q*se), rate+q*se, se
		r.Method, r.Dist = "batch-means", "t"
		r.Batches = m
	}
	r.RelHalfWidth = relHalfWidth(rate, r.Low, r.High)
	r.Candidates = []Candidate{{Method: r.Method, Dist: r.Dist, Low: r.Low, High: r.High, StdErr: r.StdErr}}
	return r
}

// Slowdown is a projected slowdown of the target, as a fraction (0.01 is 1%),
// with its interval.
type Slowdown struct {
	// Mean, Low and High are the slowdown and its interval.
	Mean, Low, High float64
	// Confidence is the interval's level.
	Confidence float64
	// Load is u = r c / k, the fraction of a probed thread's time spent
	// in the probes, with Low and High the bounds of its interval.
	Load, LoadLow, LoadHigh float64
}

// ProbeLoad returns u = rate * cost / threads, the fraction of a probed
// thread's time spent in the probes, and its interval. rate is the call rate
// while probed (calls per second, Windowed.Rate or a count over a run); cost
// the probe pair's whole cost per call (ns, with its interval: twice the
// calibrated T_ovhd for uprobes, see timing.PairCost); threads the busy
// threads the calls are spread over (0 counts as 1, the
// safe choice). The two estimates are independent; the variance of their
// product is c^2 var(r) + r^2 var(c) + var(r) var(c), taken as normal on the
// scale of u and clipped at 0. Each standard error is the estimate's
// half-width over its z (Z), so a prediction interval on the cost (which
// carries the run-to-run spread of the calibration) widens u as it should.
func ProbeLoad(rate, cost Result, threads int) (u, lo, hi, conf float64, err error) {
	conf = rate.Confidence
	if conf == 0 {
		conf = DefaultConfidence
	}
	if threads < 0 {
		return 0, 0, 0, 0, inputf("%d threads: want 1 or more (0 for 1)", threads)
	}
	k := float64(max(threads, 1))
	if !(rate.Mean >= 0) || !finite(rate.Mean, rate.Low, rate.High) {
		return 0, 0, 0, 0, inputf("call rate %v per second is not a rate", rate.Mean)
	}
	if !(cost.Mean >= 0) || !finite(cost.Mean, cost.Low, cost.High) {
		return 0, 0, 0, 0, inputf("probe cost %v ns is not a duration", cost.Mean)
	}
	sr := halfSE(rate, conf)
	sc := halfSE(cost, conf)
	r, c := rate.Mean, cost.Mean*1e-9 // seconds per call
	sc *= 1e-9
	u = r * c / k
	se := math.Sqrt(c*c*sr*sr+r*r*sc*sc+sr*sr*sc*sc) / k
	z := zQuantile(conf)
	return u, math.Max(0, u-z*se), u + z*se, conf, nil
}

// halfSE is an estimate's standard error read from its interval: the larger
// half-width over the z of its level at conf.
func halfSE(r Result, conf float64) float64 {
	c := r.Confidence
	if c == 0 {
		c = conf
	}
	h := math.Max(r.High-r.Mean, r.Mean-r.Low)
	return h / zQuantile(c)
}

// ProjectSlowdown returns the slowdown q u / (1 - q u) at duty cycle q for a
// probe load u with interval [lo, hi] (ProbeLoad). The slowdown is
// increasing in u, so its interval is the image of u's. A load the duty
// cycle cannot carry (q u >= 1) gives +Inf.
func ProjectSlowdown(u, lo, hi, conf, duty float64) (Slowdown, error) {
	if !(duty > 0 && duty <= 1) {
		return Slowdown{}, inputf("duty cycle %v out of range: want a fraction in (0, 1]", duty)
	}
	if !(lo >= 0 && lo <= u && u <= hi) {
		return Slowdown{}, inputf("probe load %v with interval [%v, %v] is inconsistent", u, lo, hi)
	}
	f := func(u float64) float64 {
		x := duty * u
		if x >= 1 {
			return math.Inf(1)
		}
		return x / (1 - x)
	}
	return Slowdown{Mean: f(u), Low: f(lo), High: f(hi), Confidence: conf, Load: u, LoadLow: lo, LoadHigh: hi}, nil
}

// DutyForBudget returns the largest duty cycle whose slowdown stays within
// budget (a fraction: 0.01 for 1%) for the load's upper bound uHigh:
// q = B / (uHigh (1 + B)), at most 1. Planning on the upper bound keeps the
// budget with the interval's confidence rather than half the time. A duty of
// 1 means the budget does not bind: probe all the time.
func DutyForBudget(budget, uHigh float64) (float64, error) {
	if !(budget > 0) || !finite(budget) {
		return 0, inputf("overhead budget %v is not positive: give a fraction such as 0.01 for 1%%", budget)
	}
	if !(uHigh >= 0) || !finite(uHigh) {
		return 0, inputf("probe load %v is not a fraction of time", uHigh)
	}
	if uHigh == 0 {
		return 1, nil
	}
	return math.Min(1, budget/(uHigh*(1+budget))), nil
}

// ReachedWindowed reports whether a windowed estimate is precise enough to
// stop: the mean's relative half-width is at most rel, with at least
// MinStopEvents calls and MinStopBatches windows holding calls (the
// sequential stopping rule of Reached, with windows as batches).
func ReachedWindowed(w Windowed, rel float64) bool {
	return w.Mean.RelHalfWidth <= rel && w.Mean.Calls >= MinStopEvents && w.Mean.Batches >= MinStopBatches
}

// WindowsNeeded returns how many windows in all a windowed run needs for the
// mean's relative half-width rel: the half-width shrinks as 1/sqrt(m) with
// m windows, so m (RelHalfWidth/rel)^2, and at least MinStopBatches windows
// with calls (scaled by the share of windows that hold calls).
func WindowsNeeded(w Windowed, rel float64) (int, error) {
	if !(rel > 0) || !finite(rel) {
		return 0, inputf("relative half-width %v is not positive: give a precision such as 0.05 for ±5%%", rel)
	}
	m := float64(w.Windows)
	if m == 0 {
		return 0, inputf("no windows yet: nothing to plan from")
	}
	need := m
	if math.IsInf(w.Mean.RelHalfWidth, 1) || w.Mean.Batches < 2 {
		need = math.Max(need, 2*m) // no spread yet: at least double
	} else {
		g := w.Mean.RelHalfWidth / rel
		need = math.Max(need, m*g*g)
	}
	full := math.Max(float64(w.Mean.Batches), 1) / m // share of windows with calls
	need = math.Max(need, MinStopBatches/full)
	if need > 1e12 {
		need = 1e12
	}
	return int(math.Ceil(need)), nil
}

// WindowedRunTime is the time (ns) that windows windows of length window
// (ns) take at duty cycle duty: one window per slot of window/duty.
func WindowedRunTime(windows int, window, duty float64) float64 {
	if !(duty > 0) || !(window > 0) {
		return math.Inf(1)
	}
	return float64(windows) * window / duty
}

// PlanUnderBudget returns the run time (ns) for executions calls when calls
// arrive at ratePerSec while probed and the probes are attached a fraction
// duty of the time in windows of length window (ns): executions / (rate q),
// and at least MinStopBatches windows. It plans from a per-call spread (a
// pilot or a model); calls within a window are often alike, which makes a
// windowed run need more than this, so WindowsNeeded on the run's own
// windows replaces it once windows are measured.
func PlanUnderBudget(executions uint64, ratePerSec, duty, window float64) float64 {
	if !(ratePerSec > 0) || !(duty > 0) {
		return math.Inf(1)
	}
	t := float64(executions) / (ratePerSec * duty) * 1e9
	return math.Max(t, WindowedRunTime(MinStopBatches, window, duty))
}
