// SPDX-License-Identifier: Apache-2.0

package estimate

import "math"

// QuantileBound bounds a quantile function's interval at any level without
// its rank tables (CorrectQuantileBounded): at level p, the interval's
// lower end is at most LowMax(p) and its upper end at least HighMin(p).
type QuantileBound struct {
	// LowMax and HighMin are the bounds at level p.
	LowMax, HighMin func(p float64) float64
}

// HistogramBound is the QuantileBound of QuantileOfHistogram(h, lowest,
// highest, p, o) over p, or nil (no bound) when the confidence is not
// above 0.51 or h is empty.
//
// At a confidence above one half, the lower rank r of the interval
// (QuantileRanks, its lower-only rank too) has P(B <= r-1) <= 1 - conf <
// 1/2 for B ~ Bin(n, p), so r-1 is below B's median, which is at most
// ceil(np): r <= ceil(np). Likewise the upper rank s has P(B >= s) < 1/2,
// so s-1 is at least the median, which is at least floor(np): s >=
// floor(np)+1. The normal approximation's ranks (np -+ z sd, z > 0) obey
// the same. The ends of the order statistics' bounds grow with the rank,
// so the interval's lower end is at most the lower bound of rank
// ceil(np)+1 and its upper end at least the upper bound of rank floor(np)
// (a rank to spare on each side for the rounding of np).
func HistogramBound(h Bucketed, lowest, highest float64, o Options) *QuantileBound {
	if !boundable(lowest, highest, o) {
		return nil
	}
	n, at := histRanks(h, lowest, highest)
	if n == 0 {
		return nil
	}
	return rankBound(n, at)
}

// boundable says whether HistogramBound bounds at these options.
func boundable(lowest, highest float64, o Options) bool {
	conf, err := o.confidence()
	return err == nil && conf > 0.51 && lowest <= highest
}

// rankBound is the QuantileBound of n order statistics bounded by at.
func rankBound(n uint64, at func(r uint64) (float64, float64)) *QuantileBound {
	nf := float64(n)
	return &QuantileBound{
		LowMax: func(p float64) float64 {
			lo, _ := at(max(min(n, uint64(math.Ceil(nf*p))+1), 1))
			return lo
		},
		HighMin: func(p float64) float64 {
			_, hi := at(min(max(uint64(math.Floor(nf*p)), 1), n))
			return hi
		},
	}
}

// HistogramQuantileValue is QuantileOfHistogram(h, lowest, highest, p,
// o).Value without the interval's rank tables where HistogramBound shows
// that the interval holds the point estimate, which is then not moved
// into it; elsewhere the quantile is estimated whole.
func HistogramQuantileValue(h Bucketed, lowest, highest, p float64, o Options) (float64, error) {
	if boundable(lowest, highest, o) && checkP(p) == nil {
		if n, at := histRanks(h, lowest, highest); n > 0 {
			b := rankBound(n, at)
			vlo, vhi := at(pointRank(n, p))
			if v := (vlo + vhi) / 2; b.LowMax(p) <= v && v <= b.HighMin(p) {
				return v, nil
			}
		}
	}
	q, err := QuantileOfHistogram(h, lowest, highest, p, o)
	return q.Value, err
}
