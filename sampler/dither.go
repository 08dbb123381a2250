// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Dithered sampling periods.
//
// A cpu-clock event fires on a fixed grid of its period (the kernel's
// hrtimer is forwarded by whole periods), so a program whose work repeats
// at the sampling period, or keeps time with it, is seen at the same phase
// every time and its shares are biased without bound. The perf_event
// interface has no per-sample jitter and a BPF program cannot change its
// event's period; the one knob is PERF_EVENT_IOC_PERIOD, which sets a new
// period and restarts the event's timer a full new period after the call.
// So every CPU's clock is restarted, after waits drawn uniformly from
// [W/2, 3W/2] nominal periods (W the mean wait, drawsFor), each time with
// a period drawn uniformly from [aP, (a+1)P] (P the nominal period, a
// = 0.56).
//
// Why these draws (docs/design.md, "Sampling and stacks"): the samples of
// one run (between two restarts) lie on a lattice of its period v, and the
// phase that a program periodic with period T sees moves by v mod T from
// one sample to the next. With v uniform over a width of P, v mod T is
// exactly uniform when T divides P (the program locked to the nominal
// period, the likely case: one that sleeps to the period's boundaries)
// whatever the restart's own phase, and nearly uniform for every other T
// up to P. The range's start a makes the expected rate the nominal one:
// a run of length w at period v fires w/v - 1/2 times on average, and
// E[1/v] = ln((a+1)/a)/P, so W ln((a+1)/a) - 1/2 = W when
// a = 1/(exp(1 + 1/(2W)) - 1) (0.5 at W = 5.07, 0.56 at W = 20, 0.58 as W
// grows).
//
// The waits are long because each restart is a system call that waits for
// an interrupt on the clock's CPU (bench/dither, docs/performance.md; 2
// CPUs under a load average of 2.4-2.9, medians of 3): restarted every ~5
// periods the clocks cost tickprof 8.3% of a core at 999 Hz and 11.6% at
// 4999 Hz, every ~20 periods 4.6% and 8.1%, at a fixed period 2.1% and
// 3.5%.
// Simulated (TestDitherSpectrum), the variance of a share, per frequency
// of the program's activity, is about the binomial one the Wilson
// interval assumes at the sampling rate and its multiples (a program
// periodic at the rate: 95% intervals covered 95% of runs,
// TestDitherShareCoverage) and at most 1.5 times it at any frequency up
// to 4 times the rate (1.4 to 1.9 times the rate: 91% covered at 1.7),
// after mean waits of 20 periods; a program's share has a weighted mean
// of its harmonics' variances, so that bounds them all. Longer waits cost
// less and spread the worst a little more: 1.5-1.6 at 35 and 50 periods,
// 1.7 at 100 (coverage at 1.7 times the rate still 91-94%). The fixed
// grid's is unbounded at the sampling rate. Each clock's first period is
// drawn too (startClocks): a first run at the nominal period would lock
// for a whole wait.
const (
	// meanWait is W, the mean wait between restarts in nominal periods.
	meanWait = 20
	// minClockPeriod is the kernel's floor on a cpu-clock period (ns).
	minClockPeriod = 10000
	// roundShare bounds the restarts' own time: the wait before a round of
	// restarts is at least this many times the last round's length, so
	// that with many CPUs (each restart of another CPU's clock waits for an
	// interrupt there) the restarts take at most 1/roundShare of a thread.
	roundShare = 20
)

// draws are the ditherer's distributions for one nominal period.
type draws struct {
	nominal   uint64  // P, ns
	wait      float64 // W, the mean wait in nominal periods
	lo, width uint64  // periods are drawn from [lo, lo+width] ns
}

// drawsFor is the draws for the nominal period p (ns), after mean waits
// of meanWait periods.
func drawsFor(p uint64) draws { return drawsWith(p, meanWait) }

