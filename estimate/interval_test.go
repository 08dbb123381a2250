// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// exactCoverage returns the exact coverage of the 95% interval iv on a
// binomial proportion p with n trials: sum over x of P(X = x) [p in CI(x)],
// over the x holding all but 1e-12 of the mass.
func exactCoverage(iv Interval, n uint64, p float64) float64 {
	bin := distuv.Binomial{N: float64(n), P: p}
	mean, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	lo := uint64(math.Max(0, math.Floor(mean-8*sd-10)))
	hi := uint64(math.Min(float64(n), math.Ceil(mean+8*sd+10)))
	var cov float64
	for x := lo; x <= hi; x++ {
		l, h, _ := propInterval(x, n, 0.95, iv)
		if l <= p && p <= h {
			cov += bin.Prob(float64(x))
		}
	}
	return cov
}

// TestIntervalChoice computes, without simulation, the coverage of each
// proportion interval for the crossing rate of calls shorter than a tick
// (Lilja 6.2.3: every call crosses 0 or 1 tick, a binomial count). It is the
// evidence behind IntervalAuto: Wilson alone under-covers when hits are few,
// Wald is worse, the exact interval never under-covers but is wider than
// needed, and the switch at AutoExactBelow stays in [93.5%, 97.5%] (the
// ceiling applying from 30 expected crossings).
func TestIntervalChoice(t *testing.T) {
	ps := []float64{0.0005, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.35, 0.5, 0.9, 0.99}
	ns := []uint64{100, 1000, 10000, 100000}
	if testing.Short() {
		ns = []uint64{100, 1000, 10000}
	}
	ivs := []Interval{Wald, Wilson, Exact, IntervalAuto}
	var tab strings.Builder
	fmt.Fprintf(&tab, "exact coverage of 95%% proportion intervals (binomial counts):\n%-8s %-7s %9s %8s %8s %8s %8s\n", "n", "p", "crossings", "wald", "wilson", "exact", "auto")
	worstLow := map[Interval]float64{}
	worstHigh := map[Interval]float64{}
	for _, iv := range ivs {
		worstLow[iv] = 1
	}
	for _, n := range ns {
		for _, p := range ps {
			cross := float64(n) * math.Min(p, 1-p)
			fmt.Fprintf(&tab, "%-8d %-7g %9.1f", n, p, cross)
			for _, iv := range ivs {
				c := exactCoverage(iv, n, p)
				fmt.Fprintf(&tab, " %7.2f%%", 100*c)
				worstLow[iv] = math.Min(worstLow[iv], c)
				if cross >= 30 {
					worstHigh[iv] = math.Max(worstHigh[iv], c)
				}
			}
			tab.WriteString("\n")
		}
	}
	for _, iv := range ivs {
		name := string(iv)
		if iv == IntervalAuto {
			name = "auto"
		}
		fmt.Fprintf(&tab, "%-7s lowest %.2f%%, highest with >= 30 crossings %.2f%%\n", name, 100*worstLow[iv], 100*worstHigh[iv])
	}
	t.Log(tab.String())
	if worstLow[IntervalAuto] < 0.935 || worstHigh[IntervalAuto] > 0.975 {
		t.Errorf("default interval coverage %.2f%%..%.2f%% outside [93.5%%, 97.5%%]", 100*worstLow[IntervalAuto], 100*worstHigh[IntervalAuto])
	}
	// The reasons for the choice must stay true.
	if worstLow[Wilson] >= 0.935 {
		t.Errorf("Wilson alone never fell below 93.5%% (lowest %.2f%%): revisit IntervalAuto", 100*worstLow[Wilson])
	}
	if worstLow[Exact] < 0.95 {
		t.Errorf("Clopper-Pearson covered only %.2f%% somewhere; it never falls below its level", 100*worstLow[Exact])
	}
	if worstLow[Wald] >= worstLow[Wilson] {
		t.Errorf("Wald's lowest coverage %.2f%% is not below Wilson's %.2f%%", 100*worstLow[Wald], 100*worstLow[Wilson])
	}
}

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]Interval{"": IntervalAuto, "auto": IntervalAuto, "Wald": Wald, "wilson": Wilson, " exact ": Exact, "clopper-pearson": Exact} {
		got, err := ParseInterval(in)
		if err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseInterval("bayes"); err == nil || !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseInterval(bayes) error = %v, want an ErrInvalid", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{{Confidence: 1}, {Confidence: -0.5}, {Confidence: math.NaN()}, {Confidence: 95}, {Interval: "nope"}} {
		if _, err := Share(1, 10, o); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("Share with %+v: error %v, want ErrInvalid", o, err)
		}
	}
}

