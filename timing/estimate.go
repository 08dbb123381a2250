package timing

import (
	"math"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/loader"
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
	// reached, -1: unknown).
	Precision float64
	Remaining []time.Duration
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
	return r
}

// Reached is the precision stopping rule (DESIGN.md "Intervals";
// estimate.Reached): the interval is within rel, rests on at least
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

// Remaining estimates the time still needed to reach rel at the current
// call rate (0 when reached, -1 when unknown): enough calls for the
// interval, and enough polling batches (each interval long) for the
// stopping rule.
func (r Row) Remaining(rel float64, elapsed, interval time.Duration, est estimate.Options) time.Duration {
	if r.Err != nil || r.Calls == 0 || elapsed <= 0 {
		return -1
	}
	if r.Reached(rel) {
		return 0
	}
	var more float64
	if r.exact {
		n := float64(r.Calls)
		more = math.Max(n*(r.Result.RelHalfWidth/rel)*(r.Result.RelHalfWidth/rel)-n, 0)
		more = math.Max(more, float64(estimate.MinStopEvents)-n)
	} else {
		m, err := estimate.MoreCalls(r.counts, rel, est)
		if err != nil {
			return -1
		}
		more = float64(m)
	}
	rate := float64(r.Calls) / elapsed.Seconds()
	secs := more / rate
	if b := estimate.MinStopBatches - r.Batches; b > 0 {
		secs = math.Max(secs, float64(b)*interval.Seconds())
	}
	if secs > 1e7 {
		secs = 1e7
	}
	return time.Duration(secs * float64(time.Second))
}
