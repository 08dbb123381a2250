package loader

import (
	"errors"
	"math"
	"math/bits"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/estimate"
)

// HistBuckets is the number of log2 buckets of the ns histogram: bucket b
// counts calls whose duration in ns has floor(log2(ns)) == b (0 ns counts
// in bucket 0).
const HistBuckets = 64

// U128 is an unsigned 128-bit sum (sums of squares cannot overflow it).
type U128 struct{ Hi, Lo uint64 }

// Add returns u + v.
func (u U128) Add(v U128) U128 {
	lo, c := bits.Add64(u.Lo, v.Lo, 0)
	hi, _ := bits.Add64(u.Hi, v.Hi, c)
	return U128{hi, lo}
}

// Sub returns u - v (v <= u).
func (u U128) Sub(v U128) U128 {
	lo, b := bits.Sub64(u.Lo, v.Lo, 0)
	hi, _ := bits.Sub64(u.Hi, v.Hi, b)
	return U128{hi, lo}
}

// Float64 returns u as the nearest float64.
func (u U128) Float64() float64 { return float64(u.Hi)*math.Exp2(64) + float64(u.Lo) }

// Counters are one target's counters summed over CPUs (cumulative since
// attach, or one batch's increment).
type Counters struct {
	// Calls is the number of completed calls n.
	Calls uint64
	// Ticks is sum c_i, the tick crossings.
	Ticks uint64
	// TicksSq is sum c_i^2.
	TicksSq U128
	// Orphans counts entries or exits seen without their partner.
	Orphans uint64
	// Crossings counts calls that crossed at least one tick.
	Crossings uint64
	// NsSum, NsSq: exact ns sums (exact mode only).
	NsSum uint64
	NsSq  U128
	// NsMin, NsMax: shortest and longest call in ns (exact mode, cumulative
	// only; zero in batches).
	NsMin, NsMax uint64
	// Hist is the log2 histogram of ns (exact mode).
	Hist [HistBuckets]uint64
	// Check holds the checked calls of the jiffies clock (see
	// Options.CheckEvery).
	Check CheckCounts
	// CheckEvery is, in a batch, how many calls one checked call stood for
	// while the batch's calls entered (0 in totals, or when it changed
	// within a merged batch).
	CheckEvery uint32
}

// CheckCounts are the counters of the calls timed with both the jiffies
// clock and the ns clock: a random sample of the calls, drawn in BPF
// independently of what the program does.
type CheckCounts struct {
	// Calls is the number of checked calls; Ticks their sum c_i and
	// TicksSq their sum c_i^2; Ns their exact total in ns and NsSq its
	// sum of squares.
	Calls, Ticks, TicksSq, Ns uint64
	NsSq                      U128
}

func (c CheckCounts) sub(p CheckCounts) CheckCounts {
	return CheckCounts{c.Calls - p.Calls, c.Ticks - p.Ticks, c.TicksSq - p.TicksSq, c.Ns - p.Ns, c.NsSq.Sub(p.NsSq)}
}

func (c CheckCounts) add(p CheckCounts) CheckCounts {
	return CheckCounts{c.Calls + p.Calls, c.Ticks + p.Ticks, c.TicksSq + p.TicksSq, c.Ns + p.Ns, c.NsSq.Add(p.NsSq)}
}

// Sub returns the increment c - prev (min and max are dropped).
func (c Counters) Sub(prev Counters) Counters {
	d := Counters{
		Calls:     c.Calls - prev.Calls,
		Ticks:     c.Ticks - prev.Ticks,
		TicksSq:   c.TicksSq.Sub(prev.TicksSq),
		Orphans:   c.Orphans - prev.Orphans,
		Crossings: c.Crossings - prev.Crossings,
		NsSum:     c.NsSum - prev.NsSum,
		NsSq:      c.NsSq.Sub(prev.NsSq),
		Check:     c.Check.sub(prev.Check),
	}
	for i := range d.Hist {
		d.Hist[i] = c.Hist[i] - prev.Hist[i]
	}
	return d
}

