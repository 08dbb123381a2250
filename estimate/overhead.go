// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"fmt"
	"math"
)

// The probe's own cost inside a timed call (docs/overhead.md).
//
// A probe pair's clock readings bracket, besides the call, part of the
// probes' own path: the rest of the entry handler and the return to user
// space, the trap into the return probe. Its mean O over the calls timed is
// subtracted from the measured mean (Lilja 6.2.1: T_e = T_m - T_ovhd). O is
// not a constant: the same path costs 0.7 us when the calls come back to
// back and 3-9 us after a sleep of 1-10 ms, so it is measured in the run.
// On a share of the calls (echo windows) a second probe right after the
// entry probe reads the clock again; the gap G between the two readings is
// the call's own entry-side cost plus one warm trap, taken in the call's own
// conditions, and the kernel's run_delay splits it into the time on CPU,
// G_on, and the time the thread waited for a CPU, P. A model calibrated on
// this machine across call patterns gives each echoed call's overhead,
//
//	O_i = A + (B + C u) G_on,i + P_i,
//
// where u = BodyShare of the calls' own length (the exit side of the
// overhead grows with the body between entry and exit), and the target's
// mean overhead is its mean over the echoed calls. Its
// uncertainty has two parts: sampling (the echoed calls are a random
// share of the calls, in time), and the model's own error for a call
// pattern it was not fitted on (its residual spread across the calibrated
// patterns, S0 and S1 below), which no number of calls removes.

// EchoSums are the sums over one target's echoed calls: their count N, and
// the sums of G_on, G_on^2, P, P^2 and G_on P (ns, ns^2).
type EchoSums struct {
	N                  float64
	G, GSq, P, PSq, GP float64
}

// Sub returns the sums of s without those of t (t counted within s).
func (s EchoSums) Sub(t EchoSums) EchoSums {
	return EchoSums{s.N - t.N, s.G - t.G, s.GSq - t.GSq, s.P - t.P, s.PSq - t.PSq, s.GP - t.GP}
}

// Add returns the sums of s and t together.
func (s EchoSums) Add(t EchoSums) EchoSums {
	return EchoSums{s.N + t.N, s.G + t.G, s.GSq + t.GSq, s.P + t.P, s.PSq + t.PSq, s.GP + t.GP}
}

// OverheadModel is the calibrated model of a probe kind's overhead inside a
// call, O = A + (B + C u) G_on + P (A in ns; u = BodyShare of the calls'
// own length), with the spread of its error for a call pattern it was not
// fitted on: one standard deviation of sqrt(S0^2 + (S1 G)^2) ns at a mean
// gap G.
type OverheadModel struct {
	A, B, C float64
	S0, S1  float64
}

// BodyShare is u in the model: min(1, body/10 us) for calls whose own
// length is body (ns), 0 for a negative one.
func BodyShare(bodyNs float64) float64 { return math.Min(1, math.Max(0, bodyNs/10e3)) }

// Slope is the model's slope in G_on for calls of body share u.
func (m OverheadModel) Slope(u float64) float64 { return m.B + m.C*u }

// Valid reports whether m is a usable model: finite, B > 0, spreads >= 0.
func (m OverheadModel) Valid() bool {
	return finite(m.A, m.B, m.C, m.S0, m.S1) && m.B > 0 && m.B+m.C > 0 && m.S0 >= 0 && m.S1 >= 0
}

// Predict is the model's mean overhead (ns) for calls of mean echo gap on
// CPU g, mean wait for a CPU p and own length body (ns).
func (m OverheadModel) Predict(g, p, body float64) float64 {
	return m.A + m.Slope(BodyShare(body))*g + p
}

// Spread is the model's standard error (ns) for calls of mean gap g.
func (m OverheadModel) Spread(g float64) float64 { return math.Hypot(m.S0, m.S1*g) }

// MinEchoes is the fewest echoed calls an in-call overhead is estimated
// from: below it the call-to-call spread is not known well enough for a
// normal interval.
const MinEchoes = 30

