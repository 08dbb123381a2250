// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/estimate/histogram"
	"github.com/tickprof/tickprof/internal/loader"
)

// The probe's own cost inside the timed calls is measured in the run, in
// echo windows (internal/loader's EchoWindow; docs/overhead.md): for a share
// of the run, a second probe right after each native function's entry
// probe times the entry's own path in the calls' own conditions.

// EchoConfig sets the echo windows of a run.
type EchoConfig struct {
	// Off turns them off: the correction then rests on the calibration
	// alone (the range of its call patterns).
	Off bool
	// Window is one window's length (0: DefaultEchoWindow); Duty the share
	// of the run in windows (0: DefaultEchoDuty).
	Window time.Duration
	Duty   float64
	// Regular spaces the windows evenly (Window every Window/Duty) instead
	// of at random: for runs of a program that cannot keep time with them
	// (the calibration's), so that every run has its share of timed calls.
	Regular bool
	// Model, when set, is the model of every native function's echoes,
	// with or without a Corrector (the calibration fits it this way with
	// O = G_on + P); nil: each kind's calibrated model.
	Model *estimate.OverheadModel
}

// The echo windows' defaults: a window holds hundreds of calls even at a
// few hundred calls a second, and 5% of the run costs the calls in windows
// one more trap each, about 0.07 us per call on average here. Each window
// also leaves out the calls that overlap its attach and detach (about
// 150 ms of calls). The overhead drifts while a program runs, so that a
// few windows see a few of its moments: the spread between their polling
// batches carries that into the quantiles (estimate.OverheadDist). Shorter
// windows, more of them for the same duty, were tried (100 ms): they left
// out 2-3 times as many calls as they echoed, and under a load of 8-17 the
// means of back-to-back calls and of a Go function after a channel wait
// missed their truth in 3 of 8 runs against 0 of 12 with 400 ms windows
// (docs/overhead.md).
const (
	DefaultEchoWindow = 400 * time.Millisecond
	DefaultEchoDuty   = 0.05
	// firstEchoAfter is when the first window opens: early, so that a
	// short run has one.
	firstEchoAfter = 300 * time.Millisecond
)

// OverheadCalibration is what a calibration says of a probe kind's overhead
// inside a call: the model that turns echoes into overheads, and the range
// of its mean over the call patterns calibrated (Typical: back to back),
// for calls without echoes.
type OverheadCalibration struct {
	Model              estimate.OverheadModel
	Typical, Low, High float64
}

// EchoResult is what a target's echoes measured.
type EchoResult struct {
	// Sums are over the echoed calls; Overhead is the mean overhead per
	// call they give (estimate.InCallOverhead), with its interval.
	Sums     estimate.EchoSums
	Overhead estimate.Result
	// Model is the calibrated model used, and BodyShare its u for these
	// calls (estimate.BodyShare of their own length).
	Model     estimate.OverheadModel
	BodyShare float64
	// Hist is the overheads' histogram, MaxNs the largest; BatchMedians
	// are the medians of Hist's values by polling batch (the polls that
	// read new echoes; estimate.BucketMedian).
	Hist         *histogram.Hist
	MaxNs        float64
	BatchMedians []float64
	// Missed counts echoes without their entry; Window the calls in echo
	// windows and Excluded the calls overlapping an attach or detach:
	// neither is among the calls timed.
	Missed, Window, Excluded uint64
	// Windows is the number of echo windows run.
	Windows int
}

// echoRunner runs the echo windows of a session and keeps the echoes'
// per-poll increments.
type echoRunner struct {
	mu      sync.Mutex
	windows int
	err     error
	last    []loader.EchoCounts
	batches [][]estimate.EchoSums
	medians [][]float64
}

// echoed reports whether targets of kind k have echoes: user and Go
// functions, and USDT pairs (whose entry is a uprobe on a nop).
func echoed(k loader.Kind) bool {
	return k == loader.KindUser || k == loader.KindGoUser || k == loader.KindUSDT
}

// echoModels returns the model of every spec for the loader (nil when the
// run has no echoes): its kind's calibrated model, or O = G_on + P when the
// calibration has none (the correction then says so).
func (s *Session) echoModels() []loader.EchoModel {
	if s.cfg.Echo.Off || (s.cfg.Corrector == nil && s.cfg.Echo.Model == nil) || s.cfg.Overhead > 0 || s.cfg.Clock.Kind == ClockJiffies {
		return nil
	}
	out := make([]loader.EchoModel, len(s.specs))
	any := false
	for i, sp := range s.specs {
		out[i] = loader.EchoModel{A: 0, B: 1}
		if !echoed(sp.Kind) {
			continue
		}
		any = true
		if m := s.cfg.Echo.Model; m != nil {
			out[i] = loader.EchoModel{A: m.A, B: m.B}
		} else if c, ok := s.calibration(i); ok && c.Model.Valid() {
			out[i] = loader.EchoModel{A: c.Model.A, B: c.Model.B}
		}
	}
	if !any {
		return nil
	}
	return out
}

