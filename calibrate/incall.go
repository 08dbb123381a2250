// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/timing"
)

// The in-call overhead model (docs/overhead.md).
//
// What a probe pair adds inside a timed call depends on the call's
// conditions (cache and TLB state, preemption), so `time` measures it in
// the run with echoes (bpf/echo.h): the gap G_on between the entry probe's
// clock reading and a second probe's right after it, on CPU, and the wait P
// for a CPU in between. The calibration fits, per probe kind, how the whole
// in-call overhead O follows from them,
//
//	O = A + (B + C u) G_on + P,   u = min(1, body / 10 us),
//
// on the calibration target in call patterns that span the conditions
// seen in programs: empty functions and handlers of 2 and 10 us that time
// themselves, back to back, after sleeps of 50 us to 10 ms and after a 1 ms
// spin. The echo measures the entry's side of the overhead; the exit's
// side grows with the body between them (a longer body leaves the return
// probe's path colder), hence the term in u, the body's length as the run
// itself estimates it (the measured mean less the overhead). Each pattern
// is one run with echo windows: the calls outside the windows give O
// (their measured mean, minus the handler's own mean), the echoed calls
// give G_on and P. FitInCall says how the model's error for a pattern it
// was not fitted on is estimated; it is carried into every corrected
// interval.

// InCallModel is a probe kind's calibrated in-call overhead model.
type InCallModel struct {
	// A (ns), B and C: O = A + (B + C u) G_on + P.
	A float64 `json:"a_ns"`
	B float64 `json:"b"`
	C float64 `json:"c"`
	// S0 (ns) and S1: the model's error, one standard deviation, is
	// sqrt(S0^2 + (S1 G_on)^2).
	S0 float64 `json:"s0_ns"`
	S1 float64 `json:"s1"`
	// TypicalNs is the overhead of calls back to back; LowNs and HighNs
	// the range of the patterns' means (the bound used for calls without
	// echoes).
	TypicalNs float64 `json:"typical_ns"`
	LowNs     float64 `json:"low_ns"`
	HighNs    float64 `json:"high_ns"`
	// Patterns are the fitted points.
	Patterns []PatternPoint `json:"patterns"`
}

// PatternPoint is one call pattern's measurement.
type PatternPoint struct {
	// Name says what the pattern is ("empty after sleep 1ms").
	Name string `json:"name"`
	// Calls are the calls timed, Echoes the calls echoed.
	Calls  uint64 `json:"calls"`
	Echoes uint64 `json:"echoes"`
	// BodyNs is the function's own mean (0 for the empty functions).
	BodyNs float64 `json:"body_ns"`
	// GNs and PNs are the echoes' mean gap on CPU and wait for a CPU; ONs
	// the calls' mean in-call overhead, ONsSE its standard error.
	GNs   float64 `json:"g_ns"`
	PNs   float64 `json:"p_ns"`
	ONs   float64 `json:"o_ns"`
	ONsSE float64 `json:"o_se_ns"`
}

// MinProgramSpread is the least relative model error (S1) a correction
// carries. The calibration's patterns all run in one program, so their
// spread says how the model misses a new call pattern there, not in
// another program; measured on programs it was not fitted on (the
// coverage suite's targets, built -O0 where the calibration's are
// hand-written assembly and -O2), the model missed by 25-26% of G_on: a
// ~100 ns function back to back paid 780 ns where calibration's empty
// function paid 1,055 ns, and a 10 us handler after 10 ms sleeps paid
// 7.0-7.6 us where the model gave 5.5-6.0 us at the same gap.
const MinProgramSpread = 0.25

// Model is the model as the estimator uses it, its relative error at
// least MinProgramSpread.
func (m InCallModel) Model() estimate.OverheadModel {
	return estimate.OverheadModel{A: m.A, B: m.B, C: m.C, S0: m.S0, S1: max(m.S1, MinProgramSpread)}
}

// callPattern is one pattern of the calibration target's pattern mode: a
// function (fn: empty, stepped, go) with a body of body (0: empty) called
// once per gap spent sleeping or spinning (how).
type callPattern struct {
	fn, how string
	body    time.Duration
	gap     time.Duration
}

// name says what the pattern is.
func (p callPattern) name() string {
	what := p.fn
	if p.body > 0 {
		what = fmt.Sprintf("%v handler", p.body)
	}
	if p.gap == 0 {
		return what + " back to back"
	}
	return fmt.Sprintf("%s after %s %v", what, p.how, p.gap)
}

