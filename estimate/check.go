package estimate

// ClockCheck compares a tick-clock estimate with the exact mean of the same
// calls.
type ClockCheck struct {
	// Calls is the number of checked calls.
	Calls uint64
	// Tick is the tick-clock estimate of their mean, at the check's
	// confidence.
	Tick Result
	// Exact is their exact mean (ns).
	Exact float64
	// Agree says Tick's interval holds Exact.
	Agree bool
}

// Resolves reports whether the check is about as sharp as r, the
// estimate on all calls: its standard error at most 1.5 times r's, so
// that a bias that moves r's interval off the truth moves the check's
// too. A check on a random 1 in k of the calls has about sqrt(k) times the
// standard error of the estimate where both rest on tick quantization, so
// it resolves r only when nearly every call is checked (the loader checks
// every long call) or the bias is far larger than r's interval.
//
// The standard errors are read off the intervals (half-width over the
// normal quantile of their confidence), since an interval on zero
// crossings has a zero two-point standard error but a real width.
func (c ClockCheck) Resolves(r Result) bool {
	return halfWidthSE(c.Tick) <= 1.5*halfWidthSE(r)
}

// halfWidthSE is r's half-width over the normal quantile of its confidence.
func halfWidthSE(r Result) float64 {
	conf := r.Confidence
	if !(conf > 0 && conf < 1) {
		conf = DefaultConfidence
	}
	return r.HalfWidth() / zQuantile(conf)
}

// Ratio returns the tick estimate over the exact mean (0 when the exact
// mean is 0).
func (c ClockCheck) Ratio() float64 {
	if c.Exact == 0 {
		return 0
	}
	return c.Tick.Mean / c.Exact
}

// CheckClock checks the tick clock's one assumption, asynchrony with the
// program (Beilner section 2, eq. 4a/4b: the phase of a call's entry
// within a tick is uniform), on a random sample of calls timed with both
// the tick clock (tick: their counts, with batches when known) and an
// exact clock (exactTotal: their total in ns).
//
// Given the sampled calls' durations D_i, asynchrony makes
// E[c_i | D_i] = D_i/d, so d sum c_i / m estimates their exact mean, which
// is known: the check is whether the estimator's interval (Time, at o's
// confidence, the run's own) holds it. That interval is built for the mean of the
// durations' law, so its variance includes the D_i's own spread, which the
// exact mean of the same calls does not have: the check is conservative,
// and an asynchronous clock fails it in at most about 1 - confidence of
// runs (tested by TestCheckClockFalseAlarms). At the run's own confidence,
// a check of every call (long calls) fails exactly when the run's interval
// on those calls misses their exact mean: the run covers or warns. A clock coupled to the
// program (threads woken by the tick, loops sleeping to tick boundaries)
// biases every c_i alike and fails it once the bias exceeds the
// interval's half-width: about d sqrt(ET/d / m) for short calls, so the
// check resolves a bias of the order of the jiffy over the square root of
// the checked crossings.
//
// The sample must be drawn independently of the calls (bpf/timing.h draws
// it at random at each entry).
func CheckClock(tick Counts, exactTotal float64, o Options) (ClockCheck, error) {
	r, err := Time(tick, o)
	if err != nil {
		return ClockCheck{}, err
	}
	if !(exactTotal >= 0) || !finite(exactTotal) {
		return ClockCheck{}, inputf("exact total %v ns of the checked calls is not a duration", exactTotal)
	}
	c := ClockCheck{Calls: r.Calls, Tick: r, Exact: exactTotal / float64(r.Calls)}
	c.Agree = r.Low <= c.Exact && c.Exact <= r.High
	return c, nil
}
