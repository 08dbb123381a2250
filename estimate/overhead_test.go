// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestInCallOverheadTable checks the mean and the model's part of the
// interval on sums worked by hand: 100 echoes of G_on 1000 or 3000 ns
// (half each), no wait, model O = 200 + (1.1 + 0.2 u) G_on + P at u = 0.5.
func TestInCallOverheadTable(t *testing.T) {
	s := EchoSums{N: 100, G: 50*1000 + 50*3000, GSq: 50*1e6 + 50*9e6}
	m := OverheadModel{A: 200, B: 1.1, C: 0.2, S0: 30, S1: 0.05}
	r, err := InCallOverhead(s, nil, m, 0.5, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// mean = 200 + 1.2 * 2000 = 2600; per-call sd of 1.2 G: 1.2 * 1000 *
	// sqrt(100/99); model spread hypot(30, 0.05 * 2000) = 104.4.
	se := 1.2 * 1000 * math.Sqrt(100.0/99) / 10
	want := math.Hypot(se, math.Hypot(30, 100))
	if math.Abs(r.Mean-2600) > 1e-6 || math.Abs(r.StdErr-want) > 1e-6 || r.Method != "echo" {
		t.Errorf("got %+v, want mean 2600 and standard error %.3f", r, want)
	}
	if _, err := InCallOverhead(EchoSums{N: 5, G: 5000}, nil, m, 0, Options{}); err == nil {
		t.Error("5 echoes: want an error")
	}
	if _, err := InCallOverhead(s, nil, OverheadModel{A: 0, B: -1}, 0, Options{}); err == nil {
		t.Error("a negative slope: want an error")
	}
}

// TestInCallOverheadCoverage simulates runs whose calls' true overhead
// follows the model up to a run-level error of the model's stated spread
// (a call pattern the model was not fitted on), with gaps that vary from
// call to call and rare long waits for a CPU (1% of calls, 20 us on
// average), a random tenth of the calls echoed (600 to 4600 echoes), and
// checks that the 95% interval holds the mean overhead of every call in
// 95% of runs. 2000 runs: outside 1865-1960 with probability about 2e-4.
// With fewer echoes (60 to 460) the rare waits make the mean's
// distribution skewed and the interval held it in 92.7% of runs.
func TestInCallOverheadCoverage(t *testing.T) {
	const runs = 2000
	m := OverheadModel{A: -200, B: 1.1, C: 0.3, S0: 20, S1: 0.08}
	rng := rand.New(rand.NewPCG(7, 11))
	held := 0
	for run := 0; run < runs; run++ {
		u := rng.Float64()
		gmed := 800 + 4000*rng.Float64()
		// The run's model error, one draw per run, of the stated spread.
		eps := rng.NormFloat64() * m.Spread(gmed*1.06)
		// Every call's true overhead; a random tenth is echoed.
		var s EchoSums
		var truth float64
		n := 6000 + rng.IntN(40000)
		for i := 0; i < n; i++ {
			g := gmed * math.Exp(0.35*rng.NormFloat64())
			p := 0.0
			if rng.Float64() < 0.01 {
				p = 20000 * rng.ExpFloat64()
			}
			if rng.IntN(10) == 0 {
				s = s.Add(EchoSums{N: 1, G: g, GSq: g * g, P: p, PSq: p * p, GP: g * p})
			}
			truth += m.A + m.Slope(u)*g + p + eps
		}
		truth /= float64(n)
		if s.N < MinEchoes {
			run--
			continue
		}
		r, err := InCallOverhead(s, nil, m, u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Low <= truth && truth <= r.High {
			held++
		}
	}
	t.Logf("held the run's true mean overhead in %d of %d runs", held, runs)
	if held < 1865 || held > 1960 {
		t.Errorf("coverage %d of %d: want 95%% (1865-1960)", held, runs)
	}
}

func TestPhysicalBounds(t *testing.T) {
	r := Result{Mean: 500, Low: -300, High: 2000, Confidence: 0.95}
	got := PhysicalBounds(r, 1000, 1500, 800)
	if got.Low != 200 || got.High != 1500 || got.Mean != 500 {
		t.Errorf("bounds by a 1000-1500 ns call range and 800 ns overhead: %+v", got)
	}
	got = PhysicalBounds(r, 0, 0, 0)
	if got.Low != 0 || got.High != 2000 {
		t.Errorf("without call range: %+v", got)
	}
	got = PhysicalBounds(Result{Mean: 100, Low: 50, High: 150}, 5000, 6000, 200)
	if got.Low != 4800 || got.High != 4800 || got.Mean != 4800 {
		t.Errorf("an interval below every call minus the overhead: %+v", got)
	}
}

func TestOverheadRange(t *testing.T) {
	r, err := OverheadRange(900, 800, 5000, 0.95)
	if err != nil || r.Low != 800 || r.High != 5000 || r.Method != "pattern-range" {
		t.Errorf("%+v, %v", r, err)
	}
	if _, err := OverheadRange(900, 1000, 5000, 0.95); err == nil {
		t.Error("mean below the range: want an error")
	}
}

// TestCorrectQuantileByDistCoverage simulates calls whose own duration B
// and probe overhead O are dependent (cold calls are slower and carry
// more overhead), measured as D = B + O, and checks that the corrected
// interval of each quantile of B holds its true value in at least 95% of
// runs. The bounds are conservative by construction (they hold for any
// dependence), so the test asserts a floor only: 300 runs, at true
// coverage 0.95 fewer than 274 hold with probability about 1e-3.
func TestCorrectQuantileByDistCoverage(t *testing.T) {
	const runs = 300
	rng := rand.New(rand.NewPCG(3, 5))
	ps := []float64{0.5, 0.9, 0.99}
	held := make([]int, len(ps))
	for run := 0; run < runs; run++ {
		n := 2000
		bs, ds, os := make([]float64, n), make([]float64, n), make([]float64, 0, n/5)
		for i := 0; i < n; i++ {
			cold := rng.Float64() < 0.3
			b := 2000 * math.Exp(0.3*rng.NormFloat64())
			o := 800 + 100*rng.NormFloat64()
			if cold {
				b *= 1.2
				o = 3000 + 800*rng.NormFloat64()
			}
			bs[i], ds[i] = b, b+math.Max(0, o)
			if i%5 == 0 { // the echoed share, in 50 ns buckets
				os = append(os, 50*math.Ceil(math.Max(0, o)/50))
			}
		}
		sort.Float64s(bs)
		od := OverheadDist{Hist: bucketsOf(os), N: uint64(len(os))}
		var mean float64
		for _, o := range os {
			mean += o / float64(len(os))
		}
		dq := func(p float64) (Quantile, error) { return QuantileOfSamples(ds, p, Options{}) }
		for k, p := range ps {
			q, err := CorrectQuantileByDist(p, dq, od, mean, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			truth := bs[int(math.Ceil(p*float64(n)))-1]
			if q.Low <= truth && truth <= q.High {
				held[k]++
			}
		}
	}
	for k, p := range ps {
		t.Logf("p%g: held in %d of %d runs", 100*p, held[k], runs)
		if held[k] < 274 {
			t.Errorf("p%g: coverage %d of %d, want at least 274", 100*p, held[k], runs)
		}
	}
}

// driftRun simulates one run of the contention case: calls of a nearly
// constant own duration B (10 us, a few ns of spread; 2% preempted for
// tens of us; 200 calls a phase), whose overhead O drifts between the
// run's 25 phases (each
// phase's shift normal with SD 300 ns, around 900 ns, 80 ns within a
// phase), measured as D = B + O; the echoes come from k of the phases
// drawn at random, 300 calls each. It returns the sorted B, the measured
// durations and the echoes' distribution, one batch per echoed phase.
func driftRun(rng *rand.Rand, k int) (bs, ds []float64, od OverheadDist) {
	const phases, perPhase, perEcho = 25, 200, 300
	shift := make([]float64, phases)
	for i := range shift {
		shift[i] = 300 * rng.NormFloat64()
	}
	overhead := func(ph int) float64 { return math.Max(0, 900+shift[ph]+80*rng.NormFloat64()) }
	for ph := 0; ph < phases; ph++ {
		for i := 0; i < perPhase; i++ {
			b := 10000 + 5*rng.NormFloat64()
			if rng.Float64() < 0.02 {
				b += 30000 * rng.ExpFloat64()
			}
			bs, ds = append(bs, b), append(ds, b+overhead(ph))
		}
	}
	sort.Float64s(bs)
	var all []float64
	for _, ph := range rng.Perm(phases)[:k] {
		batch := make([]float64, perEcho)
		for i := range batch {
			batch[i] = 10 * math.Ceil(overhead(ph)/10)
		}
		all = append(all, batch...)
		if m, ok := BucketMedian(bucketsOf(batch)); ok {
			od.BatchMedians = append(od.BatchMedians, m)
		}
	}
	od.Hist, od.N = bucketsOf(all), uint64(len(all))
	return bs, ds, od
}

// TestCorrectQuantileByDistDrift checks the quantiles' coverage when the
// overhead drifts during the run and the echoes see a few moments of it
// (driftRun, 4 echoed phases of 25): with the echoes' batches the drift
// is measured and carried, and each quantile's interval must hold in at
// least 180 of 200 runs (at a true coverage of 95%, fewer with probability
// 1.2e-3 per quantile); without them (the echoes taken as independent
// calls) the p90, where B has almost no spread, must hold in fewer than
// 180 (it holds in about half): the test sees the failure it guards
// against.
func TestCorrectQuantileByDistDrift(t *testing.T) {
	const runs = 200
	rng := rand.New(rand.NewPCG(23, 29))
	ps := []float64{0.5, 0.9, 0.99}
	held, heldPooled := make([]int, len(ps)), make([]int, len(ps))
	for run := 0; run < runs; run++ {
		bs, ds, od := driftRun(rng, 4)
		pooled := od
		pooled.BatchMedians = nil
		sort.Float64s(ds)
		dq := func(p float64) (Quantile, error) {
			return quantileOf(len(ds), func(r uint64) (float64, float64) { return ds[r-1], ds[r-1] }, ds[0], ds[len(ds)-1], p, Options{}, false)
		}
		for j, p := range ps {
			truth := bs[int(math.Ceil(p*float64(len(bs))))-1]
			for _, c := range []struct {
				od   OverheadDist
				held *int
			}{{od, &held[j]}, {pooled, &heldPooled[j]}} {
				q, err := CorrectQuantileByDist(p, dq, c.od, 900, 0.95)
				if err != nil {
					t.Fatal(err)
				}
				if q.Low <= truth && truth <= q.High {
					*c.held++
				}
			}
		}
	}
	for j, p := range ps {
		t.Logf("p%g: held in %d of %d runs with the batches, %d without", 100*p, held[j], runs, heldPooled[j])
		if held[j] < 180 {
			t.Errorf("p%g: coverage %d of %d with the batches, want at least 180", 100*p, held[j], runs)
		}
	}
	if heldPooled[1] >= 180 {
		t.Errorf("p90 without the batches held in %d of %d: the simulation no longer shows the drift's misses", heldPooled[1], runs)
	}
}

// valueBuckets is a histogram with one bucket per distinct value.
type valueBuckets struct {
	v []float64
	n []uint64
}

func bucketsOf(xs []float64) valueBuckets {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var b valueBuckets
	for _, x := range s {
		if k := len(b.v); k > 0 && b.v[k-1] == x {
			b.n[k-1]++
			continue
		}
		b.v, b.n = append(b.v, x), append(b.n, 1)
	}
	return b
}
func (b valueBuckets) Buckets() int                    { return len(b.v) }
func (b valueBuckets) Count(i int) uint64              { return b.n[i] }
func (b valueBuckets) Bounds(i int) (float64, float64) { return b.v[i], b.v[i] }

// TestSampledMeanCoverage draws calls at rates that change between batches
// while their durations drift during the run, and checks the weighted
// mean's 95% interval holds the mean of every call in 95% of runs. 2000
// runs: outside 1865-1960 with probability about 2e-4.
func TestSampledMeanCoverage(t *testing.T) {
	const runs = 2000
	rng := rand.New(rand.NewPCG(13, 17))
	held := 0
	for run := 0; run < runs; run++ {
		var all, n float64
		var bs []SampledBatch
		for b := 0; b < 30; b++ {
			rate := float64(int(1) << (rng.IntN(5)))
			level := 300 + 100*math.Sin(float64(b)/5) // drift
			var sb SampledBatch
			sb.Rate = rate
			for i := 0; i < 2000; i++ {
				x := level * math.Exp(0.5*rng.NormFloat64())
				all += x
				n++
				if rng.Float64()*rate < 1 {
					sb.Calls++
					sb.Sum += x
					sb.SumSq += x * x
				}
			}
			bs = append(bs, sb)
		}
		r, err := SampledMean(bs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if truth := all / n; r.Low <= truth && truth <= r.High {
			held++
		}
	}
	t.Logf("held in %d of %d runs", held, runs)
	if held < 1865 || held > 1960 {
		t.Errorf("coverage %d of %d: want 95%% (1865-1960)", held, runs)
	}
}

// TestDecide checks which interval a jiffies estimate with an exact
// sample reports.
func TestDecide(t *testing.T) {
	tick := Result{Mean: 800, Low: 540, High: 1020, Confidence: 0.95, Method: "two-point"}
	sharp := &Result{Mean: 1106, Low: 1100, High: 1112, Confidence: 0.95, Calls: 25000}
	r, why := ClockCheck{ExactMean: sharp}.Decide(tick)
	if r.Mean != 1106 || r.Method != "exact-sample" || why == "" {
		t.Errorf("a sharper exact sample: got %+v (%q)", r, why)
	}
	loose := &Result{Mean: 1106, Low: 400, High: 1800, Confidence: 0.95, Calls: 40}
	tick2 := Result{Mean: 800, Low: 790, High: 810, Confidence: 0.95, Method: "observed"}
	r, _ = ClockCheck{ExactMean: loose}.Decide(tick2)
	if r.Low != 400 || r.High != 1800 || r.Mean != 800 {
		t.Errorf("a looser exact sample: want the hull around the tick mean, got %+v", r)
	}
	// As sharp, but from 50 calls: too few to report alone (a heavy tail
	// may be missing from them); the hull.
	few := &Result{Mean: 1106, Low: 1100, High: 1112, Confidence: 0.95, Calls: 50}
	r, _ = ClockCheck{ExactMean: few}.Decide(tick)
	if r.Low != 540 || r.High != 1112 || r.Method != "two-point+exact-sample" {
		t.Errorf("a sharp sample of 50 calls: want the hull, got %+v", r)
	}
	r, why = ClockCheck{}.Decide(tick)
	if r.Mean != tick.Mean || r.Low != tick.Low || r.High != tick.High || why != "" {
		t.Errorf("no exact sample: %+v %q", r, why)
	}
}

// TestSampledMeanSmallBatches: a batch of one drawn call (at 1 in 64, so
// standing for 64 calls) has no spread of its own; it takes the spread
// pooled within the other batches, here 100 ns^2 a call, instead of
// adding nothing to the variance.
func TestSampledMeanSmallBatches(t *testing.T) {
	// Two batches drawn at rate 1: 10 calls each with spread s^2 = 100
	// (values 500 +- 10 alternating, sum of squares about the mean 1000,
	// 9 df: 1000/9 each), and one call of 600 at rate 64.
	b := func(calls, mean, ss float64, rate float64) SampledBatch {
		return SampledBatch{Rate: rate, Calls: calls, Sum: calls * mean, SumSq: ss + calls*mean*mean}
	}
	batches := []SampledBatch{b(10, 500, 1000, 1), b(10, 500, 1000, 1), b(1, 600, 0, 64)}
	r, err := SampledMean(batches, Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	w := 10.0 + 10 + 64
	pooled := 2000.0 / 18
	want := 2*(10/w)*(10/w)*(1000.0/9)/10 + (64/w)*(64/w)*pooled/1
	if math.Abs(r.Mean-(5000+5000+64*600)/w) > 1e-9 || math.Abs(r.StdErr*r.StdErr-want) > 1e-9 {
		t.Errorf("mean %v, variance %v; want %v and %v", r.Mean, r.StdErr*r.StdErr, (5000+5000+64*600)/w, want)
	}
}

// TestBatchShift checks the drift's half-width: two batches with medians
// 100 and 200 give t_{0.975;1} (12.706) times the standard error of their
// mean (50); one batch, or equal medians, give 0. And BucketMedian finds
// the median's bucket.
func TestBatchShift(t *testing.T) {
	if got := batchShift([]float64{100, 200}, 0.95); math.Abs(got-12.706*50) > 0.5 {
		t.Errorf("two batches: %v, want about %v", got, 12.706*50)
	}
	if got := batchShift([]float64{100}, 0.95); got != 0 {
		t.Errorf("one batch: %v, want 0", got)
	}
	if got := batchShift([]float64{100, 100, 100}, 0.95); got != 0 {
		t.Errorf("equal batches: %v, want 0", got)
	}
	if m, ok := BucketMedian(bucketsOf([]float64{90, 100, 100, 110, 300})); !ok || m != 100 {
		t.Errorf("median %v, %v: want 100", m, ok)
	}
	if _, ok := BucketMedian(bucketsOf(nil)); ok {
		t.Error("an empty histogram has a median")
	}
}