// patterns are the call patterns of a probe kind's function.
func patterns(fn string) []callPattern {
	var ps []callPattern
	for _, g := range []struct {
		how string
		gap time.Duration
	}{{"sleep", 0}, {"sleep", 50 * time.Microsecond}, {"sleep", time.Millisecond}, {"sleep", 4 * time.Millisecond},
		{"sleep", 10 * time.Millisecond}, {"spin", time.Millisecond}} {
		ps = append(ps, callPattern{fn: fn, how: g.how, gap: g.gap})
	}
	var bodies []time.Duration
	switch fn {
	case "empty":
		bodies = []time.Duration{2 * time.Microsecond, 10 * time.Microsecond}
	case "go":
		bodies = []time.Duration{10 * time.Microsecond}
	}
	for _, b := range bodies {
		for _, gap := range []time.Duration{0, time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond} {
			ps = append(ps, callPattern{fn: fn, how: "sleep", body: b, gap: gap})
		}
	}
	return ps
}

// inCallKinds are the probe kinds with an in-call model, and the function
// of the calibration target that stands for each.
var inCallKinds = []struct {
	kind ProbeKind
	fn   string
}{{KindUser, "empty"}, {KindUserStepped, "stepped"}, {KindGo, "go"}}

// patternSeconds is each pattern's run: with echo windows of 250 ms every
// 833 ms, a 4 ms gap gives about 120 echoed and 250 timed calls. Longer
// gaps run longer (seconds), so that they too have about 500 calls: the
// 10 ms sleeps were added when a 10 µs handler after them came out 20-80%
// high under load (its overhead, 6.7-7.5 µs, above what the model fitted
// on gaps up to 4 ms predicted, 4.7-5.6 µs).
const patternSeconds = 2.0

// seconds is pattern p's run length.
func (p callPattern) seconds() float64 {
	return max(patternSeconds, 500*(p.gap+p.body).Seconds())
}

// MeasureInCall fits the in-call overhead model of each probe kind it
// knows among kinds (nil: all) on the calibration target exe, with files
// in dir. A kind that cannot be fitted is left out, with the reason in
// skipped; err is the context's.
func MeasureInCall(ctx context.Context, dir, exe string, kinds []ProbeKind, o OverheadOptions) (models map[ProbeKind]InCallModel, skipped []string, err error) {
	want := map[ProbeKind]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	out := map[ProbeKind]InCallModel{}
kinds:
	for _, k := range inCallKinds {
		if len(want) > 0 && !want[k.kind] || k.kind == KindGo && len(o.GoTarget) == 0 {
			continue
		}
		var pts []PatternPoint
		for _, p := range patterns(k.fn) {
			pt, err := runPattern(ctx, dir, exe, p, -1, o)
			first := PatternPoint{GNs: math.Inf(1)} // back to back: judged by its waits alone
			if len(pts) > 0 {
				first = pts[0]
			}
			if err == nil && disturbed(pt, p, first) {
				// Once more: a run the machine disturbed (another
				// guest, a burst of interrupts, waits for a CPU) is
				// not the pattern.
				if again, err2 := runPattern(ctx, dir, exe, p, -1, o); err2 == nil && again.GNs+again.PNs < pt.GNs+pt.PNs {
					pt = again
				}
			}
			if ctx.Err() != nil {
				return out, skipped, ctx.Err()
			}
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("in-call overhead model of %s: %s: %v", k.kind, p.name(), err))
				continue kinds
			}
			pts = append(pts, pt)
		}
		m, err := FitInCall(pts)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("in-call overhead model of %s: %v", k.kind, err))
			continue
		}
		out[k.kind] = m
	}
	return out, skipped, nil
}

// disturbed says whether a pattern's run looks disturbed by the machine
// rather than shaped by the pattern: a handler whose own unprobed mean was
// more than 1.5 times its length (plus 1 us), echoes that waited for a CPU
// more than half as long as they ran (calls back to back waited 1.5 us
// on average beside 1.1 us on CPU while a qemu guest loaded the machine,
// and the fit bent to them), or echo gaps more than 4 times those of
// calls back to back (plus 2 us). Seen on this kind of VM:
// a 2 us handler that measured itself at 13.5 us in a run whose gaps were
// 25 us, against 1.5 us back to back; a 10 ms sleep raises the gap about
// 3 times.
func disturbed(pt PatternPoint, p callPattern, backToBack PatternPoint) bool {
	if p.body > 0 && pt.BodyNs > 1.5*float64(p.body.Nanoseconds())+1000 {
		return true
	}
	return pt.PNs > 0.5*pt.GNs || pt.GNs > 4*backToBack.GNs+2000
}

