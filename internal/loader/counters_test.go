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
	r, err := sampledMean(total, bs, o)
	if err != nil {
		t.Fatal(err)
	}
	// Batches 1 and 3: (64*1e6 + 20e6) / (64*2 + 40).
	if want := (64*1e6 + 20e6) / (64*2 + 40); math.Abs(r.Mean-want) > 1e-6 {
		t.Errorf("mean %v, want %v (the changed batch left out)", r.Mean, want)
	}
	if _, err := sampledMean(Counters{Check: CheckCounts{Calls: 21, Ns: 13000000}}, []Counters{batch(64, 0, 0), batch(1, 21, 13000000)}, o); err == nil {
		t.Error("only a changed batch: want no sampled mean")
	}
}
