// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// stallWorld is a run of short calls back to back on a CPU that is taken
// away now and then, as measured on getppid and read under tickprof's
// check (docs/coverage.md): a call lasts base ns plus an exponential
// spread, then gap ns pass to the next; interrupts (pInt a call) hold a
// call a uniform time in [intLo, intHi] ns, and rare stalls (pStall a
// call) a log-uniform time in [stallLo, stallHi] ns, the heavy tail a
// 1-in-rate sample misses. A tick every d ns from a random phase; each
// call drawn with probability 1/rate; polling batches of batch calls.
type stallWorld struct {
	calls, batch             int
	base, spread, gap        float64
	pInt, intLo, intHi       float64
	pStall, stallLo, stallHi float64
	d, rate                  float64
}

// run simulates one run and returns the calls' exact mean and the drawn
// calls by batch for SampledMean (the plain mean) and AssistedMean.
func (w stallWorld) run(rng *rand.Rand) (truth float64, old []SampledBatch, asst []AssistedBatch) {
	t := rng.Float64() * w.d
	var total float64
	var ob SampledBatch
	var ab AssistedBatch
	flush := func() {
		if ab.Calls > 0 {
			old = append(old, ob)
			asst = append(asst, ab)
		}
		ob = SampledBatch{Rate: w.rate}
		ab = AssistedBatch{Rate: w.rate}
	}
	flush()
	for i := 0; i < w.calls; i++ {
		y := w.base + rng.ExpFloat64()*w.spread
		if rng.Float64() < w.pInt {
			y += w.intLo + (w.intHi-w.intLo)*rng.Float64()
		}
		if rng.Float64() < w.pStall {
			y += w.stallLo * math.Pow(w.stallHi/w.stallLo, rng.Float64())
		}
		c := math.Floor((t+y)/w.d) - math.Floor(t/w.d)
		t += y + w.gap
		total += y
		ab.Calls++
		switch {
		case c == 1:
			ab.Crossing++
			ab.Aux += w.d
		case c > 1:
			ab.Long++
			ab.LongAux += w.d * c
			ab.LongSlack += w.d
		}
		if rng.Float64()*w.rate < 1 {
			ob.add(y)
			switch {
			case c == 1:
				ab.Crossed.add(y - w.d)
			case c == 0:
				ab.Still.add(y)
			}
		}
		if (i+1)%w.batch == 0 {
			flush()
		}
	}
	flush()
	return total / float64(w.calls), old, asst
}

func (b *SampledBatch) add(y float64) {
	b.Calls++
	b.Sum += y
	b.SumSq += y * y
}

func (s *Sums) add(y float64) {
	s.N++
	s.Sum += y
	s.SumSq += y * y
}

// stallCoverage runs reps runs of w and counts the runs whose 95%
// interval held the truth, for both estimators, and how many runs the
// assisted one gave no estimate (too few drawn crossing calls).
func stallCoverage(w stallWorld, reps int, seed uint64) (oldHeld, newHeld, none int) {
	o := Options{Confidence: 0.95}
	rng := rand.New(rand.NewPCG(seed, 21))
	for k := 0; k < reps; k++ {
		truth, ob, ab := w.run(rng)
		if r, err := SampledMean(ob, o); err == nil && r.Low <= truth && truth <= r.High {
			oldHeld++
		}
		r, err := AssistedMean(ab, o)
		if err != nil {
			none++
			continue
		}
		if r.Low <= truth && truth <= r.High {
			newHeld++
		}
	}
	return oldHeld, newHeld, none
}

