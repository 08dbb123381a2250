// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"testing"
)

// refBinom is newBinom as it was before its two tails were computed in
// one loop and the normalization moved to F: one tail after the other,
// then the sums, then every entry divided by the total. The reference of
// TestBinomSameAsReference.
func refBinom(n uint64, p float64) binom {
	nf := float64(n)
	sd := math.Sqrt(nf * p * (1 - p))
	w := 12*sd + 40
	m := nf * p
	lo, hi := uint64(0), n
	if m-w > 0 {
		lo = uint64(m - w)
	}
	if m+w < nf {
		hi = uint64(m + w)
	}
	mode := min(max(uint64(math.Floor((nf+1)*p)), lo), hi)
	mf := float64(mode)
	lg, _ := math.Lgamma(nf + 1)
	la, _ := math.Lgamma(mf + 1)
	lb, _ := math.Lgamma(nf - mf + 1)
	pmf := make([]float64, hi-lo+1)
	pmf[mode-lo] = math.Exp(lg - la - lb + mf*math.Log(p) + (nf-mf)*math.Log1p(-p))
	odds := p / (1 - p)
	for k := mode; k < hi; k++ {
		kf := float64(k)
		pmf[k+1-lo] = pmf[k-lo] * (nf - kf) / (kf + 1) * odds
	}
	for k := mode; k > lo; k-- {
		kf := float64(k)
		pmf[k-1-lo] = pmf[k-lo] * kf / (nf - kf + 1) / odds
	}
	cdf := pmf
	s := 0.0
	for i, v := range pmf {
		s += v
		cdf[i] = s
	}
	for i := range cdf {
		cdf[i] = math.Min(1, cdf[i]/s)
	}
	// Normalized already: F's division by a sum of 1 leaves it as is.
	return binom{n: n, p: p, lo: lo, hi: hi, cum: cdf, sum: 1}
}

// TestBinomSameAsReference checks that newBinom gives the distribution
// function of refBinom to the bit at every k of its window and beyond,
// and the same ranks, coverage and tails, from 1 to 10^8 observations
// (the largest n with exact ranks at p = 0.5), at the levels and
// confidences tickprof reports.
func TestBinomSameAsReference(t *testing.T) {
	ns := []uint64{1, 2, 3, 7, 20, 59, 100, 299, 1000, 2995, 4321, 10_000, 433_310, 1_000_000, 10_000_000, 100_000_000}
	ps := []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999}
	confs := []float64{0.9, 0.95, 0.99}
	for _, n := range ns {
		for _, p := range ps {
			nf := float64(n)
			if math.Sqrt(nf*p*(1-p)) > exactRankSigma {
				continue // normal ranks: no table
			}
			if n >= 10_000_000 && p != 0.5 && p != 0.99 && p != 0.001 {
				continue // the largest tables at a few levels only
			}
			got, want := newBinom(n, p), refBinom(n, p)
			if got.lo != want.lo || got.hi != want.hi {
				t.Fatalf("n %d p %v: window [%d, %d], want [%d, %d]", n, p, got.lo, got.hi, want.lo, want.hi)
			}
			for k := int64(got.lo) - 2; k <= int64(got.hi)+2; k++ {
				if g, w := got.F(k), want.F(k); math.Float64bits(g) != math.Float64bits(w) {
					t.Fatalf("n %d p %v: F(%d) = %v, want %v", n, p, k, g, w)
				}
			}
			for _, c := range confs {
				a := 1 - c
				r, s, cov, ok := got.bestRanks(a)
				wr, ws, wcov, wok := want.bestRanks(a)
				if r != wr || s != ws || math.Float64bits(cov) != math.Float64bits(wcov) || ok != wok {
					t.Errorf("n %d p %v conf %v: ranks [%d, %d] coverage %v (%v), want [%d, %d] %v (%v)", n, p, c, r, s, cov, ok, wr, ws, wcov, wok)
				}
				if g, w := got.maxRank(a), want.maxRank(a); g != w {
					t.Errorf("n %d p %v conf %v: lower-only rank %d, want %d", n, p, c, g, w)
				}
			}
		}
	}
}
