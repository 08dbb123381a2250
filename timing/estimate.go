// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"math"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/loader"
)

// Row is one target's estimate after a polling batch.
type Row struct {
	// Name is the target's display name; Calls its calls so far.
	Name  string
	Calls uint64
	// Result is the mean time per call with its interval; Err is set
	// instead when there is nothing to estimate yet.
	Result estimate.Result
	Err    error
	// Batches counts the polling batches with calls.
	Batches int
	// Decided says, for the jiffies clock, why Result is not the tick
	// estimate alone (estimate.ClockCheck.Decide; "" when it is).
	Decided string

	counts estimate.Counts
	exact  bool
}

// Progress is the state of a run after one polling batch.
type Progress struct {
	// Elapsed is the time since the probes were attached.
	Elapsed time.Duration
	// Rows are the targets' estimates.
	Rows []Row
	// Precision is the run's precision goal (0: none); Remaining, when it
	// is set, the estimated time per row still needed to reach it (0:
	// reached, -1: unknown), and RemainingLow, RemainingHigh its 80% range
	// (Row.RemainingRange).
	Precision                   float64
	Remaining                   []time.Duration
	RemainingLow, RemainingHigh []time.Duration
	// Quantiles, with a precision goal on a quantile, are each row's
	// quantile at the stop rule's last look (nil before it).
	Quantiles []*estimate.Quantile
}

// MinCheckBatches is the number of polling batches below which a result
// could not check, with the batch-means interval, whether calls that
// overlap in time make the interval too narrow.
const MinCheckBatches = 10

// estimateTarget estimates one target from its cumulative counters c and
// its polling batches.
func estimateTarget(clk loader.Clock, c loader.Counters, batches []loader.Counters, est estimate.Options) Row {
	r := Row{Calls: c.Calls}
	r.counts, r.Batches = loader.EstimatorCounts(clk, c, batches)
	if clk.Kind == loader.ClockNS {
		// Exact measurements: the mean of the ns durations (Lilja 4.4.1),
		// or the batch-means interval over the polling batches when that
		// is wider (successive calls can be correlated, Beilner eq. 11).
		r.exact = true
		r.Result, r.Err = estimate.MeanFromSums(c.Calls, float64(c.NsSum), c.NsSq.Float64(), est)
		if r.Err == nil {
			b, err := estimate.Time(r.counts, est)
			if err == nil && b.Batches >= 2 {
				if b.High-b.Low > r.Result.High-r.Result.Low {
					r.Result = b
				} else {
					// The reported interval still rests on both.
					r.Result.Batches = b.Batches
				}
			}
		}
		return r
	}
	r.Result, r.Err = estimate.Time(r.counts, est)
	if r.Err == nil && clk.Kind == loader.ClockJiffies {
		// The jiffies clock cannot be dithered: the random share of calls
		// timed exactly decides what is reported (estimate.ClockCheck.
		// Decide), so that the interval never rests on asynchrony alone.
		if ck := loader.ClockCheck(clk, c, batches, est); ck != nil {
			r.Result, r.Decided = ck.Decide(r.Result)
		}
	}
	return r
}

// Reached is the precision stopping rule (estimate.Reached; docs/statistics.md,
// "Stopping at a precision"): the interval is within rel, rests on at least
// estimate.MinStopEvents events, and on at least estimate.MinStopBatches
// polling batches with calls. The batch count is required whichever
// interval is reported: the batch-means interval is the check against
// correlated calls (Beilner eq. 11), and from a few batches it can be
// narrower than the per-call interval by luck, then far wider one poll
// later (t with 1 degree of freedom is 12.7), so stopping before it has
// 30 batches reports a loose interval.
func (r Row) Reached(rel float64) bool {
	return r.Err == nil && r.Batches >= estimate.MinStopBatches && estimate.Reached(r.Result, rel)
}

func allReached(rows []Row, rel float64) bool {
	for _, r := range rows {
		if !r.Reached(rel) {
			return false
		}
	}
	return len(rows) > 0
}

// Remaining is the forecast of RemainingRange without its range.
func (r Row) Remaining(rel float64, elapsed, interval time.Duration, est estimate.Options) time.Duration {
	need, _, _ := r.RemainingRange(rel, elapsed, interval, est)
	return need
}

// RemainingRange forecasts the time still needed to reach rel, with an
// 80% range (0 when reached, -1 when unknown): the calls still needed
// (estimate.NeededCalls: the spread at stopping, not the small-sample
// quantile of now; the range from the spread's own uncertainty) over the
// call rate (estimate.CallRate over the polls, its range too), and at
// least the polls the stopping rule still needs (the next poll at the
// earliest).
func (r Row) RemainingRange(rel float64, elapsed, interval time.Duration, est estimate.Options) (need, low, high time.Duration) {
	if r.Err != nil || r.Calls == 0 || elapsed <= 0 || interval <= 0 {
		return -1, -1, -1
	}
	if r.Reached(rel) {
		return 0, 0, 0
	}
	const level = 0.8
	nd, ok := estimate.NeededCalls(r.Result, rel, level)
	if !ok {
		m, err := estimate.MoreCalls(r.counts, rel, est)
		if err != nil {
			return -1, -1, -1
		}
		nd = estimate.Needed{Calls: float64(m), Low: float64(m), High: float64(m)}
	}
	polls := int(elapsed / interval)
	perPoll := make([]uint64, 0, max(polls, len(r.counts.Batches)))
	for _, b := range r.counts.Batches {
		perPoll = append(perPoll, b.Calls)
	}
	for len(perPoll) < polls {
		perPoll = append(perPoll, 0) // polls without calls
	}
	rate := float64(r.Calls) / elapsed.Seconds()
	rlo, rhi := rate, rate
	if len(perPoll) >= 2 {
		_, rlo, rhi = estimate.CallRate(perPoll, interval.Seconds(), level)
	}
	minSecs := interval.Seconds() // the next poll is the earliest stop
	if b := estimate.MinStopBatches - r.Batches; b > 0 {
		minSecs = float64(b) * interval.Seconds()
	}
	dur := func(calls, rate float64) time.Duration {
		secs := math.Min(math.Max(calls/rate, minSecs), 1e7)
		return time.Duration(secs * float64(time.Second))
	}
	return dur(nd.Calls, rate), dur(nd.Low, rhi), dur(nd.High, rlo)
}