// startEchoes runs echo windows until ctx ends: the first soon after the
// start, then at random times with gaps drawn so that Duty of the run is in
// windows (exponential: no program can keep time with them).
func (s *Session) startEchoes(ctx context.Context) (stop func()) {
	if s.ls == nil || !s.ls.HasEchoes() {
		return func() {}
	}
	w, duty := s.cfg.Echo.Window, s.cfg.Echo.Duty
	if w <= 0 {
		w = DefaultEchoWindow
	}
	if !(duty > 0 && duty < 1) {
		duty = DefaultEchoDuty
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		gap := firstEchoAfter
		meanGap := float64(w) * (1 - duty) / duty
		for {
			t := time.NewTimer(gap)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			err := s.ls.EchoWindow(ctx, w)
			s.echo.mu.Lock()
			s.echo.windows++
			if err != nil && s.echo.err == nil {
				s.echo.err = err
			}
			s.echo.mu.Unlock()
			if err != nil {
				return
			}
			gap = time.Duration(rand.ExpFloat64() * meanGap)
			if s.cfg.Echo.Regular {
				gap = time.Duration(meanGap)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// pollEchoes reads the echoes after a poll and keeps their increments as
// that poll's batch.
func (s *Session) pollEchoes() {
	if s.ls == nil || !s.ls.HasEchoes() {
		return
	}
	cur, err := s.ls.Echoes()
	if err != nil {
		return
	}
	s.echo.mu.Lock()
	defer s.echo.mu.Unlock()
	if s.echo.batches == nil {
		s.echo.batches = make([][]estimate.EchoSums, len(cur))
		s.echo.medians = make([][]float64, len(cur))
	}
	for i, c := range cur {
		var prev loader.EchoCounts
		if i < len(s.echo.last) {
			prev = s.echo.last[i]
		}
		if inc := echoSums(c).Sub(echoSums(prev)); inc.N > 0 {
			s.echo.batches[i] = append(s.echo.batches[i], inc)
			if m, ok := estimate.BucketMedian(histIncrement(c.Hist[:], prev.Hist[:])); ok {
				s.echo.medians[i] = append(s.echo.medians[i], m)
			}
		}
	}
	s.echo.last = cur
}

// histIncrement is the histogram of the overheads counted in cur and not in
// prev (the two in the loader's layout, prev all zero before the first read).
func histIncrement(cur, prev []uint64) *histogram.Hist {
	h := &histogram.Hist{}
	for b := range h.Counts {
		if b < len(cur) {
			h.Counts[b] = cur[b]
			if b < len(prev) {
				h.Counts[b] -= prev[b]
			}
		}
	}
	return h
}

// echoSums converts loader counts to the estimator's sums.
func echoSums(c loader.EchoCounts) estimate.EchoSums {
	return estimate.EchoSums{N: float64(c.N), G: float64(c.GSum), GSq: c.GSq.Float64(),
		P: float64(c.PSum), PSq: c.PSq.Float64(), GP: float64(c.GPSum)}
}

// echoResults builds every target's EchoResult from the final read
// (nil entries for targets without echoes), for run's raw estimates.
func (s *Session) echoResults(run *Result) []*EchoResult {
	conf := run.Confidence
	if s.ls == nil || !s.ls.HasEchoes() {
		return nil
	}
	cur, err := s.ls.Echoes()
	if err != nil {
		s.cfg.warn("reading the probe-cost echoes failed (%v): the means are corrected by the calibration's range", err)
		return nil
	}
	s.echo.mu.Lock()
	defer s.echo.mu.Unlock()
	if s.echo.err != nil {
		s.cfg.warn("an echo window failed (%v): the echoes before it are used", s.echo.err)
	}
	out := make([]*EchoResult, len(cur))
	for i, c := range cur {
		if !echoed(s.specs[i].Kind) {
			continue
		}
		r := &EchoResult{Sums: echoSums(c), Missed: c.Missed, Window: c.Window, Excluded: c.Excluded,
			Windows: s.echo.windows, MaxNs: float64(c.OMax)}
		h := &histogram.Hist{}
		copy(h.Counts[:], c.Hist[:])
		r.Hist = h
		if m := s.cfg.Echo.Model; m != nil {
			r.Model = *m
		} else if cal, ok := s.calibration(i); ok {
			r.Model = cal.Model
		}
		var batches []estimate.EchoSums
		if i < len(s.echo.batches) {
			batches, r.BatchMedians = s.echo.batches[i], s.echo.medians[i]
		}
		if r.Model.Valid() && i < len(run.Targets) {
			r.BodyShare = bodyShare(r.Sums, r.Model, run.Targets[i].Estimate.Mean)
			if o, err := estimate.InCallOverhead(r.Sums, batches, r.Model, r.BodyShare, estimate.Options{Confidence: conf}); err == nil {
				r.Overhead = o
			}
		}
		out[i] = r
	}
	return out
}

// bodyShare is u of the model for calls of measured mean raw: the calls'
// own length is raw less their overhead, which depends on u; two rounds
// from u = 0 settle it (u saturates, and moves the overhead by a share of
// the gap).
func bodyShare(s estimate.EchoSums, m estimate.OverheadModel, raw float64) float64 {
	if s.N == 0 {
		return 0
	}
	g, p := s.G/s.N, s.P/s.N
	u := 0.0
	for i := 0; i < 2; i++ {
		u = estimate.BodyShare(raw - (m.A + m.Slope(u)*g + p))
	}
	return u
}

// calibration is the overhead calibration of spec i's probe kind.
func (s *Session) calibration(i int) (OverheadCalibration, bool) {
	if s.cfg.Corrector == nil || i >= len(s.kinds) || s.kinds[i] == "" {
		return OverheadCalibration{}, false
	}
	return s.cfg.Corrector.Calibration(s.kinds[i])
}
