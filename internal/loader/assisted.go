// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"errors"

	"github.com/tickprof/tickprof/estimate"
)

// assistedMean is the mean of every call estimated from the checked calls,
// by polling batch, and from the ticks of the calls longer than a tick
// (estimate.AssistedMean); for system calls the mean time on CPU, to
// which the caller adds the exact wait (withWaits). d is the tick in ns.
// It fails when the
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
		sum.Check.LCalls != total.Check.LCalls || sum.Check.LChk != total.Check.LChk {
		return estimate.Result{}, errors.New("the batches do not add up to the totals")
	}
	return estimate.AssistedMean(bs, o)
}

// assistedBatch turns one batch's counters into estimate.AssistedBatch:
// y is a call's exact ns, or for system calls (waits) its time on CPU;
// the calls longer than a tick did not wait for a CPU (bpf/timing.h,
// tp_close), so their time on CPU is their ns, d c to within d each.
func assistedBatch(d float64, b Counters, waits bool) estimate.AssistedBatch {
	ck := b.Check
	sum, sq := ck.Ns, ck.NsSq
	if waits {
		sum, sq = ck.OnNs, ck.OnSq
	}
	return estimate.AssistedBatch{
		Rate: float64(b.CheckEvery), Calls: float64(b.Calls),
		Drawn: estimate.Sums{N: float64(ck.Calls - ck.LChk), Sum: float64(sum - ck.LNs), SumSq: sq.Sub(ck.LSq).Float64()},
		Long:  float64(ck.LCalls), LongAux: d * float64(ck.LTicks), LongSlack: d * float64(ck.LCalls),
	}
}
