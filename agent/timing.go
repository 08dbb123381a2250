package agent

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/timing"
)

// timer times user functions and system calls continuously with one
// timing session (targets resolved and attached as `tickprof time` does),
// and turns the counters' increments over each window into an
// export.TimeWindow (n, sum c, sum c^2 per target: the counts report
// recomputes the intervals from; see export/merge.go). It does not run the
// session's poll loop: each window's read is one batch.
type timer struct {
	ts    *timing.Session
	s     *loader.Session
	last  []loader.Counters
	clock loader.Clock
	conf  float64
}

// startTimer resolves and attaches the targets for process pid (0: every
// process running the binaries; user targets then need a path).
func startTimer(users, syscalls []string, pid int, conf float64, warn func(string)) (*timer, error) {
	if len(users)+len(syscalls) == 0 {
		return nil, errors.New("no timing targets")
	}
	ts, err := timing.Open(timing.Config{
		PID:       pid,
		Targets:   timing.Targets{Users: users, Syscalls: syscalls, MaxProbes: 64},
		Clock:     timing.DefaultClock(len(users) > 0, false),
		NoRecords: true,
		Warn:      warn,
	})
	if err != nil {
		return nil, err
	}
	s := ts.Loader()
	return &timer{ts: ts, s: s, last: make([]loader.Counters, len(s.Targets())), clock: s.Clock(), conf: conf}, nil
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

func (t *timer) close() { t.ts.Close() }
