// SPDX-License-Identifier: Apache-2.0

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
	// OnNs and OnSq are, for system calls, the checked calls' time on
	// CPU (their ns less the time they waited for a CPU) and its sum of
	// squares; WaitNs and WaitSq the time every call (checked or not)
	// waited for a CPU inside it, from the kernel's run_delay, and its
	// sum of squares. All zero for other targets.
	OnNs, WaitNs uint64
	OnSq, WaitSq U128
	// The calls longer than a tick (assistedMean): those that crossed
	// two or more ticks without waiting for a CPU. LCalls counts them
	// all and LTicks is their sum of c; LChk counts the checked ones,
	// LNs and LSq are their exact ns sum and sum of squares.
	LCalls, LTicks, LChk, LNs uint64
	LSq                       U128
}

func (c CheckCounts) sub(p CheckCounts) CheckCounts {
	return CheckCounts{Calls: c.Calls - p.Calls, Ticks: c.Ticks - p.Ticks, TicksSq: c.TicksSq - p.TicksSq, Ns: c.Ns - p.Ns,
		NsSq: c.NsSq.Sub(p.NsSq), OnNs: c.OnNs - p.OnNs, WaitNs: c.WaitNs - p.WaitNs, OnSq: c.OnSq.Sub(p.OnSq), WaitSq: c.WaitSq.Sub(p.WaitSq),
		LCalls: c.LCalls - p.LCalls, LTicks: c.LTicks - p.LTicks, LChk: c.LChk - p.LChk, LNs: c.LNs - p.LNs, LSq: c.LSq.Sub(p.LSq)}
}

func (c CheckCounts) add(p CheckCounts) CheckCounts {
	return CheckCounts{Calls: c.Calls + p.Calls, Ticks: c.Ticks + p.Ticks, TicksSq: c.TicksSq + p.TicksSq, Ns: c.Ns + p.Ns,
		NsSq: c.NsSq.Add(p.NsSq), OnNs: c.OnNs + p.OnNs, WaitNs: c.WaitNs + p.WaitNs, OnSq: c.OnSq.Add(p.OnSq), WaitSq: c.WaitSq.Add(p.WaitSq),
		LCalls: c.LCalls + p.LCalls, LTicks: c.LTicks + p.LTicks, LChk: c.LChk + p.LChk, LNs: c.LNs + p.LNs, LSq: c.LSq.Add(p.LSq)}
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
		c.Check = c.Check.add(CheckCounts{Calls: p.ChkCalls, Ticks: p.ChkTicks, TicksSq: p.ChkTicksSq, Ns: p.ChkNs,
			NsSq: U128{p.ChkNsSqHi, p.ChkNsSqLo}, OnNs: p.ChkOnNs, OnSq: U128{p.ChkOnSqHi, p.ChkOnSqLo},
			WaitNs: p.WaitNs, WaitSq: U128{p.WaitSqHi, p.WaitSqLo},
			LCalls: p.LongCalls, LTicks: p.LongTicks, LChk: p.ChkLongCalls, LNs: p.ChkLongNs, LSq: U128{p.ChkLongSqHi, p.ChkLongSqLo}})
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
	if ex, err := sampledMean(clk.Resolution(), total, batches, o); err == nil {
		ck.ExactMean = &ex
	}
	return &ck
}

