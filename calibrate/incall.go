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
//	O = A + B G_on + P,
//
// on the calibration target in call patterns that span the conditions
// seen in programs: back to back, after sleeps of 50 us to 4 ms, after a
// 1 ms spin, and a 5 us handler that times itself after a 2 ms sleep. Each
// pattern is one run with echo windows: the calls outside the windows give
// O (their measured mean, minus the handler's own mean), the echoed calls
// give G_on and P. The fit is ordinary least squares over the patterns'
// means; its relative residual spread S1 is the model's error for a
// pattern it was not fitted on, carried into every corrected interval.

// InCallModel is a probe kind's calibrated in-call overhead model.
type InCallModel struct {
	// A (ns) and B: O = A + B G_on + P.
	A float64 `json:"a_ns"`
	B float64 `json:"b"`
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
	// GNs and PNs are the echoes' mean gap on CPU and wait for a CPU; ONs
	// the calls' mean in-call overhead, ONsSE its standard error.
	GNs   float64 `json:"g_ns"`
	PNs   float64 `json:"p_ns"`
	ONs   float64 `json:"o_ns"`
	ONsSE float64 `json:"o_se_ns"`
}

// Model is the model as the estimator uses it.
func (m InCallModel) Model() estimate.OverheadModel {
	return estimate.OverheadModel{A: m.A, B: m.B, S0: m.S0, S1: m.S1}
}

// callPattern is one pattern of the calibration target's pattern mode.
type callPattern struct {
	name, fn, how string
	gap           time.Duration
}

// patterns are the call patterns, per probe kind's function.
func patterns(fn string) []callPattern {
	ps := []callPattern{
		{fn + " back to back", fn, "sleep", 0},
		{fn + " after sleep 50us", fn, "sleep", 50 * time.Microsecond},
		{fn + " after sleep 1ms", fn, "sleep", time.Millisecond},
		{fn + " after sleep 4ms", fn, "sleep", 4 * time.Millisecond},
		{fn + " after spin 1ms", fn, "spin", time.Millisecond},
	}
	if fn == "empty" {
		ps = append(ps, callPattern{"5us handler after sleep 2ms", "handler", "sleep", 2 * time.Millisecond})
	}
	return ps
}

// inCallKinds are the probe kinds with an in-call model, and the function
// of the target that stands for each.
var inCallKinds = []struct {
	kind ProbeKind
	fn   string
}{{KindUser, "empty"}, {KindUserStepped, "stepped"}}

// patternSeconds is each pattern's run: with echo windows of 250 ms at a
// 40% duty, a 4 ms gap gives about 200 echoed and 250 timed calls.
const patternSeconds = 2.0

// MeasureInCall fits the in-call overhead model of each probe kind it
// knows among kinds (nil: all) on the calibration target exe, with files
// in dir.
func MeasureInCall(ctx context.Context, dir, exe string, kinds []ProbeKind, o OverheadOptions) (map[ProbeKind]InCallModel, error) {
	want := map[ProbeKind]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	out := map[ProbeKind]InCallModel{}
	for _, k := range inCallKinds {
		if len(want) > 0 && !want[k.kind] {
			continue
		}
		var pts []PatternPoint
		for i, p := range patterns(k.fn) {
			pt, err := runPattern(ctx, dir, exe, p, i%2, o)
			if err != nil {
				return out, fmt.Errorf("in-call overhead of %s, %s: %w", k.kind, p.name, err)
			}
			pts = append(pts, pt)
		}
		m, err := FitInCall(pts)
		if err != nil {
			return out, fmt.Errorf("in-call overhead of %s: %w", k.kind, err)
		}
		out[k.kind] = m
	}
	return out, nil
}

