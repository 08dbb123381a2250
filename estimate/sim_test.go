// SPDX-License-Identifier: Apache-2.0

package estimate

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// This file simulates a program timed by an asynchronous clock of resolution
// 1 (durations are in ticks). A call of duration T starting at a uniformly
// random phase U crosses c = floor(U + T) ticks (Beilner fig. 2); back-to-back
// calls share phases, so a batch of them crosses
// floor(U + S_end) - floor(U + S_start) ticks.

// durDist is a distribution of call durations (in ticks) with mean x.
type durDist int

const (
	distConstant    durDist = iota
	distUniform             // U(0, 2x)
	distExponential         // Exp(mean x)
	distBimodal             // x/2 with probability 3/4, 5x/2 with probability 1/4
)

var distNames = [...]string{"constant", "uniform", "exponential", "bimodal"}

func (d durDist) String() string { return distNames[d] }

// draw returns one duration with mean x.
func (d durDist) draw(r *rand.Rand, x float64) float64 {
	switch d {
	case distUniform:
		return 2 * x * r.Float64()
	case distExponential:
		return x * r.ExpFloat64()
	case distBimodal:
		if r.Float64() < 0.25 {
			return 2.5 * x
		}
		return 0.5 * x
	}
	return x
}

// variance returns the variance of one duration with mean x.
func (d durDist) variance(x float64) float64 {
	switch d {
	case distUniform:
		return x * x / 3
	case distExponential:
		return x * x
	case distBimodal:
		return 0.75 * 0.25 * (2 * x) * (2 * x)
	}
	return 0
}

// triCDF integrates the triangular kernel max(0, 1-|u|) from -inf to u.
func triCDF(u float64) float64 {
	switch {
	case u <= -1:
		return 0
	case u <= 0:
		return (u + 1) * (u + 1) / 2
	case u <= 1:
		return 1 - (1-u)*(1-u)/2
	}
	return 1
}

