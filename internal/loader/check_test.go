// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"math"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestClockCheckSample: with the jiffies clock, CheckEvery 1 checks every
// getppid call (the checked counters equal the others), and CheckEvery 4
// a random 1 in 4: binomial(n, 1/4), asserted within 4.5 standard errors
// (a false alarm in 7e-6 of runs) when the calls are short enough (under
// 0.9 us, a quarter of the 3.6 us where adaptCheck raises the rate, since
// the running mean it acts on varies) that the rate stays at 1 in 4; longer calls (emulated kernels)
// raise it, so only the lower bound holds. With --validate's Exact the
// sample is drawn the same way (it decides what jiffies reports); with the
// check off and with the other clocks, no call is checked.
func TestClockCheckSample(t *testing.T) {
	bpftest.Require(t)
	const n = 64000
	jiffies := Clock{Kind: ClockJiffies}
	for _, tc := range []struct {
		name  string
		opts  Options
		every int // 0: none checked
	}{
		{"jiffies-all", Options{Clock: jiffies, CheckEvery: 1}, 1},
		{"jiffies-1in4", Options{Clock: jiffies, CheckEvery: 4}, 4},
		{"jiffies-exact", Options{Clock: jiffies, Exact: true, CheckEvery: 4}, 4},
		{"jiffies-off", Options{Clock: jiffies, CheckEvery: -1}, 0},
		{"tick", Options{Clock: Clock{Kind: ClockTick, Tick: time.Millisecond}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p := timeSysloop(t, tc.opts, mustSyscall(t, "getppid", SyscallRaw), "getppid", "64000")
			c := p.Totals[0]
			if c.Calls != n {
				t.Fatalf("calls %d, want %d", c.Calls, n)
			}
			ck := c.Check
			switch tc.every {
			case 0:
				if ck.Calls != 0 {
					t.Fatalf("%d calls checked, want none", ck.Calls)
				}
				return
			case 1:
				if ck.Calls != n || ck.Ticks != c.Ticks || ck.TicksSq != c.TicksSq.Lo {
					t.Errorf("every call checked, yet checked %+v of %d calls, %d ticks", ck, c.Calls, c.Ticks)
				}
				// The calls longer than a tick (assistedMean): every one checked.
				if ck.LChk != ck.LCalls || ck.LTicks > c.Ticks || ck.LTicks < 2*ck.LCalls {
					t.Errorf("every call checked, yet the long calls' counts %+v of %d ticks", ck, c.Ticks)
				}
			default:
				mean := float64(ck.Ns) / float64(ck.Calls)
				mu := float64(n) / float64(tc.every)
				sd := math.Sqrt(mu * (1 - 1/float64(tc.every)))
				low, high := mu-4.5*sd, mu+4.5*sd
				// The rate is set from the running mean at each poll, which
				// may have passed the threshold (every*mean >= 100*checkCostNs,
				// 3.6 us at 1 in 2) while the final mean is lower: within a
				// factor of 4 of it, the rate may have risen.
				if 8*mean >= 100*checkCostNs {
					high = n
				}
				if float64(ck.Calls) < low || float64(ck.Calls) > high {
					t.Errorf("%d calls checked, want %.0f to %.0f (mean %.0f ns)", ck.Calls, low, high, mean)
				}
			}
			mean := float64(ck.Ns) / float64(ck.Calls)
			if !(mean > 0 && mean < 1e6) || ck.TicksSq < ck.Ticks {
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