// addCounters returns the sum of two increments (min and max dropped).
func addCounters(a, b Counters) Counters {
	every := a.CheckEvery
	if b.CheckEvery != every {
		every = 0
	}
	d := Counters{
		CheckEvery: every,
		Calls:      a.Calls + b.Calls,
		Ticks:      a.Ticks + b.Ticks,
		TicksSq:    a.TicksSq.Add(b.TicksSq),
		Orphans:    a.Orphans + b.Orphans,
		Crossings:  a.Crossings + b.Crossings,
		NsSum:      a.NsSum + b.NsSum,
		NsSq:       a.NsSq.Add(b.NsSq),
		Check:      a.Check.add(b.Check),
	}
	for i := range d.Hist {
		d.Hist[i] = a.Hist[i] + b.Hist[i]
	}
	return d
}

// sumCPUs adds the per-CPU values of one tp_counters element.
func sumCPUs(per []bpf.TimingTpCounts) Counters {
	var c Counters
	var minPlus1 uint64 // the BPF side stores min+1, 0 meaning unset
	for _, p := range per {
		c.Calls += p.Calls
		c.Ticks += p.Ticks
		c.TicksSq = c.TicksSq.Add(U128{p.TicksSqHi, p.TicksSqLo})
		c.Orphans += p.Orphans
		c.Crossings += p.Crossings
		c.NsSum += p.NsSum
		c.NsSq = c.NsSq.Add(U128{p.NsSqHi, p.NsSqLo})
		if p.NsMin != 0 && (minPlus1 == 0 || p.NsMin < minPlus1) {
			minPlus1 = p.NsMin
		}
		if p.NsMax > c.NsMax {
			c.NsMax = p.NsMax
		}
		for i := range c.Hist {
			c.Hist[i] += p.Hist[i]
		}
		c.Check = c.Check.add(CheckCounts{p.ChkCalls, p.ChkTicks, p.ChkTicksSq, p.ChkNs, U128{p.ChkNsSqHi, p.ChkNsSqLo}})
	}
	if minPlus1 != 0 {
		c.NsMin = minPlus1 - 1
	}
	return c
}

// ticksFromNs sets the tick sums to the exact ns sums: with the ns clock a
// call's ticks are its ns, and the BPF programs keep only the ns sums
// (tp_ticks_are_ns in bpf/timing.h).
func (c *Counters) ticksFromNs() {
	c.Ticks, c.TicksSq = c.NsSum, c.NsSq
}

// RunStats are the session-wide BPF statistics, summed over CPUs.
type RunStats struct {
	// RingDrops counts crossing records lost to a full ring buffer.
	RingDrops uint64
	// StackFails counts records whose stack could not be captured.
	StackFails uint64
	// Filtered counts events from processes other than the target.
	Filtered uint64
	// Overwritten counts entries overwritten by recursion deeper than
	// MaxDepth (their calls are orphans: the outermost, longest calls).
	Overwritten uint64
	// NoEntry counts exits that found no entry (orphans), after
	// attaching: for hash-keyed entry state (Go, kernel functions) the
	// entries evicted from a full in-flight map; else exits of calls whose
	// entry was missed.
	NoEntry uint64
	// InFlightCap is the in-flight map's size (entries).
	InFlightCap uint32
}

// MaxDepth is how deep one thread's (or goroutine's) calls of timed
// functions are followed: deeper recursion overwrites the oldest entries
// (TP_MAX_DEPTH in bpf/timing.h).
const MaxDepth = 16