// runPattern times one call pattern with echo windows and returns its point.
func runPattern(ctx context.Context, dir, exe string, p callPattern, cpu int, o OverheadOptions) (PatternPoint, error) {
	own := filepath.Join(dir, "own-pattern")
	os.Remove(own)
	secs := strconv.FormatFloat(patternSeconds+5, 'f', 1, 64)
	argv := []string{exe, "pattern", p.fn, strconv.FormatInt(p.gap.Nanoseconds(), 10), p.how, secs, own}
	symbol := map[string]string{"empty": "cal_empty", "stepped": "cal_empty_stepped", "handler": "cal_handler"}[p.fn]
	identity := estimate.OverheadModel{A: 0, B: 1}
	s, err := timing.Open(ctx, timing.Config{Command: argv, Targets: timing.Targets{Users: []string{exe + ":" + symbol}, MaxProbes: 1},
		NoRecords: true, Clock: timing.Clock{Kind: timing.ClockNS, Tick: time.Nanosecond},
		Estimate: estimate.Options{Confidence: o.Confidence}, Interval: 100 * time.Millisecond,
		Duration: time.Duration(patternSeconds * float64(time.Second)), Correction: timing.CorrectionOff,
		Echo: timing.EchoConfig{Model: &identity, Window: 250 * time.Millisecond, Duty: 0.4}})
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
	pt := PatternPoint{Name: p.name, Calls: t.Calls, Echoes: uint64(e.Sums.N),
		GNs: e.Sums.G / e.Sums.N, PNs: e.Sums.P / e.Sums.N, ONs: t.Raw.Mean, ONsSE: t.Raw.StdErr}
	if p.fn == "handler" {
		b, err := os.ReadFile(own)
		if err != nil {
			return pt, fmt.Errorf("read the handler's own mean: %w", err)
		}
		var mean, n float64
		if _, err := fmt.Sscan(string(b), &mean, &n); err != nil || n < 30 || !(mean > 0) {
			return pt, fmt.Errorf("the handler's own mean %q: want \"MEAN_NS CALLS\" over at least 30 calls", b)
		}
		pt.ONs -= mean
	}
	return pt, nil
}

// FitInCall fits the model O - P = A + B G_on to the patterns' means by
// ordinary least squares; S1 is the root mean square of the residuals
// relative to G_on (on k - 2 degrees of freedom), S0 the largest pattern's
// own standard error. TypicalNs is the first pattern's O (back to back),
// LowNs and HighNs the smallest and largest O.
func FitInCall(pts []PatternPoint) (InCallModel, error) {
	k := float64(len(pts))
	if len(pts) < 3 {
		return InCallModel{}, fmt.Errorf("%d call patterns: at least 3 are needed", len(pts))
	}
	var sg, sy, sgg, sgy float64
	for _, p := range pts {
		y := p.ONs - p.PNs
		sg += p.GNs
		sy += y
		sgg += p.GNs * p.GNs
		sgy += p.GNs * y
	}
	den := k*sgg - sg*sg
	if !(den > 0) {
		return InCallModel{}, errors.New("the patterns' gaps do not differ: no slope to fit")
	}
	m := InCallModel{Patterns: pts, TypicalNs: pts[0].ONs, LowNs: math.Inf(1), HighNs: math.Inf(-1)}
	m.B = (k*sgy - sg*sy) / den
	m.A = (sy - m.B*sg) / k
	if !(m.B > 0) {
		return InCallModel{}, fmt.Errorf("fitted slope %.3g: the in-call overhead does not grow with the echo's gap here", m.B)
	}
	var rr float64
	for _, p := range pts {
		r := (p.ONs - p.PNs - m.A - m.B*p.GNs) / p.GNs
		rr += r * r
		m.S0 = math.Max(m.S0, p.ONsSE)
		m.LowNs = math.Min(m.LowNs, p.ONs)
		m.HighNs = math.Max(m.HighNs, p.ONs)
	}
	m.S1 = math.Sqrt(rr / (k - 2))
	m.LowNs = math.Max(0, m.LowNs)
	m.TypicalNs = math.Min(math.Max(m.TypicalNs, m.LowNs), m.HighNs)
	return m, nil
}