// sampledMean is the checked calls' exact mean as an estimate of every
// call's, with d the tick in ns: helped by the ticks every call crossed
// (assistedMean, estimate.AssistedMean) when the batches carry it; else
// each batch's checked calls weighted by the rate they were drawn at
// (estimate.SampledMean). A batch of long calls (longCheckedNs) whose
// rate differs from the batch before it is left out: the calls in flight
// when the rate changed were
// drawn at the old rate but end in it, and these are the long calls (a
// call preempted for milliseconds spans the change), so weighting them
// by the new rate biased the mean low by a third on a loaded machine.
// Without the batches' rates it is the checked calls' plain mean, which
// is right when the rate never changed.
func sampledMean(d float64, total Counters, batches []Counters, o estimate.Options) (estimate.Result, error) {
	// System calls: the sample is of the calls' time on CPU, and the time
	// they waited for a CPU, known for every call, is added exactly
	// (withWaits).
	waits := total.Check.OnNs > 0
	if r, err := assistedMean(d, total, batches, waits, o); err == nil {
		if waits {
			r = withWaits(r, total)
		}
		return r, nil
	}
	sums := func(c CheckCounts) (float64, float64) {
		if waits {
			return float64(c.OnNs), c.OnSq.Float64()
		}
		return float64(c.Ns), c.NsSq.Float64()
	}
	var bs []estimate.SampledBatch
	var calls uint64
	var prev uint32
	plain := len(batches) == 0
	for i, b := range batches {
		if b.CheckEvery == 0 && b.Check.Calls > 0 {
			plain = true
			break
		}
		// Only batches of long calls: for calls of microseconds the
		// few in flight at the change are nothing beside the batch,
		// while leaving the batch out leaves its calls out of the mean
		// (the first ones of a run, often slower: getppid's interval
		// missed its own calls' mean 7 times in 20, both ways).
		changed := i > 0 && b.CheckEvery != prev && b.Check.Calls > 0 && b.Check.Ns/b.Check.Calls > longCheckedNs
		prev = b.CheckEvery
		calls += b.Check.Calls
		if b.Check.Calls == 0 || changed {
			continue
		}
		sum, sq := sums(b.Check)
		bs = append(bs, estimate.SampledBatch{Rate: float64(b.CheckEvery), Calls: float64(b.Check.Calls), Sum: sum, SumSq: sq})
	}
	var r estimate.Result
	var err error
	switch {
	case plain || calls != total.Check.Calls:
		sum, sq := sums(total.Check)
		r, err = estimate.MeanFromSums(total.Check.Calls, sum, sq, o)
	case len(bs) == 0:
		return estimate.Result{}, errors.New("every batch with checked calls followed a change of the check's rate")
	default:
		r, err = estimate.SampledMean(bs, o)
	}
	if err != nil || !waits {
		return r, err
	}
	return withWaits(r, total), nil
}

// longCheckedNs is the mean checked call (ns) from which a batch where the
// check's rate changed is left out of the sampled mean.
const longCheckedNs = 10000

// withWaits adds to r, the sampled mean time on CPU of a system call's
// calls, the mean time every call waited for a CPU inside it (exact over
// the calls timed), with that mean's own standard error as an estimate of
// the long-run one: preemptions last milliseconds and are rare, a heavy
// tail that a 1-in-64 sample may miss whole (2 runs in 8 of read missed
// the mean of their own calls at 95%, all low), while every call's wait
// is known.
func withWaits(r estimate.Result, total Counters) estimate.Result {
	n := float64(total.Calls)
	if n < 2 {
		return r
	}
	w := float64(total.Check.WaitNs) / n
	v := math.Max(0, (total.Check.WaitSq.Float64()-n*w*w)/(n-1))
	se := math.Hypot(r.StdErr, math.Sqrt(v/n))
	q := estimate.Z(r.Confidence)
	if r.StdErr > 0 {
		q = (r.High - r.Mean) / r.StdErr // the quantile r used (z or t)
	}
	out := r
	out.Mean += w
	out.StdErr = se
	out.Low, out.High = math.Max(0, out.Mean-q*se), out.Mean+q*se
	out.RelHalfWidth = 0
	if out.Mean > 0 {
		out.RelHalfWidth = (out.High - out.Low) / 2 / out.Mean
	}
	for i := range out.Candidates {
		out.Candidates[i].Low, out.Candidates[i].High, out.Candidates[i].StdErr = out.Low, out.High, se
	}
	return out
}