func TestProportionIntervals(t *testing.T) {
	// Properties every construction must have.
	for _, iv := range []Interval{IntervalAuto, Wald, Wilson, Exact} {
		for _, c := range []struct{ x, n uint64 }{{0, 1}, {1, 1}, {0, 10}, {10, 10}, {3, 10}, {0, 1000000}, {500, 1000}, {1, 1 << 40}} {
			lo, hi, used := propInterval(c.x, c.n, 0.95, iv)
			p := float64(c.x) / float64(c.n)
			if !(0 <= lo && lo <= p && p <= hi && hi <= 1) || !(hi > lo) {
				t.Errorf("%q %d/%d (%s): interval [%v, %v] for p=%v", iv, c.x, c.n, used, lo, hi, p)
			}
		}
	}
	// Wald where it degenerates falls back to exact.
	if _, _, used := propInterval(0, 100, 0.95, Wald); used != Exact {
		t.Errorf("Wald at 0 hits used %q, want exact", used)
	}
	// Clopper-Pearson for 0 of n has the closed form 1-(a/2)^(1/n).
	_, hi, _ := propInterval(0, 50, 0.95, Exact)
	if want := 1 - math.Pow(0.025, 1.0/50); math.Abs(hi-want) > 1e-9 {
		t.Errorf("exact upper bound for 0/50 = %v, want %v", hi, want)
	}
	// Wilson for 658/6000 (Lilja 4.4.3's counts) by hand.
	lo, hi, _ := propInterval(658, 6000, 0.95, Wilson)
	z := zQuantile(0.95)
	p, n := 658.0/6000, 6000.0
	c := (p + z*z/(2*n)) / (1 + z*z/n)
	h := z / (1 + z*z/n) * math.Sqrt(p*(1-p)/n+z*z/(4*n*n))
	if math.Abs(lo-(c-h)) > 1e-12 || math.Abs(hi-(c+h)) > 1e-12 {
		t.Errorf("Wilson 658/6000 = [%v, %v], want [%v, %v]", lo, hi, c-h, c+h)
	}
}

func TestPoissonInterval(t *testing.T) {
	// Garwood exact interval for 0 events: upper = -ln(a/2).
	_, hi, used := poissonInterval(0, 0.95, IntervalAuto)
	if used != Exact || math.Abs(hi-(-math.Log(0.025))) > 1e-9 {
		t.Errorf("Poisson 0 events: upper %v (%s), want %v exact", hi, used, -math.Log(0.025))
	}
	for _, iv := range []Interval{IntervalAuto, Wald, Wilson, Exact} {
		for _, x := range []uint64{0, 1, 5, 29, 30, 1000} {
			lo, hi, _ := poissonInterval(x, 0.9, iv)
			if !(lo >= 0 && lo <= float64(x) && float64(x) <= hi && hi > lo) {
				t.Errorf("Poisson %q %d: [%v, %v]", iv, x, lo, hi)
			}
		}
	}
}

func TestTQuantileTable(t *testing.T) {
	for _, df := range []float64{1, 2, 7, 29, 49, 100, 512, 513, 1000} {
		if got, want := tQuantile(0.95, df), studentsT(0.95, df); got != want {
			t.Errorf("t(0.95, %v) = %v, want %v", df, got, want)
		}
	}
	// Lilja 4.4.1.2: t_{0.95;7} = 1.895 and t_{0.975;7} = 2.365.
	if got := tQuantile(0.90, 7); math.Abs(got-1.895) > 5e-4 {
		t.Errorf("t_{0.95;7} = %v", got)
	}
	if got := tQuantile(0.95, 7); math.Abs(got-2.365) > 5e-4 {
		t.Errorf("t_{0.975;7} = %v", got)
	}
}
