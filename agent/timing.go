package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/loader"
)

// timer times user functions and system calls continuously with one loader
// session, and turns the counters' increments over each window into an
// export.TimeWindow (n, sum c, sum c^2 per target: the counts report
// recomputes the intervals from; see export/merge.go).
type timer struct {
	s     *loader.Session
	last  []loader.Counters
	clock loader.Clock
	conf  float64
}

// startTimer resolves and attaches the targets for process pid (0: every
// process running the binaries; user targets then need a path).
func startTimer(users, syscalls []string, pid int, conf float64) (*timer, error) {
	var specs []loader.Spec
	for _, u := range users {
		s, err := loader.ResolveUser(pid, u, 64)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	for _, a := range syscalls {
		s, err := loader.ResolveSyscall(a, loader.SyscallAuto)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	if len(specs) == 0 {
		return nil, errors.New("no timing targets")
	}
	// The clocks `tickprof time` uses by default: exact ns for user
	// functions, jiffies for system calls alone.
	clk := loader.Clock{Kind: loader.ClockJiffies}
	if len(users) > 0 {
		clk = loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}
	}
	s, err := loader.Open(loader.Options{Clock: clk, PID: pid, NoRecords: true}, specs)
	if err != nil {
		return nil, err
	}
	t := &timer{s: s, last: make([]loader.Counters, len(s.Targets())), clock: s.Clock(), conf: conf}
	return t, nil
}

// window reads the counters and returns their increments since the last
// call as a time window over [start, end].
func (t *timer) window(start, end time.Time) (*export.TimeWindow, error) {
	p, err := t.s.Poll()
	if err != nil {
		return nil, err
	}
	w := &export.TimeWindow{Clock: t.clock.String(), Resolution: t.clock.Resolution(), Confidence: t.conf,
		Start: start, Duration: end.Sub(start)}
	for i, tg := range t.s.Targets() {
		inc := p.Totals[i].Sub(t.last[i])
		t.last[i] = p.Totals[i]
		if inc.TicksSq.Hi != 0 || inc.TicksSq.Lo > math.MaxInt64 {
			return nil, fmt.Errorf("sum of squared ticks of %s overflows in one window: use a shorter window", tg.Name)
		}
		w.Targets = append(w.Targets, export.TimeWindowTarget{Name: tg.Name, Binary: tg.Spec.File,
			Calls: inc.Calls, Ticks: inc.Ticks, TicksSq: inc.TicksSq.Lo})
	}
	return w, nil
}

func (t *timer) close() { t.s.Close() }