// tickPMF returns P(c = k) for k = 0.. for separated calls of duration law d
// with mean x: P(c = k) = E[max(0, 1 - |T - k|)]. Tail mass below 1e-14 is
// cut off and the rest renormalized.
func tickPMF(d durDist, x float64) []float64 {
	tri := func(t, k float64) float64 { return math.Max(0, 1-math.Abs(t-k)) }
	var p []float64
	switch d {
	case distConstant:
		kmax := int(math.Floor(x)) + 1
		for k := 0; k <= kmax; k++ {
			p = append(p, tri(x, float64(k)))
		}
	case distBimodal:
		kmax := int(math.Floor(2.5*x)) + 1
		for k := 0; k <= kmax; k++ {
			p = append(p, 0.75*tri(0.5*x, float64(k))+0.25*tri(2.5*x, float64(k)))
		}
	case distUniform:
		b := 2 * x
		kmax := int(math.Floor(b)) + 1
		for k := 0; k <= kmax; k++ {
			kf := float64(k)
			p = append(p, (triCDF(b-kf)-triCDF(-kf))/b)
		}
	case distExponential:
		// Closed form of E[tri(T-k)] for T ~ Exp(mean x): the integral
		// of (a + b t) e^{-t/x}/x over [lo, hi].
		lin := func(a, b, lo, hi float64) float64 {
			prim := func(t float64) float64 {
				e := math.Exp(-t / x)
				return -a*e - b*(t+x)*e
			}
			return prim(hi) - prim(lo)
		}
		for k := 0; ; k++ {
			kf := float64(k)
			v := lin(kf+1, -1, kf, kf+1)
			if k > 0 {
				v += lin(1-kf, 1, kf-1, kf)
			}
			p = append(p, v)
			if kf > x && math.Exp(-(kf-1)/x) < 1e-14 {
				break
			}
		}
	}
	var sum float64
	for _, v := range p {
		sum += v
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// sim draws the counters of one experiment.
type sim struct {
	dist       durDist
	x          float64 // ET/d
	contiguous bool
	pmf        []float64
	// moments of c and c^2 for the normal approximation of large batches
	mc, mq, vc, vq, cov float64
	rng                 *rand.Rand
	src                 rand.Source
	// Vose alias table over pmf, to draw one call's ticks in O(1)
	aliasP []float64
	aliasI []int
}

// buildAlias fills the alias table for s.pmf (Vose's method).
func (s *sim) buildAlias() {
	k := len(s.pmf)
	s.aliasP, s.aliasI = make([]float64, k), make([]int, k)
	scaled := make([]float64, k)
	var small, large []int
	for i, p := range s.pmf {
		scaled[i] = p * float64(k)
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		l, g := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		s.aliasP[l], s.aliasI[l] = scaled[l], g
		scaled[g] += scaled[l] - 1
		if scaled[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	for _, i := range append(small, large...) {
		s.aliasP[i], s.aliasI[i] = 1, i
	}
}

// draw1 draws one separated call's tick count from the pmf.
func (s *sim) draw1() uint64 {
	i := s.rng.IntN(len(s.aliasP))
	if s.rng.Float64() < s.aliasP[i] {
		return uint64(i)
	}
	return uint64(s.aliasI[i])
}

func newSim(d durDist, x float64, contiguous bool, seed uint64) *sim {
	src := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	s := &sim{dist: d, x: x, contiguous: contiguous, rng: rand.New(src), src: src}
	if !contiguous {
		s.pmf = tickPMF(d, x)
		var m1, m2, m3, m4 float64
		for k, p := range s.pmf {
			kf := float64(k)
			m1 += p * kf
			m2 += p * kf * kf
			m3 += p * kf * kf * kf
			m4 += p * kf * kf * kf * kf
		}
		s.mc, s.mq = m1, m2
		s.vc, s.vq, s.cov = m2-m1*m1, m4-m2*m2, m3-m1*m2
		s.buildAlias()
	}
	return s
}

// batch draws n separated calls and returns their tick sum and sum of
// squares, exactly (per call from the tick-count law, or multinomial over
// the tick counts, whichever is cheaper) or, for large batches over a wide
// support, from the bivariate normal limit.
func (s *sim) batch(n uint64) (ticks, sq uint64) {
	k := len(s.pmf)
	multi := k <= 64 && uint64(20*k) < n
	switch {
	case !multi && (k <= 64 || n < 2000):
		for i := uint64(0); i < n; i++ {
			c := s.draw1()
			ticks += c
			sq += c * c
		}
	case multi:
		left, mass := float64(n), 1.0
		for j, p := range s.pmf {
			if left == 0 {
				break
			}
			var m float64
			if j == k-1 || p >= mass {
				m = left
			} else if p > 0 {
				m = distuv.Binomial{N: left, P: math.Min(1, p/mass), Src: s.src}.Rand()
			}
			left -= m
			mass -= p
			ticks += uint64(m) * uint64(j)
			sq += uint64(m) * uint64(j*j)
		}
	default:
		nf := float64(n)
		z1, z2 := s.rng.NormFloat64(), s.rng.NormFloat64()
		sc := math.Sqrt(nf * s.vc)
		rho := s.cov / math.Sqrt(s.vc*s.vq)
		c := nf*s.mc + sc*z1
		q := nf*s.mq + math.Sqrt(nf*s.vq)*(rho*z1+math.Sqrt(1-rho*rho)*z2)
		c = math.Max(0, math.Round(c))
		q = math.Max(c, math.Max(math.Round(q), math.Ceil(c*c/nf)))
		ticks, sq = uint64(c), uint64(q)
	}
	return ticks, sq
}

// runSum draws the total duration of n back-to-back calls.
func (s *sim) runSum(n uint64) float64 {
	nf, x := float64(n), s.x
	switch s.dist {
	case distConstant:
		return nf * x
	case distBimodal:
		long := distuv.Binomial{N: nf, P: 0.25, Src: s.src}.Rand()
		return 0.5*x*nf + 2*x*long
	case distExponential:
		return distuv.Gamma{Alpha: nf, Beta: 1 / x, Src: s.src}.Rand()
	}
	if n <= 64 {
		var t float64
		for i := uint64(0); i < n; i++ {
			t += s.dist.draw(s.rng, x)
		}
		return t
	}
	return nf*x + math.Sqrt(nf*s.dist.variance(x))*s.rng.NormFloat64()
}

// experiment draws one experiment of b batches of n/b calls and returns its
// counters as Time takes them.
func (s *sim) experiment(n uint64, b int) Counts {
	c := Counts{Resolution: 1, Contiguous: s.contiguous, HasTicksSq: !s.contiguous}
	per := n / uint64(b)
	pos := s.rng.Float64() // the clock phase at the start
	for j := 0; j < b; j++ {
		m := per
		if j == b-1 {
			m = n - per*uint64(b-1)
		}
		s.addBatch(&c, &pos, m)
	}
	return c
}

// addBatch adds a batch of m more calls to c: back to back from the clock
// phase *pos (which it advances) when the sim is contiguous, each at an
// independent phase otherwise.
func (s *sim) addBatch(c *Counts, pos *float64, m uint64) {
	var t uint64
	if s.contiguous {
		end := *pos + s.runSum(m)
		t = uint64(math.Floor(end) - math.Floor(*pos))
		*pos = end
	} else {
		var q uint64
		t, q = s.batch(m)
		c.TicksSq += q
	}
	c.Batches = append(c.Batches, Batch{Calls: m, Ticks: t})
	c.Calls += m
	c.Ticks += t
}

// TestSimulator checks the simulator the coverage tests rest on: the
// tick-count law has mean ET/d (Beilner eq. 4b), and matches a direct
// simulation of floor(U + T) call by call.
func TestSimulator(t *testing.T) {
	const draws = 200000
	for d := distConstant; d <= distBimodal; d++ {
		for _, x := range []float64{0.01, 0.5, 1.5, 5, 20} {
			s := newSim(d, x, false, 7)
			if math.Abs(s.mc-x) > 1e-9*math.Max(1, x) {
				t.Errorf("%v x=%v: E[c] = %v", d, x, s.mc)
			}
			if x > 1.5 {
				continue // the direct comparison below is enough at small x
			}
			cnt := make([]float64, len(s.pmf)+1)
			for i := 0; i < draws; i++ {
				c := int(math.Floor(s.rng.Float64() + d.draw(s.rng, x)))
				cnt[min(c, len(s.pmf))]++
			}
			for k, p := range s.pmf {
				f := cnt[k] / draws
				if math.Abs(f-p) > 5*math.Sqrt(p*(1-p)/draws)+1e-5 {
					t.Errorf("%v x=%v: P(c=%d) = %v, simulated %v", d, x, k, p, f)
				}
			}
		}
	}
	// Aggregated batches reproduce the per-call mean and variance.
	s := newSim(distUniform, 5, false, 9)
	var m, v float64
	const reps = 4000
	for i := 0; i < reps; i++ {
		c, _ := s.batch(5000) // multinomial path
		z := (float64(c) - 5000*s.mc) / math.Sqrt(5000*s.vc)
		m += z
		v += z * z
	}
	m /= reps
	v = v/reps - m*m
	if math.Abs(m) > 0.07 || math.Abs(v-1) > 0.1 {
		t.Errorf("multinomial batches: standardized mean %v, variance %v", m, v)
	}
}

// phaseLaw is where calls start relative to the ticks of the clock the
// program keeps time with (the scheduler tick), in fractions of a tick.
type phaseLaw int

const (
	// phaseAsync: uniform, the estimator's assumption (Beilner section 2,
	// eq. 4a/4b).
	phaseAsync phaseLaw = iota
	// phaseCoupled: entries 1.9x as frequent 5-15% of a tick after a tick
	// as elsewhere (0.9x): threads made runnable by the scheduler tick
	// under CPU contention (measured 1.4-1.6x 200-600 us after a 4 ms
	// boundary, 0.7x just before one).
	phaseCoupled
	// phaseLocked: every entry within the last 2% of a tick: a loop that
	// sleeps to the next timer boundary and is woken just before the
	// clock moves.
	phaseLocked
)

var phaseNames = [...]string{"async", "coupled", "locked"}

func (l phaseLaw) String() string { return phaseNames[l] }

// draw returns an entry phase in [0, 1).
func (l phaseLaw) draw(r *rand.Rand) float64 {
	switch l {
	case phaseCoupled:
		if r.Float64() < 0.1 {
			return 0.05 + 0.1*r.Float64()
		}
	case phaseLocked:
		return 0.98 + 0.02*r.Float64()
	}
	return r.Float64()
}

// ditherTick is the tick, in ns, of the simulated dithered clock.
const ditherTick = 1000

// phaseSim times separated calls whose entries follow a phase law relative
// to a grid of period d, call by call, with either a fixed grid (jiffies,
// or an undithered tick:DUR: c = floor(U + T)) or the dithered tick:DUR
// clock of bpf/timing.h exactly as it computes in BPF, in integer ns: the
// entry stores e - r for r uniform in {0..d-1} (a 64-bit draw mod d) and
// the exit counts (x - (e - r)) / d. Durations are rounded to integer ns
// stochastically (floor(T d + V), V uniform), so that the true mean stays
// x ticks exactly.
type phaseSim struct {
	dist     durDist
	x        float64
	law      phaseLaw
	dithered bool
	rng      *rand.Rand
}

func newPhaseSim(d durDist, x float64, law phaseLaw, dithered bool, seed uint64) *phaseSim {
	return &phaseSim{dist: d, x: x, law: law, dithered: dithered,
		rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
}

// call returns the ticks one call crosses.
func (s *phaseSim) call() uint64 {
	u := s.law.draw(s.rng)
	t := s.dist.draw(s.rng, s.x)
	if !s.dithered {
		return uint64(math.Floor(u + t))
	}
	const base = 1 << 40 // a monotonic clock well past boot
	e := uint64(base) + uint64(math.Floor(u*ditherTick))
	x := e + uint64(math.Floor(t*ditherTick+s.rng.Float64()))
	g := e - s.rng.Uint64()%ditherTick // tp_phase at entry
	return (x - g) / ditherTick        // tp_close at exit
}

// experiment draws b batches of n/b calls (resolution 1 tick).
func (s *phaseSim) experiment(n uint64, b int) Counts {
	c := Counts{Resolution: 1, HasTicksSq: true}
	per := n / uint64(b)
	for j := 0; j < b; j++ {
		m := per
		if j == b-1 {
			m = n - per*uint64(b-1)
		}
		var t uint64
		for i := uint64(0); i < m; i++ {
			k := s.call()
			t += k
			c.TicksSq += k * k
		}
		c.Batches = append(c.Batches, Batch{Calls: m, Ticks: t})
		c.Calls += m
		c.Ticks += t
	}
	return c
}