// EstimatorCounts turns a target's cumulative counters and its polling
// batches into the estimator's inputs for clock clk (with the ns clock the
// ticks are exact ns), and returns the number of batches with calls. The
// batches are dropped when they do not add up to the totals (a final read
// that moved after the last batch), so the batch-means interval never rests
// on counts that disagree with the mean.
func EstimatorCounts(clk Clock, total Counters, batches []Counters) (estimate.Counts, int) {
	ec := estimate.Counts{Resolution: clk.Resolution(), Calls: total.Calls, Ticks: total.Ticks}
	if total.TicksSq.Hi == 0 {
		ec.TicksSq, ec.HasTicksSq = total.TicksSq.Lo, true
	}
	var calls, ticks uint64
	for _, b := range batches {
		if b.Calls == 0 {
			continue
		}
		ec.Batches = append(ec.Batches, estimate.Batch{Calls: b.Calls, Ticks: b.Ticks})
		calls += b.Calls
		ticks += b.Ticks
	}
	n := len(ec.Batches)
	if calls != total.Calls || ticks != total.Ticks {
		ec.Batches = nil
	}
	return ec, n
}

// CheckEstimatorCounts turns a target's checked calls, cumulative and per
// polling batch, into the estimator's inputs for the jiffies clock clk,
// and returns their exact ns total. Batches are dropped when they do not
// add up to the totals (see EstimatorCounts).
func CheckEstimatorCounts(clk Clock, total Counters, batches []Counters) (estimate.Counts, uint64) {
	ck := total.Check
	ec := estimate.Counts{Resolution: clk.Resolution(), Calls: ck.Calls, Ticks: ck.Ticks,
		TicksSq: ck.TicksSq, HasTicksSq: true}
	var calls, ticks uint64
	for _, b := range batches {
		if b.Check.Calls == 0 {
			continue
		}
		ec.Batches = append(ec.Batches, estimate.Batch{Calls: b.Check.Calls, Ticks: b.Check.Ticks})
		calls += b.Check.Calls
		ticks += b.Check.Ticks
	}
	if calls != ck.Calls || ticks != ck.Ticks {
		ec.Batches = nil
	}
	return ec, ck.Ns
}

// ClockCheck compares the jiffies estimate of a target's checked calls
// (Options.CheckEvery) with their exact mean (estimate.CheckClock, at o's
// confidence); nil when none were checked.
func ClockCheck(clk Clock, total Counters, batches []Counters, o estimate.Options) *estimate.ClockCheck {
	if clk.Kind != ClockJiffies || total.Check.Calls == 0 {
		return nil
	}
	ec, ns := CheckEstimatorCounts(clk, total, batches)
	ck, err := estimate.CheckClock(ec, float64(ns), o)
	if err != nil {
		return nil
	}
	if ex, err := sampledMean(total, batches, o); err == nil {
		ck.ExactMean = &ex
	}
	return &ck
}

// sampledMean is the checked calls' exact mean as an estimate of every
// call's: each batch's checked calls weighted by the rate they were drawn
// at (estimate.SampledMean). A batch whose rate differs from the batch
// before it is left out: the calls in flight when the rate changed were
// drawn at the old rate but end in it, and these are the long calls (a
// call preempted for milliseconds spans the change), so weighting them
// by the new rate biased the mean low by a third on a loaded machine.
// Without the batches' rates it is the checked calls' plain mean, which
// is right when the rate never changed.
func sampledMean(total Counters, batches []Counters, o estimate.Options) (estimate.Result, error) {
	var bs []estimate.SampledBatch
	var calls uint64
	var prev uint32
	plain := len(batches) == 0
	for i, b := range batches {
		if b.CheckEvery == 0 && b.Check.Calls > 0 {
			plain = true
			break
		}
		changed := i > 0 && b.CheckEvery != prev
		prev = b.CheckEvery
		calls += b.Check.Calls
		if b.Check.Calls == 0 || changed {
			continue
		}
		bs = append(bs, estimate.SampledBatch{Rate: float64(b.CheckEvery), Calls: float64(b.Check.Calls),
			Sum: float64(b.Check.Ns), SumSq: b.Check.NsSq.Float64()})
	}
	if plain || calls != total.Check.Calls {
		return estimate.MeanFromSums(total.Check.Calls, float64(total.Check.Ns), total.Check.NsSq.Float64(), o)
	}
	if len(bs) == 0 {
		return estimate.Result{}, errors.New("every batch with checked calls followed a change of the check's rate")
	}
	return estimate.SampledMean(bs, o)
}
