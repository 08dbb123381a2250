// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// This file times targets that keep time with the clock
// (testdata/c/coupled.c and a getppid loop timed with a fine tick), where
// a fixed-grid clock is biased. The dithered tick:DUR clock (a random
// grid phase per call, bpf/timing.h tp_phase) must cover the exact mean of
// the same calls in every run; the jiffies clock, which cannot be
// dithered, must cover or warn (its clock check, Options.CheckEvery).

// hostOnly skips the clock-coupling tests in the kernel matrix's guests:
// they measure how programs meet the scheduler tick, not a kernel path,
// and one emulated CPU runs them too slowly for the guest's time limit.
func hostOnly(t *testing.T) {
	t.Helper()
	if os.Getenv(testtarget.EnvTestBin) != "" {
		t.Skip("clock-coupling tests run on the host only (they test the clocks, not a kernel path)")
	}
}

// coupledBinary returns testdata/c/coupled.c built.
func coupledBinary(t testing.TB) string {
	t.Helper()
	return testtarget.C(t, "c/coupled.c", "coupled", "-fno-omit-frame-pointer", "-pthread")
}

// runCoupled starts coupled with args (under the normal scheduler: the
// coupling comes from it), times sym with opts, polling every 25 ms into
// batches, and returns the session, the final poll and the target's own
// mean of the function (clock_gettime inside it).
func runCoupled(t *testing.T, opts Options, sym string, args ...string) (*Session, Poll, float64) {
	t.Helper()
	p := testtarget.Start(t, exec.Command(coupledBinary(t), append([]string{"-g"}, args...)...), testtarget.ReadyPrefix, nil)
	pid := p.Pid()
	specs, err := ResolveUser(pid, sym, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := openFor(t, opts, pid, specs)
	p.Release(t)
	lines, err := pollUntilExit(t, p, s)
	if err != nil {
		t.Fatalf("coupled %v: %v", args, err)
	}
	s.Stop()
	poll, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	_, inner := parseLine(t, testtarget.LastLine(lines))
	return s, poll, inner
}

// coverRuns runs run k times and fails when more than allowed runs miss.
func coverRuns(t *testing.T, k, allowed int, what string, run func(i int) bool) {
	t.Helper()
	missed := 0
	for i := 0; i < k; i++ {
		if !run(i) {
			missed++
		}
	}
	t.Logf("%s: %d of %d runs covered", what, k-missed, k)
	if missed > allowed {
		t.Errorf("%s: %d of %d runs missed, at most %d allowed", what, missed, k, allowed)
	}
}

// ditheredConfidence is the confidence of ditheredCovers' interval: an
// honest interval misses in 0.01% of runs, so a test of k runs that
// allows none fails by chance in about k/10,000 (0.03% for the 3 runs of
// each test here; at 99.9% it was 0.3%, over a CI run's share). The
// biases the tests guard against (a fixed grid: 3.5 ms reported for
// 150 us, -7 to -16% in a burst) lie far outside it.
const ditheredConfidence = 0.9999

// ditheredCovers times with the dithered tick clock and the ns clock on
// every call and reports whether the ditheredConfidence tick interval
// holds the exact mean of the same calls.
func ditheredCovers(t *testing.T, tick time.Duration, run func(Options) (*Session, Poll)) bool {
	t.Helper()
	s, p := run(Options{Clock: Clock{Kind: ClockTick, Tick: tick}, Exact: true})
	r, ns := tickIntervalAt(t, s, p, 0, ditheredConfidence)
	ok := r.Low <= ns && ns <= r.High
	t.Logf("tick:%v: %.0f ns [%.0f, %.0f] (%g%%, %s, %d calls) vs exact %.0f ns: covered %v",
		tick, r.Mean, r.Low, r.High, 100*ditheredConfidence, r.Method, p.Totals[0].Calls, ns, ok)
	return ok
}

// jiffiesCoversOrWarns reports whether the jiffies run's 95% interval
// holds truth, or its clock check (the defaults) warns: it disagrees, or
// it is much less sharp than the estimate (estimate.ClockCheck.Resolves;
// the table then says what it rules out).
func jiffiesCoversOrWarns(t *testing.T, truth float64, s *Session, p Poll) bool {
	t.Helper()
	clk := s.Clock()
	ec, _ := EstimatorCounts(clk, p.Totals[0], s.Batches(0))
	r, err := estimate.Time(ec, estimate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	covered := r.Low <= truth && truth <= r.High
	ck := ClockCheck(clk, p.Totals[0], s.Batches(0), estimate.Options{})
	warned, state := false, "no call checked"
	if ck != nil {
		warned = !ck.Agree || !ck.Resolves(r)
		state = "agrees"
		switch {
		case !ck.Agree:
			state = "DISAGREES"
		case !ck.Resolves(r):
			state = "agrees, less sharp than the estimate (the table notes it)"
		}
		state += " (" + ckString(ck) + ")"
	}
	t.Logf("jiffies: %.0f ns [%.0f, %.0f] (95%%, %d calls) vs %.0f ns: covered %v; check %s",
		r.Mean, r.Low, r.High, p.Totals[0].Calls, truth, covered, state)
	return covered || warned
}

func ckString(c *estimate.ClockCheck) string {
	return time.Duration(c.Tick.Mean).String() + " [" + time.Duration(c.Tick.Low).String() + ", " +
		time.Duration(c.Tick.High).String() + "] on " + itoa(c.Calls) + " calls vs exact " + time.Duration(c.Exact).String()
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestCoupledPhaseLockedLoop: a loop that sleeps to the next 4 ms boundary
// and runs 100 us. A fixed 4 ms grid sees nearly every call cross a tick
// (the issue measured 3.5 ms reported for ~150 us). tick:4ms, dithered,
// must cover in all of 3 runs; jiffies must cover or warn in all of 3
// (its check starts at 1 call in 64 and checks every call once a few
// checked calls show they last 100 us: from then on it is as sharp as the
// estimate).
func TestCoupledPhaseLockedLoop(t *testing.T) {
	bpftest.Require(t)
	hostOnly(t)
	run := func(o Options) (*Session, Poll) {
		s, p, _ := runCoupled(t, o, "tp_pll_work", "pll", "400")
		return s, p
	}
	coverRuns(t, 3, 0, "pll tick:4ms", func(int) bool { return ditheredCovers(t, 4*time.Millisecond, run) })
	coverRuns(t, 3, 0, "pll jiffies", func(int) bool {
		s, p, inner := runCoupled(t, Options{Clock: Clock{Kind: ClockJiffies}}, "tp_pll_work", "pll", "400")
		return jiffiesCoversOrWarns(t, inner, s, p)
	})
}

// TestCoupledBurstWithHogs: 8 threads released together at a barrier,
// each spinning 1 ms, with 2 CPU hogs on this 2-CPU machine: the released
// threads wait behind the hogs and start when the scheduler tick preempts
// one (the issue measured 47 of 74 runs covered, bias -7 to -16%, with
// jiffies and with an undithered tick:4ms). Dithered tick:4ms must cover
// in all of 3 runs; jiffies must cover or warn in 2 of 3. The bias sits at
// the interval's edge here (docs/design.md: "inside both the interval and the
// check at these run lengths"), and the check sees about 1,100 of the 1,200
// calls (the first at 1 in 64), so a run can miss by a percent while the
// check, on its calls, agrees: 4 of 90 runs under load, 1 of 3 in a quiet
// run. With p = 0.05 a run, 2 of 3 fail by chance with probability 3p^2,
// about 0.7%. TestCoupledPhaseLockedLoop is the one that fails when the
// check does not warn (jiffies missed there in 24 of 24 runs, all warned).
func TestCoupledBurstWithHogs(t *testing.T) {
	bpftest.Require(t)
	hostOnly(t)
	args := []string{"burst", "8", "150", "1000", "2"}
	run := func(o Options) (*Session, Poll) {
		s, p, _ := runCoupled(t, o, "tp_burst_work", args...)
		return s, p
	}
	coverRuns(t, 3, 0, "burst tick:4ms", func(int) bool { return ditheredCovers(t, 4*time.Millisecond, run) })
	coverRuns(t, 3, 1, "burst jiffies", func(int) bool {
		s, p, inner := runCoupled(t, Options{Clock: Clock{Kind: ClockJiffies}}, "tp_burst_work", args...)
		return jiffiesCoversOrWarns(t, inner, s, p)
	})
}

// TestCoupledFineTickProbe: getppid timed with tick:1us. The probe does
// more work on a call that crosses a tick (a record), which on a fixed
// grid shifts the next call's phase (the issue measured 394 ns reported
// for 192 ns); dithered, the interval must cover in all of 3 runs.
func TestCoupledFineTickProbe(t *testing.T) {
	bpftest.Require(t)
	hostOnly(t)
	run := func(o Options) (*Session, Poll) {
		return timeSysloop(t, o, mustSyscall(t, "getppid", SyscallRaw), "getppid", "200000")
	}
	coverRuns(t, 3, 0, "getppid tick:1us", func(int) bool { return ditheredCovers(t, time.Microsecond, run) })
}
