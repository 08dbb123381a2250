package sampler

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// firesCheck is one session's fires: seen by the BPF program, expected by
// the clock log, and the tolerance on their difference.
type firesCheck struct {
	seen, expected, tol float64
	restarts            int64
}

func (c firesCheck) ok() bool { return math.Abs(c.seen-c.expected) <= c.tol }

// runFires runs a 2 s session at hz and compares the fires the BPF program
// saw (Seen: every fire runs it) with those the clock log expected, within
// the rounding of each run (a uniform fraction: variance 1/12 a run; 4
// standard deviations) plus 1% of the fires for the few the kernel skips
// (a fire is skipped when the timer interrupt comes more than a period
// late).
func runFires(t *testing.T, hz int, fixed bool) firesCheck {
	t.Helper()
	s, err := Open(context.Background(), Config{Frequency: hz, FixedPeriod: fixed,
		Command: []string{"sleep", "2"}, Stdout: io.Discard, FramePointersOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := s.clockLog.sofar()
	c := firesCheck{seen: float64(res.Stats.Seen), expected: got.fires, restarts: s.clockLog.restarts}
	c.tol = 4*math.Sqrt(float64(c.restarts+int64(len(s.clockLog.runs)))/12) + 0.01*got.fires
	t.Logf("%d Hz fixed=%v: %d restarts; %.0f fires seen by the BPF program, %.1f expected (%+.2f%%); mean period %.1f us (nominal %.1f us)",
		hz, fixed, c.restarts, c.seen, c.expected, 100*(c.seen/c.expected-1), res.Stats.Period/1e3, float64(clockPeriod(hz))/1e3)
	if d := time.Duration(res.Profile.Period); fixed && d != time.Duration(math.Round(res.Stats.Period)) {
		t.Errorf("profile period %v, stats %v", d, res.Stats.Period)
	}
	return c
}

// TestDitherExpectedFires checks the clock log against the kernel: over a
// session with dithered periods the fires the BPF program counted must
// match those the log expected (runFires). The kernel itself skips fires
// when the timer interrupts come late, which on a loaded virtual machine
// can be a third of them; so each dithered session is bracketed by two at
// the fixed period, whose log is exact (no restarts), and when either
// misses its count the machine is dropping fires and the test skips.
func TestDitherExpectedFires(t *testing.T) {
	bpftest.Require(t)
	for _, hz := range []int{999, 4999} {
		before := runFires(t, hz, true)
		got := runFires(t, hz, false)
		after := runFires(t, hz, true)
		if !before.ok() || !after.ok() {
			t.Skipf("%d Hz: the kernel skipped fires of the fixed-period clocks (%.0f and %.0f seen, %.0f and %.0f expected): the machine's timer interrupts come too late to check the log",
				hz, before.seen, after.seen, before.expected, after.expected)
		}
		if !got.ok() {
			t.Errorf("%d Hz dithered: the BPF program saw %.0f fires, the clock log expected %.1f ± %.1f", hz, got.seen, got.expected, got.tol)
		}
	}
}