// drawsWith is the draws for the nominal period p (ns) and the mean wait
// w (nominal periods): periods from [aP, (a+1)P], the a that keeps the
// nominal rate (see above), or where aP is below the kernel's floor, from
// a range around P above it (the rate is then slightly above the nominal).
func drawsWith(p uint64, w float64) draws {
	a := 1 / math.Expm1(1+1/(2*w))
	d := draws{nominal: p, wait: w, lo: uint64(a * float64(p)), width: p}
	if d.lo < minClockPeriod {
		half := p - min(p, minClockPeriod)
		d.lo, d.width = p-half, 2*half
	}
	return d
}

// period is a drawn period (ns), from u uniform on [0, 1).
func (d draws) period(u float64) uint64 {
	return d.lo + uint64(u*float64(d.width+1))
}

// waitFor is a drawn wait before a round of restarts, from u uniform on
// [0, 1).
func (d draws) waitFor(u float64) time.Duration {
	return time.Duration(float64(d.nominal) * d.wait * (0.5 + u))
}

// clockRun is one CPU clock's history, in ns since its log's epoch.
type clockRun struct {
	on     float64 // when the clock was enabled
	since  float64 // when its current run started (its last restart, or on)
	period float64 // the current run's period
	done   float64 // fires expected of the runs before the current one
}

// clockLog records when each sampling clock started, was restarted and
// with what period, for the mean period: the CPU time one sample stands
// for is the time the clocks ran over the fires expected of them. A run
// of length d with period v fires floor(d/v) times; the restart times do
// not depend on the lattice's phase, so its fraction is uniform and the
// expectation is d/v - 1/2. The expectation uses the periods drawn, not
// their distribution: over a 10 s window at 49 Hz the realized mean of
// 1/v strays a few percent from ln 3 / P.
//
// The fires the BPF program counts (Stats.Seen) would not do instead: on
// a loaded virtual machine the kernel skips up to a third of them, but on
// idle CPUs, whose halted virtual CPU wakes late to the timer (the timer
// is then forwarded past the periods missed); a CPU that runs takes its
// fires on the lattice. Time covered over fires counted would stand every
// sample for the idle CPUs' lost time too: it gave a CPU-bound target 2%
// to 97% more CPU time than the kernel charged it, where the log's period
// is within the binomial tolerance (TestDitherAbsoluteTime).
type clockLog struct {
	nominal  uint64
	epoch    time.Time
	mu       sync.Mutex
	runs     []clockRun
	off      float64 // when the clocks were closed (+Inf while they run)
	restarts int64
}

// newClockLog starts the log of clocks, each enabled at its on time with
// its period (the nominal one when not set).
func newClockLog(clocks []cpuClock, nominal uint64) *clockLog {
	l := &clockLog{nominal: nominal, epoch: time.Now(), off: math.Inf(1)}
	if len(clocks) > 0 {
		l.epoch = clocks[0].on
	}
	for _, c := range clocks {
		on, v := l.ns(c.on), c.period
		if v == 0 {
			v = nominal
		}
		l.runs = append(l.runs, clockRun{on: on, since: on, period: float64(max(v, minClockPeriod))})
	}
	return l
}

func (l *clockLog) ns(t time.Time) float64 { return float64(t.Sub(l.epoch).Nanoseconds()) }

// restart records that clock i was restarted at t with period (ns).
func (l *clockLog) restart(i int, t time.Time, period uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.runs[i]
	x := l.ns(t)
	r.done += (x-r.since)/r.period - 0.5
	r.since, r.period = x, float64(max(period, minClockPeriod))
	l.restarts++
}

// close records that the clocks were closed at t.
func (l *clockLog) close(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.off = math.Min(l.off, l.ns(t))
}

// clockTotals are the CPU time the clocks covered (ns) and the fires
// expected of them, from their start.
type clockTotals struct{ cpu, fires float64 }

// sofar is the totals up to now (or to when the clocks were closed).
func (l *clockLog) sofar() clockTotals {
	if l == nil {
		return clockTotals{}
	}
	return l.totals(time.Now())
}

