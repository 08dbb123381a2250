package loader

import (
	"math"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestClockCheckSample: with the jiffies clock a random 1 in
// DefaultCheckEvery getppid calls is also timed with the ns clock; with
// --validate's Exact, and with the other clocks, none is. The checked
// count is binomial(n, 1/64): asserted within 4.5 standard errors (a
// false alarm in 7e-6 of runs).
func TestClockCheckSample(t *testing.T) {
	bpftest.Require(t)
	const n = 64000
	jiffies := Clock{Kind: ClockJiffies}
	for _, tc := range []struct {
		name    string
		opts    Options
		checked bool
	}{
		{"jiffies", Options{Clock: jiffies}, true},
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
			mu := float64(n) / DefaultCheckEvery
			sd := math.Sqrt(mu * (1 - 1.0/DefaultCheckEvery))
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
