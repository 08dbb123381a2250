// SPDX-License-Identifier: Apache-2.0

package export

import (
	"math"
	"math/bits"

	"github.com/google/pprof/profile"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tickprof/tickprof/estimate"
)

// Windows as batches.
//
// Calls within a window are not independent (a slow phase of the target
// slows them all), which the two-point and observed intervals of a merged
// time profile assume. The windows themselves are the natural batches
// (estimate/window.go treats the windows of a budgeted run the same way): a
// ratio estimator over m windows with calls n_j and ticks S_j has mean
// R = sum S_j / sum n_j and variance
//
//	m/(m-1) sum_j (S_j - R n_j)^2 / (sum n_j)^2
//	  = m/(m-1) (sum S_j^2 - 2 R sum S_j n_j + R^2 sum n_j^2) / (sum n_j)^2
//
// (Cochran, Sampling Techniques, 6.8; Student t with m-1 degrees of
// freedom), so four more sums make it merge by addition: m (batches),
// sum S_j^2, sum S_j n_j and sum n_j^2. A window contributes only when it
// has calls (as Time leaves out empty batches).
//
// Squares of a window's ticks overflow an int64 within hours of summing
// (S_j reaches 1e10 ns in a busy 10 s window), so each window stores S_j and
// n_j in units of a power of two that keeps both under 2^20 (their squares
// and product under 2^40, room for 2^23 windows); the units are numeric
// labels of the sample, so windows of different units stay apart in a
// merge and report scales each before adding. Rounding to the unit changes
// S_j by less than 2^-20 of itself: far below the residuals S_j - R n_j,
// which are of order S_j/sqrt(n_j).
//
// The skewness shift Time applies to batch means needs third powers, which
// would need more columns and overflow sooner: the merged window
// batch-means interval is the symmetric one.

// Sample types and labels of the window batches.
const (
	BatchesType      = "batches"
	BatchTicksSqType = "batch_ticks_sq"
	BatchCrossType   = "batch_ticks_calls"
	BatchCallsSqType = "batch_calls_sq"
	batchTicksUnit   = "batch_ticks_unit"
	batchCallsUnit   = "batch_calls_unit"
	batchBits        = 20
)

var batchTypes = []string{BatchesType, BatchTicksSqType, BatchCrossType, BatchCallsSqType}

// scaleDown returns x in units of a power of two that keeps it under
// 2^batchBits (rounded to nearest), and the unit.
func scaleDown(x uint64) (v, unit int64) {
	k := bits.Len64(x) - batchBits
	if k <= 0 {
		return int64(x), 1
	}
	return int64((x + 1<<(k-1)) >> k), 1 << k
}

// batchValues are a window's batch columns for n calls and s ticks (zeros
// without calls), and its unit labels.
func batchValues(n, s uint64) ([]int64, map[string][]int64) {
	if n == 0 {
		return []int64{0, 0, 0, 0}, nil
	}
	sv, su := scaleDown(s)
	nv, nu := scaleDown(n)
	return []int64{1, sv * sv, sv * nv, nv * nv}, map[string][]int64{batchTicksUnit: {su}, batchCallsUnit: {nu}}
}

// windowBatches are one target's merged batch sums, in ticks and calls.
type windowBatches struct {
	m, ss, sn, nn float64
}

// add adds a sample's batch columns (at indexes idx) scaled by its units.
func (w *windowBatches) add(s *profile.Sample, idx [4]int) {
	for _, i := range idx {
		if i < 0 || i >= len(s.Value) {
			return
		}
	}
	su, nu := 1.0, 1.0
	if v := s.NumLabel[batchTicksUnit]; len(v) == 1 && v[0] > 0 {
		su = float64(v[0])
	}
	if v := s.NumLabel[batchCallsUnit]; len(v) == 1 && v[0] > 0 {
		nu = float64(v[0])
	}
	w.m += float64(nonNeg(s.Value[idx[0]]))
	w.ss += su * su * float64(nonNeg(s.Value[idx[1]]))
	w.sn += su * nu * float64(nonNeg(s.Value[idx[2]]))
	w.nn += nu * nu * float64(nonNeg(s.Value[idx[3]]))
}

// candidate is the window batch-means interval on the mean per call (ns)
// for n calls and s ticks of resolution d; ok is false below two windows.
func (w *windowBatches) candidate(n, s uint64, d, conf float64) (estimate.Candidate, bool) {
	if w == nil || w.m < 2 || n == 0 {
		return estimate.Candidate{}, false
	}
	nf := float64(n)
	r := float64(s) / nf
	ss := math.Max(0, w.ss-2*r*w.sn+r*r*w.nn)
	se := d * math.Sqrt(w.m/(w.m-1)*ss) / nf
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.m - 1}.Quantile(1 - (1-conf)/2)
	mean := d * r
	return estimate.Candidate{Method: "window-batch-means", Dist: "t", Low: math.Max(0, mean-q*se), High: mean + q*se, StdErr: se}, true
}
