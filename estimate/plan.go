// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// Goal is the precision asked for; exactly one field is set.
type Goal struct {
	// RelHalfWidth is the half-width as a fraction of the mean (0.05 for ±5%).
	RelHalfWidth float64
	// AbsHalfWidth is the half-width in ns.
	AbsHalfWidth float64
	// Digits asks for that many significant digits: the half-width is one
	// unit of the last digit, as in Danzig and Melvin's Figure 2.
	Digits int
}

// Plan is a sample size and the precision it yields.
type Plan struct {
	// Executions is the number of executions needed, rounded up.
	Executions uint64
	// HalfWidth is the expected half-width (ns) at Executions.
	HalfWidth float64
	// RelHalfWidth is HalfWidth / expected mean.
	RelHalfWidth float64
	// Confidence is the level planned for.
	Confidence float64
}

// PlanExecutions returns the number of executions needed to estimate an
// interval of expected duration expect with a clock of the given resolution
// to the precision g, under the two-point model (each execution crosses k or
// k+1 ticks, k = floor(ET/d), f = ET/d - k):
//
//	n = z^2 d^2 f (1-f) / h^2            (h the half-width in ns)
//	  = (z/e)^2 f (1-f) / (ET/d)^2       (h = e ET, relative)
//
// The seeds' formulas are this one formula:
//
//   - Chan eq. 5: n = 100 z^2 p(1-p)/(k+p)^2 is the relative form with
//     e = 0.1 (so (z/e)^2 = 100 z^2), p = f and k + p = ET/d; 5a-5c change z.
//   - Beilner 14a: n >= (w_r/p)^2 {1 - k d/ET}{(1+k) d/ET - 1} with the total
//     width w_r = 2z and total relative width p = 2e, so w_r/p = z/e, and
//     {1 - k/x}{(k+1)/x - 1} = (x-k)(k+1-x)/x^2 = f(1-f)/x^2 for x = ET/d.
//     14b is k = 0: (1/x - 1) = (1-x)/x = f(1-f)/x^2 with f = x.
//   - Danzig eq. 4: n = z^2 Δ^2 p q / ε^2 is the absolute form with Δ = d,
//     p = f = δ/Δ (k = 0) and ε = h.
//   - Lilja eq. 4.21: n = (z s/(e x̄))^2 with the per-execution standard
//     deviation s = d sqrt(f(1-f)) of the two-point model and x̄ = ET; eq.
//     4.28: n = z^2 p(1-p)/(p e)^2 is the proportion form, p = ET/d (k = 0).
//
// When ET is an exact multiple of d the model gives a variance of zero and
// the plan is one execution: the two-point model then assumes durations do
// not vary at all, so prefer PlanFromPilot with a measured spread.
func PlanExecutions(expect, resolution float64, g Goal, o Options) (Plan, error) {
	conf, _, err := o.check()
	if err != nil {
		return Plan{}, err
	}
	if !(expect > 0) || !finite(expect) {
		return Plan{}, inputf("expected duration %v ns is not a positive duration", expect)
	}
	if !(resolution > 0) || !finite(resolution) {
		return Plan{}, inputf("resolution %v ns is not a positive duration: give the clock's tick length", resolution)
	}
	h, err := g.halfWidth(expect)
	if err != nil {
		return Plan{}, err
	}
	x := expect / resolution
	f := x - math.Floor(x)
	perCall := resolution * resolution * f * (1 - f) // two-point variance (Beilner 9c)
	return planFor(perCall, h, expect, conf)
}

// halfWidth converts the goal into an absolute half-width in ns.
func (g Goal) halfWidth(expect float64) (float64, error) {
	set := 0
	if g.RelHalfWidth != 0 {
		set++
	}
	if g.AbsHalfWidth != 0 {
		set++
	}
	if g.Digits != 0 {
		set++
	}
	if set != 1 {
		return 0, inputf("give exactly one precision goal (relative half-width, absolute half-width or significant digits), got %d", set)
	}
	switch {
	case g.RelHalfWidth != 0:
		if !(g.RelHalfWidth > 0) || !finite(g.RelHalfWidth) {
			return 0, inputf("relative half-width %v is not positive: give a precision such as 0.05 for ±5%%", g.RelHalfWidth)
		}
		return g.RelHalfWidth * expect, nil
	case g.AbsHalfWidth != 0:
		if !(g.AbsHalfWidth > 0) || !finite(g.AbsHalfWidth) {
			return 0, inputf("absolute half-width %v ns is not a positive duration", g.AbsHalfWidth)
		}
		return g.AbsHalfWidth, nil
	}
	if g.Digits < 1 || g.Digits > 15 {
		return 0, inputf("%d significant digits: want between 1 and 15", g.Digits)
	}
	// One unit of the last significant digit (Danzig: "the least
	// significant digit is within one unit of the true value").
	return math.Pow(10, math.Floor(math.Log10(expect))-float64(g.Digits)+1), nil
}

// planFor returns the plan for a per-execution variance v (ns^2), a target
// half-width h (ns) and an expected mean.
// A plan above MaxExecutions is an error, not a number: a uint64
// conversion would saturate (2^63 was printed as a result).
func planFor(v, h, mean, conf float64) (Plan, error) {
	z := zQuantile(conf)
	need := z * z * v / (h * h)
	if !(need <= MaxExecutions) {
		return Plan{}, inputf("the goal needs about %.3g executions, more than the %.3g (2^53) that can be counted exactly: ask for a looser precision or use a finer clock", need, float64(MaxExecutions))
	}
	e := uint64(1)
	if need > 1 {
		// Round up, forgiving the last few bits of floating-point noise.
		e = uint64(math.Ceil(need * (1 - 1e-12)))
	}
	hw := z * math.Sqrt(v/float64(e))
	return Plan{Executions: e, HalfWidth: hw, RelHalfWidth: hw / mean, Confidence: conf}, nil
}

