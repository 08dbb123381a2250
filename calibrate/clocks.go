// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/bpf"
	"github.com/tickprof/tickprof/estimate"
)

// calReads is CAL_READS in bpf/calib.bpf.c: clock reads per cal_reads_* run.
const calReads = 1000

// Probes are the loaded calibration programs (bpf/calib.bpf.c).
type Probes struct {
	objs bpf.CalibObjects
}

// LoadProbes loads the calibration programs. Close them when done.
func LoadProbes() (*Probes, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raise the memlock limit: %w", err)
	}
	p := &Probes{}
	spec, err := bpf.LoadCalib()
	if err != nil {
		return nil, fmt.Errorf("load the calibration programs: %w", err)
	}
	if err := bpf.Load(spec, &p.objs, "the calibration programs"); err != nil {
		return nil, err
	}
	return p, nil
}

// Close releases the programs.
func (p *Probes) Close() error { return p.objs.Close() }

// Objects returns the loaded objects (the empty floor programs are in it).
func (p *Probes) Objects() *bpf.CalibObjects { return &p.objs }

// edges runs one cal_edges_* program and returns the changes it saw:
// values v[k] and the ns times t[k].
func (p *Probes) edges(prog *ebpf.Program) (v, t []uint64, err error) {
	if _, err := prog.Run(&ebpf.RunOptions{}); err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", prog, err)
	}
	var n uint32
	var vs, ts [33]uint64
	if err := p.objs.CalN.Get(&n); err != nil {
		return nil, nil, fmt.Errorf("read the edges: %w", err)
	}
	if err := p.objs.CalV.Get(&vs); err != nil {
		return nil, nil, fmt.Errorf("read the edges: %w", err)
	}
	if err := p.objs.CalT.Get(&ts); err != nil {
		return nil, nil, fmt.Errorf("read the edges: %w", err)
	}
	if int(n) > len(vs) {
		n = uint32(len(vs))
	}
	return vs[:n], ts[:n], nil
}

// resolutionAcc accumulates the slides' min/mean/max.
type resolutionAcc struct {
	r                  ClockResolution
	incSum, periodSum  float64
	incSeen, perioSeen int
	periods            []float64
}

func newAcc(clock, where string) *resolutionAcc {
	return &resolutionAcc{r: ClockResolution{Clock: clock, Where: where,
		IncMinNs: math.Inf(1), PeriodMinNs: math.Inf(1)}}
}

// add records one change: increment inc ns, after period ns since the
// previous change (period < 0: the previous change was not seen).
func (a *resolutionAcc) add(inc, period float64) {
	a.incSeen++
	a.incSum += inc
	a.r.IncMinNs = math.Min(a.r.IncMinNs, inc)
	a.r.IncMaxNs = math.Max(a.r.IncMaxNs, inc)
	if period >= 0 {
		a.perioSeen++
		a.periodSum += period
		a.periods = append(a.periods, period)
		a.r.PeriodMinNs = math.Min(a.r.PeriodMinNs, period)
		a.r.PeriodMaxNs = math.Max(a.r.PeriodMaxNs, period)
	}
}

func (a *resolutionAcc) result() (ClockResolution, error) {
	if a.incSeen == 0 || a.perioSeen == 0 {
		return ClockResolution{}, fmt.Errorf("clock %s never changed while read", a.r.Clock)
	}
	a.r.Changes = a.incSeen
	a.r.IncMeanNs = a.incSum / float64(a.incSeen)
	a.r.PeriodMeanNs = a.periodSum / float64(a.perioSeen)
	a.r.PeriodLowNs, a.r.PeriodHighNs = a.r.PeriodMeanNs, a.r.PeriodMeanNs
	a.r.Confidence = 0.95
	if m, err := estimate.MeanOfSamples(a.periods, estimate.Options{Confidence: 0.95}); err == nil {
		a.r.PeriodLowNs, a.r.PeriodHighNs = m.Low, m.High
	}
	return a.r, nil
}

// MeasureJiffies measures the jiffies clock in BPF: at least changes
// changes of bpf_jiffies64, each increment converted to ns with the mean
// period (the jiffy has no ns value of its own).
func (p *Probes) MeasureJiffies(changes int) (ClockResolution, error) {
	a := newAcc("jiffies", "bpf")
	var incs []float64
	for a.incSeen < changes {
		v, t, err := p.edges(p.objs.CalEdgesJiffies)
		if err != nil {
			return ClockResolution{}, err
		}
		if len(v) < 2 {
			return ClockResolution{}, errors.New("jiffies did not advance while read in BPF: is the kernel tick running?")
		}
		for k := 1; k < len(v); k++ {
			incs = append(incs, float64(v[k]-v[k-1]))
			a.add(0, float64(t[k]-t[k-1]))
		}
	}
	r, err := a.result()
	if err != nil {
		return r, err
	}
	// One jiffy is the mean period per unit of increment.
	var units float64
	for _, u := range incs {
		units += u
	}
	perUnit := a.periodSum / units
	r.IncMinNs, r.IncMaxNs = math.Inf(1), 0
	for _, u := range incs {
		r.IncMinNs = math.Min(r.IncMinNs, u*perUnit)
		r.IncMaxNs = math.Max(r.IncMaxNs, u*perUnit)
	}
	r.IncMeanNs = perUnit * units / float64(len(incs))
	return r, nil
}

