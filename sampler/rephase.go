package sampler

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A cpu-clock event fires on a fixed grid of its period (the kernel's
// hrtimer is forwarded by whole periods), so a program whose work is
// periodic at a multiple of the sampling period is seen at the same phase
// every time and its shares are biased without bound. The perf_event
// interface has no per-sample jitter; its one knob is
// PERF_EVENT_IOC_PERIOD, which restarts the event's timer a full period
// after the call. The rephaser makes that call on every CPU at intervals
// drawn uniformly from [rephaseMin, rephaseMax] periods, so each run of
// samples starts at a new phase.
//
// A restart drops the part of the period that had elapsed: with restart
// times spread over more than one period that part is uniform, half a
// period on average, and Period corrects for it (restartPeriod).
// Samples between two restarts share a phase: for a program periodic at
// the sampling period they are correlated in runs of at most rephaseMax,
// and its shares' intervals are that much too narrow (design effect up to
// rephaseMax); other programs are unaffected.
const (
	rephaseMin = 4
	rephaseMax = 12
)

// rephaser restarts a set of cpu-clock events at random intervals.
type rephaser struct {
	stop     chan struct{}
	done     sync.WaitGroup
	restarts atomic.Int64 // rounds in which every event was restarted
}

// startRephase starts restarting clocks (period ns each) until Stop.
func startRephase(clocks []cpuClock, period uint64) *rephaser {
	r := &rephaser{stop: make(chan struct{})}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		for {
			wait := time.Duration(period)*time.Duration(rephaseMin) +
				time.Duration(rand.Int64N(int64(period)*(rephaseMax-rephaseMin)+1))
			t := time.NewTimer(wait)
			select {
			case <-r.stop:
				t.Stop()
				return
			case <-t.C:
			}
			ok := true
			for _, c := range clocks {
				v := period
				if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(c.fd), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&v))); e != 0 {
					ok = false
				}
			}
			if ok {
				r.restarts.Add(1)
			}
		}
	}()
	return r
}

// Stop ends the restarts and waits for the last one; safe on nil and more
// than once.
func (r *rephaser) Stop() {
	if r == nil {
		return
	}
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.done.Wait()
}

// count is the number of restart rounds so far (0 for nil).
func (r *rephaser) count() int64 {
	if r == nil {
		return 0
	}
	return r.restarts.Load()
}

// restartPeriod is the CPU time one sample stands for when each of the
// clocks (period ns) ran for span and was restarted n times: the clock
// sampled span - n*period/2 on average, and fired that over period times.
func restartPeriod(period float64, span time.Duration, n int64) float64 {
	t := float64(span.Nanoseconds())
	lost := float64(n) * period / 2
	if n <= 0 || t <= 0 || lost >= t/2 {
		return period
	}
	return period * t / (t - lost)
}

// period is the CPU time one sample of the current window (span long)
// stands for, in ns.
func (s *Session) period(span time.Duration) float64 {
	return restartPeriod(float64(clockPeriod(s.cfg.Frequency)), span, s.rephase.count()-s.restartBase)
}

// startClocks opens the sampling clocks and, unless FixedPhase, starts
// restarting them at random phases.
func (s *Session) startClocks() error {
	var err error
	if s.clocks, err = openCPUClocks(s.objs.SampleCpu, s.cfg.Frequency); err != nil {
		return err
	}
	if !s.cfg.FixedPhase {
		s.rephase = startRephase(s.clocks, clockPeriod(s.cfg.Frequency))
	}
	return nil
}
