// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// z95 is the two-sided 95% normal quantile.
const z95 = 1.959963984540054

func TestHTSums(t *testing.T) {
	cases := []struct {
		name    string
		d       []float64
		p       []float64
		n       uint64
		est, v  float64
		lo, hi  float64 // 95% interval
		wantErr bool
	}{
		{name: "exact", d: []float64{3, 4}, p: []float64{1, 1}, n: 2, est: 7, v: 0, lo: 7, hi: 7},
		// k = v/est = 10; est + z^2 k/2 ± z sqrt(k est + z^2 k^2/4).
		{name: "half", d: []float64{10}, p: []float64{0.5}, n: 1, est: 20, v: 200,
			lo: 20 + z95*z95*5 - z95*math.Sqrt(200+z95*z95*25), hi: 20 + z95*z95*5 + z95*math.Sqrt(200+z95*z95*25)},
		// v = 200 + 100 (0.75)/0.0625 = 1400, k = 1400/60.
		{name: "mixed p (windows)", d: []float64{10, 10}, p: []float64{0.5, 0.25}, n: 2, est: 60, v: 1400,
			lo: 60 + z95*z95*1400/120 - z95*math.Sqrt(1400+z95*z95*1400*1400/3600/4),
			hi: 60 + z95*z95*1400/120 + z95*math.Sqrt(1400+z95*z95*1400*1400/3600/4)},
		{name: "none", n: 0, est: 0, v: 0, lo: 0, hi: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s HTSums
			for i := range c.d {
				s.Add(c.d[i], c.p[i])
			}
			if s.N != c.n || math.Abs(s.Est-c.est) > 1e-9 || math.Abs(s.Var-c.v) > 1e-9 {
				t.Fatalf("sums %+v, want n %d est %v var %v", s, c.n, c.est, c.v)
			}
			r, err := HTTotal(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.Low-c.lo) > 1e-6 || math.Abs(r.High-c.hi) > 1e-6 || r.Mean != c.est {
				t.Fatalf("interval %v [%v, %v], want %v [%v, %v]", r.Mean, r.Low, r.High, c.est, c.lo, c.hi)
			}
		})
	}
}

func TestHTSumsPlus(t *testing.T) {
	var a, b, all HTSums
	for i, d := range []float64{1, 5, 7, 9} {
		p := []float64{0.1, 0.5, 1, 0.3}[i]
		all.Add(d, p)
		if i%2 == 0 {
			a.Add(d, p)
		} else {
			b.Add(d, p)
		}
	}
	got := a.Plus(b)
	if got.N != all.N || math.Abs(got.Est-all.Est) > 1e-9 || math.Abs(got.Var-all.Var) > 1e-9 {
		t.Fatalf("a+b %+v, want %+v", got, all)
	}
}

func TestHTTotalBadInput(t *testing.T) {
	for _, s := range []HTSums{{Est: math.NaN()}, {Est: -1}, {Var: -1}, {Est: math.Inf(1)}} {
		if _, err := HTTotal(s, Options{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("HTTotal(%+v) error %v, want ErrInvalid", s, err)
		}
	}
	if _, err := HTTotal(HTSums{}, Options{Confidence: 2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("confidence 2: error %v, want ErrInvalid", err)
	}
	if _, err := WallTotal(1, math.NaN(), HTSums{}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("WallTotal with period NaN: error %v, want ErrInvalid", err)
	}
}

func TestWallTotal(t *testing.T) {
	off := HTSums{N: 4, Est: 700, Var: 100}
	r, err := WallTotal(3, 100, off, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mean != 1000 || math.Abs(r.StdErr-math.Sqrt(100+3*100*100)) > 1e-9 || r.Calls != 7 {
		t.Fatalf("wall %+v", r)
	}
}

func TestChooseOffCPUProb(t *testing.T) {
	cases := []struct {
		rate, base, cost, budget, min, want float64
	}{
		{rate: 1000, base: 100, cost: 1000, budget: 0.01, min: 0.001, want: 1},                    // 1.1 ms/s < 10 ms/s
		{rate: 200e3, base: 20, cost: 1000, budget: 0.01, min: 0.001, want: (0.05e3 - 20) / 1000}, // 50 ns per interval left
		{rate: 1e7, base: 100, cost: 1000, budget: 0.01, min: 0.001, want: 0.001},                 // base alone is over budget
		{rate: 0, base: 100, cost: 1000, budget: 0.01, min: 0.001, want: 1},
	}
	for _, c := range cases {
		if got := ChooseOffCPUProb(c.rate, c.base, c.cost, c.budget, c.min); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ChooseOffCPUProb(%v) = %v, want %v", c, got, c.want)
		}
	}
}

// TestOffCPUCoverage draws the sampling design many times over fixed
// populations of intervals and checks that the estimator is unbiased and
// that the 95% interval holds the true total about 95% of the time.
//
// Bias: the mean of reps estimates is within 4 standard errors of the
// truth (false alarm 6e-5 per case for an unbiased estimator, the mean
// being near normal). Coverage: the count of covering replications is
// Binomial(reps, c); the test fails outside [0.93, 0.975], which for a
// true coverage of 0.95 is 7 and 9 standard deviations away (false alarm
// below 1e-10 per case) and catches an interval that is too narrow by
// about a tenth (the plain normal interval covered 0.929 on the lognormal
// case) or needlessly wide.
func TestOffCPUCoverage(t *testing.T) {
	const reps = 6000
	r := rand.New(rand.NewPCG(27, 1))
	cases := []struct {
		dist string
		n    int
		p    float64
	}{
		{"exponential", 1000, 0.05},
		{"exponential", 300, 0.3},
		{"exponential", 600, 0.05}, // 30 sampled on average
		{"lognormal", 2000, 0.05},
		{"bimodal", 1000, 0.1},
		{"bimodal", 200, 0.8},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/n=%d/p=%g", c.dist, c.n, c.p), func(t *testing.T) {
			d := population(r, c.dist, c.n)
			var truth float64
			for _, x := range d {
				truth += x
			}
			covered := 0
			var sum, sum2 float64
			for k := 0; k < reps; k++ {
				var s HTSums
				for _, x := range d {
					if r.Float64() < c.p {
						s.Add(x, c.p)
					}
				}
				res, err := HTTotal(s, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Low <= truth && truth <= res.High {
					covered++
				}
				sum += res.Mean
				sum2 += res.Mean * res.Mean
			}
			mean := sum / reps
			sd := math.Sqrt((sum2/reps - mean*mean) / reps)
			cov := float64(covered) / reps
			t.Logf("truth %.4g mean %.4g (se %.3g) coverage %.4f", truth, mean, sd, cov)
			if math.Abs(mean-truth) > 4*sd {
				t.Errorf("biased: mean estimate %.6g, truth %.6g (%.1f standard errors)", mean, truth, (mean-truth)/sd)
			}
			if cov < 0.93 || cov > 0.975 {
				t.Errorf("coverage %.4f outside [0.93, 0.975]", cov)
			}
		})
	}
}

// population is n interval durations (ns) of the named shape.
func population(r *rand.Rand, dist string, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		switch dist {
		case "exponential":
			d[i] = 5e6 * r.ExpFloat64()
		case "lognormal":
			d[i] = 1e6 * math.Exp(r.NormFloat64())
		case "bimodal": // short runqueue waits and long sleeps
			d[i] = 20e3
			if r.Float64() < 0.3 {
				d[i] = 10e6
			}
		}
	}
	return d
}
