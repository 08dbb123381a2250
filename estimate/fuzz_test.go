// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"testing"
)

// FuzzTime feeds random counters to Time: it must never panic, and either
// return an error or a finite interval with Low <= Mean <= High, Low >= 0
// and a positive width.
func FuzzTime(f *testing.F) {
	f.Add(16.666e6, uint64(2000), uint64(400), uint64(400), true, uint64(1000), uint64(200), false, 0.95, uint8(0))
	f.Add(1e6, uint64(1), uint64(0), uint64(0), false, uint64(0), uint64(0), true, 0.0, uint8(1))
	f.Add(1.0, uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(math.MaxUint64), true, uint64(1), uint64(1), false, 0.5, uint8(2))
	f.Add(-1.0, uint64(10), uint64(5), uint64(3), true, uint64(5), uint64(2), false, 0.99, uint8(3))
	f.Add(1e-300, uint64(3), uint64(1<<40), uint64(1<<62), true, uint64(2), uint64(1<<39), true, 0.999999, uint8(0))
	f.Fuzz(func(t *testing.T, d float64, n, s, q uint64, hasQ bool, bn, bs uint64, contiguous bool, conf float64, ivSel uint8) {
		ivs := []Interval{IntervalAuto, Wald, Wilson, Exact}
		c := Counts{Resolution: d, Calls: n, Ticks: s, TicksSq: q, HasTicksSq: hasQ, Contiguous: contiguous}
		if bn > 0 {
			// Two batches splitting the totals when they can.
			if bn <= n && bs <= s {
				c.Batches = []Batch{{bn, bs}, {n - bn, s - bs}}
			} else {
				c.Batches = []Batch{{bn, bs}}
			}
		}
		r, err := Time(c, Options{Confidence: conf, Interval: ivs[int(ivSel)%len(ivs)]})
		if err != nil {
			return
		}
		if !finite(r.Mean, r.Low, r.High, r.StdErr) {
			t.Fatalf("non-finite result %+v for %+v", r, c)
		}
		if !(r.Low <= r.Mean && r.Mean <= r.High) || r.Low < 0 {
			t.Fatalf("interval [%v, %v] does not hold mean %v (or is negative) for %+v", r.Low, r.High, r.Mean, c)
		}
		// A zero width is only allowed where the interval is narrower
		// than float64 can tell apart at the mean. The narrowest honest
		// interval for n calls is the Wilson interval of 0 extra ticks in
		// n: [0, z^2/(n+z^2)] ticks per call, a half-width of
		// d z^2/(2(n+z^2)) ns. When that is below the spacing of float64
		// values at the mean (two ulps: one rounding on each side), Low
		// and High may round to the mean: 74 ns, 4 calls, 1.1e12 ticks at
		// 0.69% gives 0.0007 ns beside a mean of 2.0e13 ns, whose ulp is
		// 0.0039 ns.
		if r.High == r.Low {
			cf, _, _ := Options{Confidence: conf}.check()
			z := zQuantile(cf)
			minHalf := d * z * z / (2 * (float64(r.Calls) + z*z))
			ulp := math.Nextafter(r.Mean, math.Inf(1)) - r.Mean
			if minHalf > 2*ulp {
				t.Fatalf("zero-width interval for %+v: %+v; the narrowest honest half-width %g ns is above float64's spacing %g ns at the mean", c, r, minHalf, ulp)
			}
		}
	})
}

// FuzzShare checks Share on random counts: an error or an interval inside
// [0, 1] holding the share.
func FuzzShare(f *testing.F) {
	f.Add(uint64(12), uint64(800), 0.99, uint8(0))
	f.Add(uint64(0), uint64(1), 0.95, uint8(3))
	f.Add(uint64(1<<50), uint64(1<<51), 0.5, uint8(2))
	f.Fuzz(func(t *testing.T, h, n uint64, conf float64, ivSel uint8) {
		ivs := []Interval{IntervalAuto, Wald, Wilson, Exact}
		p, err := Share(h, n, Options{Confidence: conf, Interval: ivs[int(ivSel)%len(ivs)]})
		if err != nil {
			return
		}
		if !finite(p.Low, p.High) || !(0 <= p.Low && p.Low <= p.Share && p.Share <= p.High && p.High <= 1) {
			t.Fatalf("Share(%d, %d) = %+v", h, n, p)
		}
	})
}

// FuzzParseInterval checks that ParseInterval accepts only what it names.
func FuzzParseInterval(f *testing.F) {
	for _, s := range []string{"", "auto", "wald", "Wilson", "exact", "bogus"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		iv, err := ParseInterval(s)
		if err != nil {
			return
		}
		if _, err := (Options{Interval: iv}).interval(); err != nil {
			t.Fatalf("ParseInterval(%q) = %q, which Options rejects", s, iv)
		}
	})
}
