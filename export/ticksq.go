// SPDX-License-Identifier: Apache-2.0

package export

import (
	"fmt"
	"math/big"

	"github.com/google/pprof/profile"
)

// A window's sum of squared ticks passes the 63 bits of a sample value with
// one call of 3.04e9 ticks (3 s with the ns clock). Such a sum is written in
// units of a power of two, 2^k with k the sample's numeric label
// ticksSqShift (no label: k = 0), rounded to nearest; samples of different
// units stay apart in a merge, and the reader scales each before adding
// (ticksSqSum). The rounding changes the sum by less than 2^-61 of itself,
// far below what the variance of calls of seconds can tell apart.

// ticksSqShift labels a ticks_sq value in units of 2^k.
const ticksSqShift = "ticks_sq_shift"

// ticksSqValue returns sum c^2 = hi 2^64 + lo as a sample value in units
// of 2^k, with k (0 when it fits 62 bits).
func ticksSqValue(hi, lo uint64) (v, k int64) {
	q := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
	q.Or(q, new(big.Int).SetUint64(lo))
	shift := q.BitLen() - 62
	if shift <= 0 {
		return q.Int64(), 0
	}
	q.Add(q, new(big.Int).Lsh(big.NewInt(1), uint(shift-1)))
	return q.Rsh(q, uint(shift)).Int64(), int64(shift)
}

// addTicksSq adds sample s's ticks_sq value (index qi), scaled by its unit,
// to sum.
func addTicksSq(sum *big.Int, s *profile.Sample, qi int) {
	v := new(big.Int).SetUint64(nonNeg(s.Value[qi]))
	if k := s.NumLabel[ticksSqShift]; len(k) == 1 && k[0] > 0 && k[0] < 128 {
		v.Lsh(v, uint(k[0]))
	}
	sum.Add(sum, v)
}

// checkTicksSq refuses a sum of squared ticks q that n calls crossing s
// ticks in all cannot have: every real sum lies in [s^2/n, s^2] (within
// the rounding of wide sums, far below 2^-40 of them). One outside was
// clamped in, and its interval came out up to 10^4 times too narrow.
func checkTicksSq(q *big.Int, n, s uint64) error {
	if q == nil || n == 0 {
		return nil
	}
	s2 := new(big.Int).Mul(new(big.Int).SetUint64(s), new(big.Int).SetUint64(s))
	least := new(big.Int).Quo(s2, new(big.Int).SetUint64(n))
	slack := func(x *big.Int) *big.Int { return new(big.Int).Add(new(big.Int).Rsh(x, 40), big.NewInt(1)) }
	if q.Cmp(new(big.Int).Sub(least, slack(least))) < 0 || q.Cmp(new(big.Int).Add(s2, slack(s2))) > 0 {
		return fmt.Errorf("ticks_sq %v is not possible for %d calls of %d ticks in all (the sum of squares lies between ticks^2/calls = %v and ticks^2 = %v): the profile was changed or damaged", q, n, s, least, s2)
	}
	return nil
}

// ticksSqCounts returns a merged sum of squared ticks q as the 128-bit
// halves estimate.Counts takes, for n calls crossing s ticks in all: q is
// clamped to [ceil(s^2/n), s^2], where every real sum lies, so that the
// rounding of wide sums cannot make the counts inconsistent.
func ticksSqCounts(q *big.Int, n, s uint64) (lo, hi uint64) {
	if q == nil {
		q = new(big.Int)
	}
	s2 := new(big.Int).Mul(new(big.Int).SetUint64(s), new(big.Int).SetUint64(s))
	if n > 0 {
		nb := new(big.Int).SetUint64(n)
		least := new(big.Int).Add(s2, new(big.Int).Sub(nb, big.NewInt(1)))
		least.Quo(least, nb)
		if q.Cmp(least) < 0 {
			q = least
		}
	}
	if q.Cmp(s2) > 0 {
		q = s2
	}
	mask := new(big.Int).SetUint64(^uint64(0))
	lo = new(big.Int).And(q, mask).Uint64()
	hi = new(big.Int).Rsh(q, 64).Uint64()
	return lo, hi
}