// runPattern times one call pattern with echo windows and returns its point.
func runPattern(ctx context.Context, dir, exe string, p callPattern, cpu int, o OverheadOptions) (PatternPoint, error) {
	own := filepath.Join(dir, "own-pattern")
	os.Remove(own)
	secs := strconv.FormatFloat(p.seconds()+5, 'f', 1, 64)
	gap := strconv.FormatInt(p.gap.Nanoseconds(), 10)
	body := strconv.FormatInt(p.body.Nanoseconds(), 10)
	var argv []string
	var target string
	switch {
	case p.fn == "go" && p.body > 0:
		argv = append(append([]string{}, o.GoTarget...), secs, "--go-pattern", gap+":"+p.how+":"+body+":"+own)
		target = o.GoTarget[0] + ":" + GoHandlerSymbol
	case p.fn == "go":
		argv = append(append([]string{}, o.GoTarget...), secs, "--go-pattern", gap+":"+p.how)
		target = o.GoTarget[0] + ":" + GoSymbol
	case p.body > 0:
		argv = []string{exe, "pattern", "handler:" + body, gap, p.how, secs, own}
		target = exe + ":cal_handler"
	default:
		fn := map[string]string{"empty": "cal_empty", "stepped": "cal_empty_stepped"}[p.fn]
		argv = []string{exe, "pattern", p.fn, gap, p.how, secs, own}
		target = exe + ":" + fn
	}
	identity := estimate.OverheadModel{A: 0, B: 1}
	s, err := timing.Open(ctx, timing.Config{Command: argv, Targets: timing.Targets{Users: []string{target}, MaxProbes: 1},
		NoRecords: true, Clock: timing.Clock{Kind: timing.ClockNS, Tick: time.Nanosecond},
		Estimate: estimate.Options{Confidence: o.Confidence}, Interval: 100 * time.Millisecond,
		Duration: time.Duration(p.seconds() * float64(time.Second)), Correction: timing.CorrectionOff,
		Echo: timing.EchoConfig{Model: &identity, Window: 250 * time.Millisecond, Duty: 0.3, Regular: true}})
	if err != nil {
		return PatternPoint{}, err
	}
	defer s.Close()
	if err := schedule(s.PID(), cpu, o.Ordinary); err != nil {
		return PatternPoint{}, err
	}
	run, err := s.Run(ctx)
	if err != nil {
		return PatternPoint{}, err
	}
	if err := ctx.Err(); err != nil {
		return PatternPoint{}, err
	}
	return patternPoint(p, run, own)
}

// patternPoint reads a pattern run's point: the timed calls' mean minus the
// handler's own mean, and the echoes' means.
func patternPoint(p callPattern, run *timing.Result, own string) (PatternPoint, error) {
	if len(run.Targets) != 1 {
		return PatternPoint{}, errors.New("no target timed")
	}
	t := run.Targets[0]
	e := t.Echo
	if t.Err != "" || t.Calls < 30 {
		return PatternPoint{}, fmt.Errorf("%d calls timed (%s): too few", t.Calls, t.Err)
	}
	if e == nil || e.Sums.N < estimate.MinEchoes {
		return PatternPoint{}, errors.New("too few echoed calls: the echo could not be attached or its windows held too few calls")
	}
	pt := PatternPoint{Name: p.name(), Calls: t.Calls, Echoes: uint64(e.Sums.N),
		GNs: e.Sums.G / e.Sums.N, PNs: e.Sums.P / e.Sums.N, ONs: t.Raw.Mean, ONsSE: t.Raw.StdErr}
	if p.body > 0 {
		b, err := os.ReadFile(own)
		if err != nil {
			return pt, fmt.Errorf("read the handler's own mean: %w", err)
		}
		var mean, n float64
		if _, err := fmt.Sscan(string(b), &mean, &n); err != nil || n < 30 || !(mean > 0) {
			return pt, fmt.Errorf("the handler's own mean %q: want \"MEAN_NS CALLS\" over at least 30 calls", b)
		}
		pt.ONs -= mean
		pt.BodyNs = mean
	}
	return pt, nil
}