// totals is the totals up to t (or to when the clocks were closed), t no
// earlier than the last restart.
func (l *clockLog) totals(t time.Time) clockTotals {
	var tot clockTotals
	l.mu.Lock()
	defer l.mu.Unlock()
	x := math.Min(l.ns(t), l.off)
	for _, r := range l.runs {
		if x <= r.on {
			continue
		}
		tot.cpu += x - r.on
		tot.fires += r.done + (x-r.since)/r.period - 0.5
	}
	return tot
}

// meanPeriod is the CPU time one sample stands for between the totals
// from and to (ns): the nominal period when too little was covered to
// tell.
func (l *clockLog) meanPeriod(from, to clockTotals) float64 {
	if l == nil {
		return 0
	}
	if f := to.fires - from.fires; f >= 1 {
		return (to.cpu - from.cpu) / f
	}
	return float64(l.nominal)
}

// ditherer restarts a set of cpu-clock events with random periods after
// random waits, until Stop.
type ditherer struct {
	stop chan struct{}
	done sync.WaitGroup
}

// startDither starts dithering the periods of clocks with the draws dr,
// recording each restart in log.
func startDither(clocks []cpuClock, log *clockLog, dr draws) *ditherer {
	d := &ditherer{stop: make(chan struct{})}
	d.done.Add(1)
	go func() {
		defer d.done.Done()
		d.loop(clocks, log, dr)
	}()
	return d
}

// loop waits, restarts every clock, and again, until stopped. A round
// gives every clock the same period: the profile has one period for the
// samples of every CPU, and with a period drawn per clock a target on one
// CPU would get that CPU's realized rate, which over a few hundred runs
// strays a few percent from the mean of all (a CPU-bound target read 6%
// high once). A restart is dated at the middle of its system call; one
// that fails leaves the clock on its current run.
func (d *ditherer) loop(clocks []cpuClock, log *clockLog, dr draws) {
	var round time.Duration
	for {
		wait := max(dr.waitFor(rand.Float64()), roundShare*round)
		t := time.NewTimer(wait)
		select {
		case <-d.stop:
			t.Stop()
			return
		case <-t.C:
		}
		start := time.Now()
		v := dr.period(rand.Float64())
		for i, c := range clocks {
			t0 := time.Now()
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(c.fd), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&v)))
			t1 := time.Now()
			if e == 0 {
				log.restart(i, t0.Add(t1.Sub(t0)/2), v)
			}
		}
		round = time.Since(start)
	}
}

// Stop ends the restarts and waits for the last one; safe on nil and more
// than once.
func (d *ditherer) Stop() {
	if d == nil {
		return
	}
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	d.done.Wait()
}

// startClocks opens the sampling clocks, starts their log and, unless
// FixedPeriod, dithers their periods: each clock's first period is drawn
// too, or the first run, at the nominal period for a whole wait, would
// lock to a program periodic at the rate for its ~W samples.
func (s *Session) startClocks() error {
	p := clockPeriod(s.cfg.Frequency)
	dr := drawsFor(p)
	var first func() uint64
	if !s.cfg.FixedPeriod {
		v := dr.period(rand.Float64()) // the same for every CPU (see loop)
		first = func() uint64 { return v }
	}
	clocks, err := openCPUClocks(s.objs.SampleCpu, s.cfg.Frequency, first)
	if err != nil {
		return err
	}
	s.clocks = clocks
	s.clockLog = newClockLog(clocks, p)
	if !s.cfg.FixedPeriod {
		s.dither = startDither(clocks, s.clockLog, dr)
	}
	return nil
}

// stopClocks stops the dithering and closes the clocks; safe more than
// once.
func (s *Session) stopClocks() {
	s.dither.Stop()
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	if s.clocks == nil {
		return
	}
	closeCPUClocks(s.clocks)
	s.clockLog.close(time.Now())
	s.clocks = nil
}

// period is the CPU time one sample of the current window stands for, in
// ns, from the clocks' log.
func (s *Session) period() float64 {
	return s.clockLog.meanPeriod(s.periodBase, s.clockLog.sofar())
}
