// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval names how an interval on a proportion (a share of samples, or the
// rate at which calls cross a clock tick) is built.
type Interval string

// The interval constructions.
const (
	// IntervalAuto is the default. It uses the Clopper-Pearson (exact)
	// interval while fewer than AutoExactBelow events fall on the rarer
	// side (hits or misses), and the Wilson score interval from there on.
	// TestIntervalChoice computes the exact binomial coverage of each
	// construction for n from 100 to 100000 and p from 0.0005 to 0.99:
	// Wald falls to 85% and Wilson to 91% with a handful of hits; exact
	// never falls below 95% but runs up to 96.5% with 30 or more hits and
	// near 99% below (wider intervals, longer runs for a given
	// precision); the switch keeps exact's guarantee where hits are rare
	// and stays between 94.3% and 95.4% where they are not.
	IntervalAuto Interval = ""
	// Wald is the normal-approximation interval p ± z sqrt(p(1-p)/n) the
	// seeds print (Chan eq. 1, Lilja eq. 4.23/4.24); use it to reproduce
	// their numbers. Where it degenerates to zero width (no hit, or all
	// hits) the exact interval is used instead.
	Wald Interval = "wald"
	// Wilson is the Wilson score interval.
	Wilson Interval = "wilson"
	// Exact is the Clopper-Pearson interval from Beta quantiles.
	Exact Interval = "exact"
)

// AutoExactBelow is the smaller of hits and misses below which IntervalAuto
// uses the exact interval rather than Wilson's.
const AutoExactBelow = 30

// ParseInterval parses an interval name: "wald", "wilson", "exact", or ""
// and "auto" for the default.
func ParseInterval(s string) (Interval, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto", "default":
		return IntervalAuto, nil
	case "wald", "normal":
		return Wald, nil
	case "wilson", "score":
		return Wilson, nil
	case "exact", "clopper-pearson":
		return Exact, nil
	}
	return "", inputf("unknown interval %q: want wald, wilson or exact", s)
}

// Options are the settings every estimate takes.
type Options struct {
	// Confidence is the confidence level in (0, 1); 0 means 0.95.
	Confidence float64
	// Interval picks how proportion intervals are built; "" is IntervalAuto.
	Interval Interval
}

// DefaultConfidence is the level used when Options.Confidence is 0.
const DefaultConfidence = 0.95

// The confidence levels accepted. Above MaxConfidence, 1 - (1-c)/2 rounds
// to 1 in float64 close enough that the normal quantile is +Inf (a level
// that prints as 100% gave ±Inf); below MinConfidence the quantile is so
// close to 0 that every interval is a point.
const (
	MinConfidence = 1e-6
	MaxConfidence = 1 - 1e-12
)

// confidence validates and returns the confidence level.
func (o Options) confidence() (float64, error) {
	c := o.Confidence
	if c == 0 {
		return DefaultConfidence, nil
	}
	if !(c >= MinConfidence && c <= MaxConfidence) {
		return 0, inputf("confidence %v out of range: want a level from %g to %.12g, such as 0.95", c, MinConfidence, MaxConfidence)
	}
	return c, nil
}

// interval validates the interval choice.
func (o Options) interval() (Interval, error) {
	switch o.Interval {
	case IntervalAuto, Wald, Wilson, Exact:
		return o.Interval, nil
	}
	return "", inputf("unknown interval %q: want wald, wilson or exact", string(o.Interval))
}

// check validates both settings.
func (o Options) check() (float64, Interval, error) {
	c, err := o.confidence()
	if err != nil {
		return 0, "", err
	}
	iv, err := o.interval()
	if err != nil {
		return 0, "", err
	}
	return c, iv, nil
}

var stdNormal = distuv.Normal{Mu: 0, Sigma: 1}

// zQuantile is the two-sided standard normal quantile z_{1-a/2} for
// confidence 1-a (Lilja eq. 4.6).
// It is NaN for a level outside (0, 1) (gonum panics there).
func zQuantile(conf float64) float64 {
	if !(conf > 0 && conf < 1) {
		return math.NaN()
	}
	return stdNormal.Quantile(1 - (1-conf)/2)
}

// tQuantile is the two-sided Student t quantile t_{1-a/2; df} (Lilja 4.4.1.2).
func tQuantile(conf, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return zQuantile(conf)
	}
	if conf == DefaultConfidence && df >= 1 && df <= tTableSize && df == math.Trunc(df) {
		return t95At(int(df))
	}
	return studentsT(conf, df)
}

func studentsT(conf, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-conf)/2)
}

// tTableSize is the largest degrees of freedom kept in t95.
const tTableSize = 512

// t95 holds t_{0.975; df} for df = 1..tTableSize (as float64 bits; 0: not
// computed yet), each computed on its first use and never changed: the
// batch-means interval asks for it on every estimate, and each evaluation
// inverts an incomplete beta function (about 20 us; the whole table at
// once was 10 ms of a short run, which uses a few entries).
var t95 [tTableSize]atomic.Uint64

