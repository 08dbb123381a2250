package loader

import (
	"math"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestClockCheckSample: with the jiffies clock and CheckEvery 4 a random
// 1 in 4 getppid calls is also timed with the ns clock (a call under
// 1.8 us never raises the rate above that); with --validate's Exact, and
// with the other clocks, none is. The checked count is binomial(n, 1/4):
// asserted within 4.5 standard errors (a false alarm in 7e-6 of runs).
func TestClockCheckSample(t *testing.T) {
	bpftest.Require(t)
	const n, every = 64000, 4
	jiffies := Clock{Kind: ClockJiffies}
	for _, tc := range []struct {
		name    string
		opts    Options
		checked bool
	}{
		{"jiffies", Options{Clock: jiffies, CheckEvery: every}, true},
		{"jiffies-exact", Options{Clock: jiffies, Exact: true}, false},
		{"jiffies-off", Options{Clock: jiffies, CheckEvery: -1}, false},
		{"tick", Options{Clock: Clock{Kind: ClockTick, Tick: time.Millisecond}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := timeSysloop(t, tc.opts, mustSyscall(t, "getppid", SyscallRaw), "getppid", "64000")
			c := p.Totals[0]
			if c.Calls != n {
				t.Fatalf("calls %d, want %d", c.Calls, n)
			}
			ck := c.Check
			if !tc.checked {
				if ck.Calls != 0 {
					t.Fatalf("%d calls checked, want none", ck.Calls)
				}
				return
			}
			mu := float64(n) / every
			sd := math.Sqrt(mu * (1 - 1.0/every))
			if math.Abs(float64(ck.Calls)-mu) > 4.5*sd {
				t.Errorf("%d calls checked, want %.0f ± %.0f", ck.Calls, mu, 4.5*sd)
			}
			mean := float64(ck.Ns) / float64(ck.Calls)
			if !(mean > 0 && mean < 1e6) || ck.Ticks > ck.Calls || ck.TicksSq < ck.Ticks {
				t.Errorf("checked calls: %+v (mean %.0f ns)", ck, mean)
			}
			t.Logf("%d of %d calls checked, exact mean %.0f ns, %d jiffies crossed", ck.Calls, n, mean, ck.Ticks)
		})
	}
}

// TestClockCheckAdapts: calls of about 150 us (nanosleep of 100 us) cost
// the check nothing next to themselves, so after the first few checked
// calls every call is checked: of 1500 calls well over 500 are (at the
// default 1 in 64 it would be about 23).
func TestClockCheckAdapts(t *testing.T) {
	bpftest.Require(t)
	s, p := timeSysloop(t, Options{Clock: Clock{Kind: ClockJiffies}}, mustSyscall(t, "nanosleep", SyscallRaw), "nanosleep", "1500", "100")
	c := p.Totals[0]
	if c.Calls != 1500 {
		t.Fatalf("calls %d, want 1500", c.Calls)
	}
	t.Logf("%d of %d calls checked; now 1 in %v", c.Check.Calls, c.Calls, s.CheckEvery())
	if c.Check.Calls < 500 || s.CheckEvery()[0] != 1 {
		t.Errorf("%d of %d calls checked, now 1 in %v: want over 500, and every call", c.Check.Calls, c.Calls, s.CheckEvery())
	}
}