// MaxExecutions is the largest plan PlanExecutions and PlanFromPilot
// return: 2^53, the largest count float64 holds exactly.
const MaxExecutions = 1 << 53

// PlanFromPilot returns the executions needed for relative half-width rel
// from a pilot estimate over calls executions, using its observed standard
// error: per-execution s = StdErr sqrt(calls), n = (z s / (rel mean))^2
// (Lilja eq. 4.21). Options.Confidence 0 keeps the pilot's level.
func PlanFromPilot(r Result, calls uint64, rel float64, o Options) (Plan, error) {
	if o.Confidence == 0 && r.Confidence > 0 {
		o.Confidence = r.Confidence
	}
	conf, _, err := o.check()
	if err != nil {
		return Plan{}, err
	}
	if calls == 0 {
		return Plan{}, inputf("pilot has no calls")
	}
	if !(rel > 0) || !finite(rel) {
		return Plan{}, inputf("relative half-width %v is not positive: give a precision such as 0.05 for ±5%%", rel)
	}
	if !(r.Mean > 0) || !finite(r.Mean) {
		return Plan{}, inputf("pilot mean %v ns is not positive: measure until at least one tick is crossed, or use PlanExecutions with an expected duration", r.Mean)
	}
	if !(r.StdErr > 0) || !finite(r.StdErr) {
		return Plan{}, inputf("pilot standard error %v ns is not positive: the pilot shows no variation to plan from", r.StdErr)
	}
	s := r.StdErr * math.Sqrt(float64(calls))
	return planFor(s*s, rel*r.Mean, r.Mean, conf)
}

// RunTime is the time (ns) that executions take at ratePerSec calls per
// second; +Inf for a rate that is not positive.
func RunTime(executions uint64, ratePerSec float64) float64 {
	if !(ratePerSec > 0) {
		return math.Inf(1)
	}
	return float64(executions) / ratePerSec * 1e9
}

// LoopRunTime is the time (ns) of executions loop cycles of loopPeriod ns.
func LoopRunTime(executions uint64, loopPeriod float64) float64 {
	return float64(executions) * loopPeriod
}

// The sequential stopping rule. Checking "is the interval tight enough" after
// every batch and stopping at the first success picks the moments when the
// spread happens to look small; the minimums below keep the coverage of the
// stopped interval at its level (coverage_test.go measures it).
const (
	// MinStopEvents is the fewest tick crossings (or measurements) before
	// Reached can be true.
	MinStopEvents = 30
	// MinStopBatches is the fewest batches before Reached can be true when
	// the estimate uses batches: the batch-means spread from fewer batches
	// is itself so uncertain that stopping on a lucky small value lost
	// coverage (92.7% with a minimum of 10 for a contiguous exponential
	// series in coverage tests).
	MinStopBatches = 30
)

// Reached reports whether r is precise enough to stop: its relative
// half-width is at most rel, it rests on at least MinStopEvents events and,
// when batches are used, on at least MinStopBatches of them.
func Reached(r Result, rel float64) bool {
	if !(r.RelHalfWidth <= rel) || r.Events < MinStopEvents {
		return false
	}
	return r.Batches == 0 || r.Batches >= MinStopBatches
}

// MoreCalls returns the expected number of additional calls needed before
// Reached(Time(c), rel) holds: the half-width shrinks as 1/sqrt(n), so
// n (RelHalfWidth/rel)^2 calls are needed in all, and at least enough for
// MinStopEvents crossings at the observed rate. With no tick crossed yet the
// mean is unknown; the plan then uses the interval's upper bound as the
// duration, the fewest calls that could suffice.
func MoreCalls(c Counts, rel float64, o Options) (uint64, error) {
	if !(rel > 0) || !finite(rel) {
		return 0, inputf("relative half-width %v is not positive: give a precision such as 0.05 for ±5%%", rel)
	}
	r, err := Time(c, o)
	if err != nil {
		return 0, err
	}
	if Reached(r, rel) {
		return 0, nil
	}
	n := float64(r.Calls)
	var need float64
	if r.Events == 0 {
		p, err := PlanExecutions(r.High, c.Resolution, Goal{RelHalfWidth: rel}, o)
		if err != nil {
			return 0, err
		}
		// With zero crossings the rate is below High/d; MinStopEvents
		// crossings need at least MinStopEvents d / High calls.
		need = math.Max(float64(p.Executions), MinStopEvents*c.Resolution/r.High)
	} else {
		need = n * (r.RelHalfWidth / rel) * (r.RelHalfWidth / rel)
		need = math.Max(need, n*MinStopEvents/float64(r.Events))
	}
	if r.Batches > 0 && r.Batches < MinStopBatches {
		need = math.Max(need, n*MinStopBatches/float64(r.Batches))
	}
	more := math.Ceil(need - n)
	if more < 1 {
		more = 1 // not reached yet, so at least one more call
	}
	if more > math.MaxUint64/2 {
		return math.MaxUint64 / 2, nil
	}
	return uint64(more), nil
}