// t95At is t_{0.975; df} for df in 1..tTableSize, from t95. Two goroutines
// may both compute an entry: they store the same value.
func t95At(df int) float64 {
	e := &t95[df-1]
	if b := e.Load(); b != 0 {
		return math.Float64frombits(b)
	}
	t := studentsT(DefaultConfidence, float64(df))
	e.Store(math.Float64bits(t))
	return t
}

// resolve turns IntervalAuto into a concrete construction for x hits out of n.
func resolve(iv Interval, x, n uint64) Interval {
	switch iv {
	case IntervalAuto:
		if min(x, n-x) < AutoExactBelow {
			return Exact
		}
		return Wilson
	case Wald:
		if x == 0 || x == n {
			return Exact
		}
	}
	return iv
}

// propInterval returns the interval (lo, hi) on a binomial proportion with x
// hits out of n trials, and the construction actually used.
func propInterval(x, n uint64, conf float64, iv Interval) (lo, hi float64, used Interval) {
	used = resolve(iv, x, n)
	nf, xf := float64(n), float64(x)
	p := xf / nf
	z := zQuantile(conf)
	switch used {
	case Wald:
		h := z * math.Sqrt(p*(1-p)/nf)
		lo, hi = p-h, p+h
	case Wilson:
		z2 := z * z
		den := 1 + z2/nf
		c := (p + z2/(2*nf)) / den
		h := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
		lo, hi = c-h, c+h
	case Exact:
		a := 1 - conf
		lo, hi = 0, 1
		miss := float64(n - x) // exact even where nf - xf rounds to 0
		var okLo, okHi = true, true
		if x > 0 {
			lo, okLo = quantile(distuv.Beta{Alpha: xf, Beta: miss + 1}, a/2)
		}
		if x < n {
			hi, okHi = quantile(distuv.Beta{Alpha: xf + 1, Beta: miss}, 1-a/2)
		}
		if !okLo || !okHi {
			// Beta quantiles fail for extreme parameters (counts
			// near 2^64), where Wilson's interval is as good.
			return propInterval(x, n, conf, Wilson)
		}
	}
	lo = math.Max(0, math.Min(lo, p))
	hi = math.Min(1, math.Max(hi, p))
	return lo, hi, used
}

// poissonInterval returns an interval on the mean of a Poisson count x, with
// the construction that matches iv: Wald x ± z sqrt(x), the score interval,
// or the exact (Garwood) interval from Gamma quantiles.
func poissonInterval(x uint64, conf float64, iv Interval) (lo, hi float64, used Interval) {
	xf := float64(x)
	used = iv
	switch iv {
	case IntervalAuto:
		used = Wilson
		if x < AutoExactBelow {
			used = Exact
		}
	case Wald:
		if x == 0 {
			used = Exact
		}
	}
	z := zQuantile(conf)
	switch used {
	case Wald:
		h := z * math.Sqrt(xf)
		lo, hi = xf-h, xf+h
	case Wilson:
		c := xf + z*z/2
		h := z * math.Sqrt(xf+z*z/4)
		lo, hi = c-h, c+h
	case Exact:
		a := 1 - conf
		lo = 0
		okLo := true
		if x > 0 {
			lo, okLo = quantile(distuv.Gamma{Alpha: xf, Beta: 1}, a/2)
		}
		var okHi bool
		hi, okHi = quantile(distuv.Gamma{Alpha: xf + 1, Beta: 1}, 1-a/2)
		if !okLo || !okHi {
			return poissonInterval(x, conf, Wilson)
		}
	}
	lo = math.Max(0, math.Min(lo, xf))
	hi = math.Max(hi, xf)
	return lo, hi, used
}

// quantile evaluates q.Quantile(p), reporting false where gonum's special
// functions fail (a NaN, or a panic for parameters out of their domain).
func quantile(q interface{ Quantile(float64) float64 }, p float64) (v float64, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = math.NaN(), false
		}
	}()
	v = q.Quantile(p)
	return v, finite(v)
}

// ErrInvalid is wrapped by every error about invalid input (negative or zero
// resolution, more hits than samples, ...), so callers can tell bad input
// from other failures with errors.Is.
var ErrInvalid = errors.New("invalid input")

// invalid is an input error: its message is the text alone, and it wraps
// ErrInvalid.
type invalid struct{ msg string }

func (e invalid) Error() string { return e.msg }
func (e invalid) Unwrap() error { return ErrInvalid }

// inputf returns an error wrapping ErrInvalid with a formatted message.
func inputf(format string, a ...any) error {
	return invalid{fmt.Sprintf(format, a...)}
}

// finite reports whether every value is a finite number.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Z returns the two-sided standard normal quantile for a confidence level:
// the z with P(|N(0,1)| <= z) = conf, e.g. 1.96 for 0.95. It turns a
// reported symmetric interval back into a standard error. It is NaN for a
// level outside (0, 1).
func Z(conf float64) float64 { return zQuantile(conf) }
