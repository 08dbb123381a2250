// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"

	"github.com/tickprof/tickprof/estimate"
)

// assistedMean is the mean of every call estimated from the checked calls
// and the ticks every call crossed (estimate.AssistedMean), by polling
// batch; for system calls the mean time on CPU, to which the caller adds
// the exact wait (withWaits). d is the tick in ns. It fails when the
// batches cannot carry it (none, or not adding up to the totals, or a
// batch whose rate changed under long calls: see sampledMean), and then
// the caller falls back to the drawn calls' weighted mean.
func assistedMean(d float64, total Counters, batches []Counters, waits bool, o estimate.Options) (estimate.Result, error) {
	if len(batches) == 0 {
		return estimate.Result{}, errors.New("no batches")
	}
	var bs []estimate.AssistedBatch
	var sum Counters
	var prev uint32
	for i, b := range batches {
		sum = addCounters(sum, b)
		if b.Calls == 0 {
			continue
		}
		if b.CheckEvery == 0 {
			return estimate.Result{}, errors.New("the check's rate changed within a batch")
		}
		if i > 0 && b.CheckEvery != prev && b.Check.Calls > 0 && b.Check.Ns/b.Check.Calls > longCheckedNs {
			return estimate.Result{}, errors.New("the check's rate changed under long calls")
		}
		prev = b.CheckEvery
		bs = append(bs, assistedBatch(d, b, waits))
	}
	if sum.Calls != total.Calls || sum.Ticks != total.Ticks || sum.Check.Calls != total.Check.Calls ||
		sum.Check.XCalls != total.Check.XCalls || sum.Check.XChk != total.Check.XChk || sum.Check.LCalls != total.Check.LCalls {
		return estimate.Result{}, errors.New("the batches do not add up to the totals")
	}
	return estimate.AssistedMean(bs, o)
}

// assistedBatch turns one batch's counters into estimate.AssistedBatch.
// y is a call's exact ns, or for system calls (waits) its time on CPU.
// The assisted strata are the calls that crossed ticks without waiting
// for a CPU (bpf/timing.h, tp_close), whose time on CPU is their ns: one
// tick (x = d, the residual y - d from the drawn ones), or more (longer
// than a tick: d c, to within d each).
func assistedBatch(d float64, b Counters, waits bool) estimate.AssistedBatch {
	ck := b.Check
	sum, sq := ck.Ns, ck.NsSq
	if waits {
		sum, sq = ck.OnNs, ck.OnSq
	}
	n := float64(ck.XChk)
	return estimate.AssistedBatch{
		Rate: float64(b.CheckEvery), Calls: float64(b.Calls), Crossing: float64(ck.XCalls), Aux: d * float64(ck.XCalls),
		Still: estimate.Sums{N: float64(ck.Calls - ck.XChk - ck.LChk), Sum: float64(sum - ck.XNs - ck.LNs),
			SumSq: sq.Sub(ck.XSq).Sub(ck.LSq).Float64()},
		Crossed: estimate.Sums{N: n, Sum: float64(ck.XNs) - n*d,
			SumSq: max(0, ck.XSq.Float64()-2*d*float64(ck.XNs)+n*d*d)},
		Long: float64(ck.LCalls), LongAux: d * float64(ck.LTicks), LongSlack: d * float64(ck.LCalls),
	}
}