// TestAssistedMeanStalls: short calls back to back (340 ns, 1 in 200
// held 2-8 us by an interrupt) on a CPU that stalls twice a run for one
// to eight ticks (as getppid's calls were held 19 ms, docs/coverage.md),
// 1 in 16 calls drawn. The drawn calls' plain mean (SampledMean) misses a
// stall it does not draw, and its variance does not know the stall
// exists: its 95% interval covers far less. AssistedMean counts every
// stall through its ticks and covers. A second world without stalls
// checks that the assisted interval still covers there (its crossing
// stratum then rests on a few drawn calls).
//
// False alarm: each world's assisted coverage must reach coverageFloor
// at alpha = 0.001 (91.6% at 400 runs), so a valid 95% interval fails
// one of the two in about 0.2% of seeds; the seed is fixed, so the test
// is deterministic. The plain mean's coverage must stay below 90%: it
// was 60-70% over seeds when the test was written.
func TestAssistedMeanStalls(t *testing.T) {
	const reps = 400
	stalls := stallWorld{calls: 50000, batch: 5000, base: 300, spread: 40, gap: 500,
		pInt: 5e-3, intLo: 2000, intHi: 8000, d: 1e5, rate: 16,
		pStall: 4e-5, stallLo: 1e5, stallHi: 8e5}
	quiet := stalls
	quiet.pStall = 0
	floor := coverageFloor(reps, 0.001)
	for _, c := range []struct {
		name string
		w    stallWorld
		seed uint64
	}{{"stalls", stalls, 1}, {"quiet", quiet, 2}} {
		o, n, none := stallCoverage(c.w, reps, c.seed)
		t.Logf("%s: plain mean covered %d of %d; assisted %d (%d gave none); floor %.1f%%", c.name, o, reps, n, none, 100*floor)
		if float64(n) < floor*reps {
			t.Errorf("%s: the assisted interval covered %d of %d, below %.1f%%", c.name, n, reps, 100*floor)
		}
		if c.name == "stalls" && float64(o) >= 0.9*reps {
			t.Errorf("%s: the plain mean covered %d of %d: the world no longer has the tail it was built for", c.name, o, reps)
		}
	}
}

// TestAssistedMeanExact: with every call drawn the estimate is the
// calls' exact mean, whatever the ticks, and a batch with no drawn call
// takes the others' mean.
func TestAssistedMeanExact(t *testing.T) {
	o := Options{Confidence: 0.95}
	// Calls of 100, 300 (still) and 5,000,000 ns crossing 1 tick of 4 ms.
	b := AssistedBatch{Rate: 1, Calls: 3, Crossing: 1,
		Still:   Sums{N: 2, Sum: 400, SumSq: 100*100 + 300*300},
		Crossed: Sums{N: 1, Sum: 1e6, SumSq: 1e12}, Aux: 4e6}
	b2 := b
	b2.Crossed = Sums{N: 1, Sum: -3e6, SumSq: 9e12} // a 1 ms call that crossed
	b2.Aux = 4e6
	r, err := AssistedMean([]AssistedBatch{b, b2}, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := (400 + 5e6 + 400 + 1e6) / 6.0; math.Abs(r.Mean-want) > 1e-6 {
		t.Errorf("mean %v, want %v", r.Mean, want)
	}
	// A batch of 10 calls with no drawn call: it takes the drawn still
	// calls' mean (200 ns).
	empty := AssistedBatch{Rate: 1, Calls: 10}
	r2, err := AssistedMean([]AssistedBatch{b, b2, empty}, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := (400 + 5e6 + 400 + 1e6 + 10*200) / 16.0; math.Abs(r2.Mean-want) > 1e-6 {
		t.Errorf("with an empty batch: mean %v, want %v", r2.Mean, want)
	}
	// Two calls of 3 ticks each: 24 ms, to within 8 ms, on both sides.
	long := AssistedBatch{Rate: 1, Calls: 2, Long: 2, LongAux: 24e6, LongSlack: 8e6}
	r3, err := AssistedMean([]AssistedBatch{b, b2, long}, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := (400 + 5e6 + 400 + 1e6 + 24e6) / 8.0; math.Abs(r3.Mean-want) > 1e-6 || r3.High-r3.Mean < 8e6/8 {
		t.Errorf("with long calls: %v [%v, %v], want mean %v and 1e6 more on each side", r3.Mean, r3.Low, r3.High, want)
	}
	// One drawn crossing call among 5: the crossing calls join the still
	// ones, and the drawn calls' mean stands for all 7.
	one := b
	one.Calls, one.Crossing, one.Aux = 7, 5, 20e6
	r4, err := AssistedMean([]AssistedBatch{one}, o)
	if err != nil {
		t.Fatal(err)
	}
	if want := (400 + 5e6) / 3.0; math.Abs(r4.Mean-want) > 1e-6 {
		t.Errorf("one drawn crossing call: mean %v, want %v (the plain mean)", r4.Mean, want)
	}
	if _, err := AssistedMean([]AssistedBatch{{Rate: 0.5, Calls: 1}}, o); err == nil {
		t.Error("rate below 1: want an error")
	}
}