// MeasureTick measures the tick:d clock (bpf_ktime_get_ns()/d) in BPF.
func (p *Probes) MeasureTick(d time.Duration, changes int) (ClockResolution, error) {
	if d < time.Microsecond || d > time.Second {
		return ClockResolution{}, fmt.Errorf("tick %s: want between 1us and 1s", d)
	}
	if err := p.objs.CalTickNs.Set(uint64(d)); err != nil {
		return ClockResolution{}, fmt.Errorf("set the tick: %w", err)
	}
	return p.measureBPF("tick:"+d.String(), p.objs.CalEdgesTick, float64(d), changes)
}

// MeasureNS measures the ns clock (bpf_ktime_get_ns) in BPF: its smallest
// observable increment, which is the cost of a read in a loop.
func (p *Probes) MeasureNS(changes int) (ClockResolution, error) {
	return p.measureBPF("ns", p.objs.CalEdgesNs, 1, changes)
}

func (p *Probes) measureBPF(name string, prog *ebpf.Program, unit float64, changes int) (ClockResolution, error) {
	a := newAcc(name, "bpf")
	for a.incSeen < changes {
		v, t, err := p.edges(prog)
		if err != nil {
			return ClockResolution{}, err
		}
		if len(v) < 2 {
			return ClockResolution{}, fmt.Errorf("clock %s did not advance while read in BPF", name)
		}
		for k := 1; k < len(v); k++ {
			a.add(float64(v[k]-v[k-1])*unit, float64(t[k]-t[k-1]))
		}
	}
	return a.result()
}

// MeasureUserClock measures a clock_gettime clock from user space by the
// same method (seed 002's program, with clock_gettime for clock()).
func MeasureUserClock(name string, id int32, changes int) (ClockResolution, error) {
	a := newAcc("user:"+name, "user")
	read := func() (float64, error) {
		var ts unix.Timespec
		if err := unix.ClockGettime(id, &ts); err != nil {
			return 0, fmt.Errorf("clock_gettime(%s): %w", name, err)
		}
		return float64(ts.Nano()), nil
	}
	mono := func() float64 {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		return float64(ts.Nano())
	}
	last, err := read()
	if err != nil {
		return ClockResolution{}, err
	}
	prevT := -1.0
	deadline := time.Now().Add(2 * time.Second)
	for a.incSeen < changes && time.Now().Before(deadline) {
		v, _ := read()
		if v == last {
			continue
		}
		t := mono()
		period := -1.0
		if prevT >= 0 {
			period = t - prevT
		}
		a.add(v-last, period)
		last, prevT = v, t
	}
	return a.result()
}

// ClockCosts measures the cost of one bpf_jiffies64 and one
// bpf_ktime_get_ns read with run-time statistics: batches of runs of
// programs that read the clock CAL_READS times, less a program that reads
// nothing; the batches give the interval (Student t, 95%).
func (p *Probes) ClockCosts(batches, runs int) ([]ClockCost, error) {
	st, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		return nil, fmt.Errorf("enable BPF run-time statistics: %w", err)
	}
	defer st.Close()
	perRun := func(prog *ebpf.Program) (float64, error) {
		before, err := prog.Stats()
		if err != nil {
			return 0, fmt.Errorf("read the statistics of %s: %w", prog, err)
		}
		for i := 0; i < runs; i++ {
			if _, err := prog.Run(&ebpf.RunOptions{}); err != nil {
				return 0, fmt.Errorf("run %s: %w", prog, err)
			}
		}
		after, err := prog.Stats()
		if err != nil {
			return 0, fmt.Errorf("read the statistics of %s: %w", prog, err)
		}
		cnt := after.RunCount - before.RunCount
		if cnt == 0 {
			return 0, fmt.Errorf("%s: no runs counted (BPF statistics unavailable)", prog)
		}
		return float64(after.Runtime-before.Runtime) / float64(cnt), nil
	}
	helpers := []struct {
		helper string
		prog   *ebpf.Program
	}{{"bpf_jiffies64", p.objs.CalReadsJiffies}, {"bpf_ktime_get_ns", p.objs.CalReadsKtime}}
	per := make([][]float64, len(helpers))
	for b := 0; b < batches; b++ {
		none, err := perRun(p.objs.CalReadsNone)
		if err != nil {
			return nil, err
		}
		for i, h := range helpers {
			t, err := perRun(h.prog)
			if err != nil {
				return nil, err
			}
			per[i] = append(per[i], (t-none)/calReads)
		}
	}
	var out []ClockCost
	for i, h := range helpers {
		m, err := estimate.MeanOfSamples(per[i], estimate.Options{Confidence: 0.95})
		if err != nil {
			return nil, fmt.Errorf("clock-read cost of %s: %w", h.helper, err)
		}
		out = append(out, ClockCost{Helper: h.helper, NsPerRead: m.Mean, LowNs: m.Low, HighNs: m.High,
			Confidence: m.Confidence, Reads: uint64(batches*runs) * calReads})
	}
	return out, nil
}