// FitInCall fits the model O - P = A + B G_on to the patterns' means.
//
// Each pattern's mean carries its own sampling error (its standard error
// se_p, large for patterns of few calls or under load), and the model does
// not fit every pattern exactly: a pattern it was not fitted on misses it
// by a relative error of spread S1, the one to carry into a correction.
// Both are estimated together, as in a random-effects meta-regression
// (Paule and Mandel's moment estimator): with weights
// w_p = 1/(se_p^2 + S1^2 G_p^2), S1 is the value at which the weighted
// residual sum of squares equals its expectation, k - 2 for k patterns
// (0 when the patterns' own errors explain the residuals). S0 is the
// standard error of the fitted line at the weighted mean gap. TypicalNs is
// the first pattern's O (back to back), LowNs and HighNs the smallest and
// largest O.
func FitInCall(pts []PatternPoint) (InCallModel, error) {
	if len(pts) < 4 {
		return InCallModel{}, fmt.Errorf("%d call patterns: at least 4 are needed", len(pts))
	}
	bodied := false
	for _, p := range pts {
		bodied = bodied || p.BodyNs > 0
	}
	np := 2
	if bodied {
		np = 3
	}
	dof := float64(len(pts) - np)
	a, b, c, q, s0, ok := fitWLS(pts, 0, bodied)
	if !ok {
		return InCallModel{}, errors.New("the patterns' gaps and bodies do not differ enough to fit the model")
	}
	s1 := 0.0
	if q > dof {
		lo, hi := 0.0, 2.0
		for i := 0; i < 60; i++ {
			mid := (lo + hi) / 2
			if _, _, _, qm, _, _ := fitWLS(pts, mid, bodied); qm > dof {
				lo = mid
			} else {
				hi = mid
			}
		}
		s1 = hi
		a, b, c, _, s0, _ = fitWLS(pts, s1, bodied)
	}
	if !(b > 0) || !(b+c > 0) {
		return InCallModel{}, fmt.Errorf("fitted slopes %.3g and %.3g: the in-call overhead does not grow with the echo's gap here", b, b+c)
	}
	m := InCallModel{A: a, B: b, C: c, S0: s0, S1: s1, Patterns: pts, TypicalNs: pts[0].ONs, LowNs: math.Inf(1), HighNs: math.Inf(-1)}
	for _, p := range pts {
		m.LowNs = math.Min(m.LowNs, p.ONs)
		m.HighNs = math.Max(m.HighNs, p.ONs)
	}
	m.LowNs = math.Max(0, m.LowNs)
	m.TypicalNs = math.Min(math.Max(m.TypicalNs, m.LowNs), m.HighNs)
	return m, nil
}

// BodyShare is u, the body's length on the scale the model's term in C
// saturates at: min(1, body / 10 us).
func BodyShare(bodyNs float64) float64 { return estimate.BodyShare(bodyNs) }

// fitWLS fits O - P = A + B G + C u G (C = 0 unless bodied) with weights
// 1/(se^2 + (s1 G)^2); it returns the weighted residual sum of squares and
// the standard error of the fitted line at the weighted mean point.
func fitWLS(pts []PatternPoint, s1 float64, bodied bool) (a, b, c, q, s0 float64, ok bool) {
	k := 2
	if bodied {
		k = 3
	}
	var m [3][3]float64
	var v [3]float64
	ws := make([]float64, len(pts))
	row := func(p PatternPoint) [3]float64 {
		return [3]float64{1, p.GNs, BodyShare(p.BodyNs) * p.GNs}
	}
	for i, p := range pts {
		w := 1 / (math.Max(p.ONsSE*p.ONsSE, 100) + s1*s1*p.GNs*p.GNs)
		ws[i] = w
		x, y := row(p), p.ONs-p.PNs
		for r := 0; r < k; r++ {
			v[r] += w * x[r] * y
			for c := 0; c < k; c++ {
				m[r][c] += w * x[r] * x[c]
			}
		}
	}
	inv, ok := invert(m, k)
	if !ok {
		return 0, 0, 0, 0, 0, false
	}
	var beta [3]float64
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			beta[r] += inv[r][c] * v[c]
		}
	}
	var sw float64
	var xbar [3]float64
	for i, p := range pts {
		x, y := row(p), p.ONs-p.PNs
		r := y - beta[0] - beta[1]*x[1] - beta[2]*x[2]
		q += ws[i] * r * r
		sw += ws[i]
		for j := 0; j < k; j++ {
			xbar[j] += ws[i] * x[j]
		}
	}
	var vv float64
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			vv += xbar[r] / sw * inv[r][c] * xbar[c] / sw
		}
	}
	return beta[0], beta[1], beta[2], q, math.Sqrt(math.Max(vv, 0)), true
}

// invert inverts the top-left k x k block of m (Gauss-Jordan); false when
// it is singular.
func invert(m [3][3]float64, k int) ([3][3]float64, bool) {
	var a [3][6]float64
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			a[r][c] = m[r][c]
		}
		a[r][k+r] = 1
	}
	for col := 0; col < k; col++ {
		p := col
		for r := col + 1; r < k; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		if math.Abs(a[p][col]) < 1e-300 {
			return [3][3]float64{}, false
		}
		a[col], a[p] = a[p], a[col]
		d := a[col][col]
		for c := 0; c < 2*k; c++ {
			a[col][c] /= d
		}
		for r := 0; r < k; r++ {
			if r != col {
				f := a[r][col]
				for c := 0; c < 2*k; c++ {
					a[r][c] -= f * a[col][c]
				}
			}
		}
	}
	var out [3][3]float64
	for r := 0; r < k; r++ {
		for c := 0; c < k; c++ {
			out[r][c] = a[r][k+c]
		}
	}
	return out, true
}