// InCallOverhead estimates the mean overhead O of a target's calls from its
// echoes: all their sums s, and the same per polling batch (batches, for
// the batch-means standard error that holds when successive echoes are
// correlated; nil or fewer than 5 non-empty batches: the per-call standard
// error alone). The interval is normal at o's confidence with the larger
// of the two sampling errors and the model's spread at the mean gap added
// in quadrature.
func InCallOverhead(s EchoSums, batches []EchoSums, m OverheadModel, u float64, o Options) (Result, error) {
	conf, err := o.confidence()
	if err != nil {
		return Result{}, err
	}
	if !m.Valid() {
		return Result{}, inputf("overhead model A %v B %v S0 %v S1 %v: want finite values, B > 0 and spreads >= 0", m.A, m.B, m.S0, m.S1)
	}
	if s.N < MinEchoes {
		return Result{}, inputf("%v echoed calls: at least %d are needed", s.N, MinEchoes)
	}
	if !finite(s.G, s.GSq, s.P, s.PSq, s.GP) || s.G < 0 || s.P < 0 {
		return Result{}, inputf("echo sums are not finite or negative")
	}
	gbar, pbar := s.G/s.N, s.P/s.N
	b := m.Slope(u)
	mean := m.A + b*gbar + pbar
	// v_i = b g_i + p_i: its variance from the sums.
	vsq := b*b*s.GSq + s.PSq + 2*b*s.GP
	vsum := b*s.G + s.P
	varv := math.Max(0, (vsq-vsum*vsum/s.N)/(s.N-1))
	se := math.Sqrt(varv / s.N)
	if bse, k := echoBatchSE(batches, b); k >= 5 {
		se = math.Max(se, bse)
	}
	model := m.Spread(gbar)
	total := math.Hypot(se, model)
	z := Z(conf)
	out := Result{Mean: math.Max(0, mean), Low: math.Max(0, mean-z*total), High: math.Max(0, mean+z*total),
		StdErr: total, Confidence: conf, Method: "echo", Dist: "z", Calls: uint64(s.N), Events: uint64(s.N)}
	out.RelHalfWidth = relHalfWidth(out.Mean, out.Low, out.High)
	out.Candidates = []Candidate{{Method: out.Method, Dist: out.Dist, Low: out.Low, High: out.High, StdErr: out.StdErr}}
	return out, nil
}

// echoBatchSE is the batch-means standard error of the mean of B g + p over
// batches (a ratio estimator: batches hold different numbers of calls), and
// the number of non-empty batches.
func echoBatchSE(batches []EchoSums, b float64) (float64, int) {
	var n, v float64
	k := 0
	for _, x := range batches {
		if x.N > 0 {
			n += x.N
			v += b*x.G + x.P
			k++
		}
	}
	if k < 2 || n == 0 {
		return 0, k
	}
	r := v / n
	var ss float64
	for _, x := range batches {
		if x.N > 0 {
			d := b*x.G + x.P - r*x.N
			ss += d * d
		}
	}
	nbar := n / float64(k)
	return math.Sqrt(ss/float64(k-1)/float64(k)) / nbar, k
}

// OverheadRange is the in-call overhead where no echo measured it: the
// range [Low, High] of its mean over the call patterns a calibration saw,
// as an interval around Mean, the mean for calls back to back. It is
// subtracted as a bound: the corrected interval holds the truth for any of
// those patterns, and is as wide as they are far apart.
func OverheadRange(mean, low, high, conf float64) (Result, error) {
	if !finite(mean, low, high) || !(0 <= low && low <= mean && mean <= high) {
		return Result{}, inputf("overhead range %v [%v, %v]: want 0 <= low <= mean <= high", mean, low, high)
	}
	if !(conf > 0 && conf < 1) {
		return Result{}, inputf("confidence %v: want a level between 0 and 1", conf)
	}
	out := Result{Mean: mean, Low: low, High: high, Confidence: conf, Method: "pattern-range", Dist: "bound",
		StdErr: (high - low) / 2 / Z(conf)}
	out.RelHalfWidth = relHalfWidth(mean, low, high)
	out.Candidates = []Candidate{{Method: out.Method, Dist: out.Dist, Low: low, High: high, StdErr: out.StdErr}}
	return out, nil
}

// PhysicalBounds narrows a corrected mean's interval r to what the calls
// timed allow: a mean is not below 0, not below the shortest call minus
// the largest overhead any call could carry (minCall - maxOverhead), and
// not above the longest call (maxCall; 0: unknown). The mean is kept inside.
func PhysicalBounds(r Result, minCall, maxCall, maxOverhead float64) Result {
	lo := math.Max(0, minCall-maxOverhead)
	if !(minCall > 0) || !finite(maxOverhead) {
		lo = 0
	}
	r.Low = math.Max(r.Low, lo)
	if maxCall > 0 {
		r.High = math.Min(r.High, maxCall)
	}
	if r.High < r.Low {
		r.High = r.Low
	}
	r.Mean = math.Min(math.Max(r.Mean, r.Low), r.High)
	r.RelHalfWidth = relHalfWidth(r.Mean, r.Low, r.High)
	return r
}

// String returns the model as "O = A + (B + C u) G_on + P (spread S0 ⊕ S1 G)".
func (m OverheadModel) String() string {
	return fmt.Sprintf("O = %.0f ns + (%.3g + %.3g u) G_on + P (spread %.0f ns ⊕ %.3g G)", m.A, m.B, m.C, m.S0, m.S1)
}
