// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"math"
	"testing"

	"github.com/tickprof/tickprof/estimate"
)

// TestSampledMeanRateChange: the batch in which the check's rate changed
// holds calls drawn at the old rate (the long ones in flight at the
// change), so it is left out of the weighted mean; a run whose only
// checked calls are in such batches has no sampled mean.
func TestSampledMeanRateChange(t *testing.T) {
	o := estimate.Options{Confidence: 0.95}
	batch := func(every uint32, calls, ns uint64) Counters {
		return Counters{CheckEvery: every, Check: CheckCounts{Calls: calls, Ns: ns, NsSq: U128{Lo: ns * ns / max(calls, 1)}}}
	}
	// 64 -> 1: the second batch (the change) holds one 3 ms call drawn at
	// 1 in 64 among 20 of 500 us; the third, at 1 again, 40 of 500 us.
	bs := []Counters{batch(64, 2, 1000000), batch(1, 21, 13000000), batch(1, 40, 20000000)}
	total := Counters{Check: CheckCounts{Calls: 63, Ns: 34000000}}
	r, err := sampledMean(4e6, total, bs, o)
	if err != nil {
		t.Fatal(err)
	}
	// Batches 1 and 3: (64*1e6 + 20e6) / (64*2 + 40).
	if want := (64*1e6 + 20e6) / (64*2 + 40); math.Abs(r.Mean-want) > 1e-6 {
		t.Errorf("mean %v, want %v (the changed batch left out)", r.Mean, want)
	}
	if _, err := sampledMean(4e6, Counters{Check: CheckCounts{Calls: 21, Ns: 13000000}}, []Counters{batch(64, 0, 0), batch(1, 21, 13000000)}, o); err == nil {
		t.Error("only a changed batch: want no sampled mean")
	}
}

// TestSampledMeanWaits: for system calls the sample is of the time on CPU
// and every call's wait for a CPU is added exactly: a sample that missed
// the one preempted call (2 ms among 1,000 calls of 400 ns) still has its
// wait in the mean, 400 + 2000 ns.
func TestSampledMeanWaits(t *testing.T) {
	o := estimate.Options{Confidence: 0.95}
	on := U128{Lo: 16 * 400 * 400}
	b := Counters{Calls: 1000, CheckEvery: 64, Check: CheckCounts{Calls: 16, Ns: 16 * 400, NsSq: on, OnNs: 16 * 400, OnSq: on,
		WaitNs: 2000000, WaitSq: U128{Lo: 2000000 * 2000000}}}
	r, err := sampledMean(4e6, b, []Counters{b}, o)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.Mean-2400) > 1e-6 {
		t.Errorf("mean %v, want 2400 (400 on CPU + 2000000/1000 waited)", r.Mean)
	}
	// The wait's standard error: s_w / sqrt(n), s_w^2 = (4e12 - 1000 * 2000^2) / 999.
	sw := math.Sqrt((4e12 - 1000*2000.0*2000) / 999)
	if math.Abs(r.StdErr-sw/math.Sqrt(1000)) > 1e-6 || !(r.Low < 2400 && r.High > 2400) {
		t.Errorf("standard error %v, want %v; interval [%v, %v]", r.StdErr, sw/math.Sqrt(1000), r.Low, r.High)
	}
	// Without the on-CPU sums (not a system call) the plain sample.
	b.Check.OnNs, b.Check.OnSq = 0, U128{}
	if r, _ := sampledMean(4e6, b, []Counters{b}, o); math.Abs(r.Mean-400) > 1e-6 {
		t.Errorf("without waits: mean %v, want 400", r.Mean)
	}
}

// TestAssistedMeanCounters: one batch of 1,000 calls, 998 that crossed
// fewer than two ticks (99 checked: 97 of 300 ns, 2 of 500 and 700) and
// 2 that crossed three (1 checked, 10 ms). The estimate is 998 times the
// 99 checked calls' mean plus the 2 long calls at 3 ticks each, to within
// a tick each: +-8000 ns on the mean of 1,000 calls.
func TestAssistedMeanCounters(t *testing.T) {
	const d = 4e6
	o := estimate.Options{Confidence: 0.95}
	ck := CheckCounts{Calls: 100, Ns: 97*300 + 1200 + 1e7, NsSq: U128{Lo: 97*300*300 + 500*500 + 700*700 + 1e14},
		Ticks: 2 + 3, TicksSq: 2 + 9, LCalls: 2, LTicks: 6, LChk: 1, LNs: 1e7, LSq: U128{Lo: 1e14}}
	b := Counters{Calls: 1000, Ticks: 14, CheckEvery: 10, Check: ck}
	r, err := sampledMean(d, b, []Counters{b}, o)
	if err != nil {
		t.Fatal(err)
	}
	want := (998*(97*300+1200)/99.0 + 24e6) / 1000
	if math.Abs(r.Mean-want) > 1e-6 || r.Low > want-8000 || r.High < want+8000 {
		t.Errorf("%v [%v, %v], want %v and at least 8000 ns on each side", r.Mean, r.Low, r.High, want)
	}
	// Batches that do not add up to the totals: the plain weighted mean.
	total := b
	total.Check.LCalls++
	if _, err := assistedMean(d, total, []Counters{b}, false, o); err == nil {
		t.Error("batches that do not add up: want an error")
	}
}
