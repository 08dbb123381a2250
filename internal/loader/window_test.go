// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// windowRun is what windows counted: calls, their summed ns, the orphans
// at the end, and the mean attach, drain and detach times.
type windowRun struct {
	counted, nsSum, orphans     uint64
	windows                     int
	attach, drain, detach, open time.Duration
}

// runWindows runs n windows of open length over s (detached between them,
// gap apart), as an overhead budget does: attach, open, close, wait until
// the counted calls returned, read, detach; it stops early at until (the
// target's end: emulated kernels run fewer windows in its time). perCall
// is the shortest call's length: no window may count more calls than can
// enter it.
func runWindows(t *testing.T, s *Session, n int, until time.Time, open, gap, perCall time.Duration) windowRun {
	t.Helper()
	var r windowRun
	prev, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	w := 0
	for ; w < n && time.Now().Before(until); w++ {
		time.Sleep(gap)
		t0 := time.Now()
		if err := s.AttachProbes(); err != nil {
			t.Fatal(err)
		}
		r.attach += time.Since(t0)
		// The window's bounds as seen from here bracket the kernel's: read
		// the clock before opening and after closing, so that the open
		// time is an upper bound of the time the flag was set.
		opened := time.Now()
		if err := s.SetWindowOpen(true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(open)
		if err := s.SetWindowOpen(false); err != nil {
			t.Fatal(err)
		}
		closed := time.Now()
		r.open += closed.Sub(opened)
		waitDrained(t, s, w)
		r.drain += time.Since(closed)
		p, err := s.Poll()
		if err != nil {
			t.Fatal(err)
		}
		d := p.Totals[0].Sub(prev.Totals[0])
		prev = p
		t1 := time.Now()
		s.DetachProbes()
		r.detach += time.Since(t1)
		if most := 1 + uint64(closed.Sub(opened)/perCall); d.Calls > most {
			t.Errorf("window %d: %d calls counted in %v open; at most %d can enter", w, d.Calls, closed.Sub(opened), most)
		}
		r.counted += d.Calls
		r.nsSum += d.NsSum
	}
	r.orphans = prev.Totals[0].Orphans
	r.windows = w
	k := time.Duration(max(w, 1))
	r.attach, r.drain, r.detach, r.open = r.attach/k, r.drain/k, r.detach/k, r.open/k
	t.Logf("%d windows (%s links): %d calls counted, mean %.3f ms; orphans %d; mean open %v, attach %v, drain %v, detach %v",
		w, s.LinkKind(), r.counted, float64(r.nsSum)/float64(max(r.counted, 1))/1e6, r.orphans, r.open, r.attach, r.drain, r.detach)
	return r
}

// waitDrained waits until window w's counted calls have all returned.
func waitDrained(t *testing.T, s *Session, w int) {
	t.Helper()
	start := time.Now()
	for {
		in, err := s.WindowInFlight()
		if err != nil {
			t.Fatal(err)
		}
		if in[0] == 0 {
			return
		}
		if in[0] < 0 {
			t.Fatalf("window %d: %d calls in flight", w, in[0])
		}
		if time.Since(start) > time.Second {
			t.Fatalf("window %d: %d calls still in flight after 1 s", w, in[0])
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// checkWholeCalls checks that about the share of 2 ms calls that can enter
// 1 ms windows was counted, each with its whole duration: had the exit been
// cut at the window's end, the mean would be below 1 ms. (Under software
// CPU emulation, the kernel matrix, a 2 ms sleep lasts several: only the
// lower bound is checked there.)
func checkWholeCalls(t *testing.T, r windowRun) {
	t.Helper()
	if r.counted < uint64(r.windows/5) {
		t.Fatalf("%d calls counted in %d windows of 1 ms over a 2 ms call: want about half", r.counted, r.windows)
	}
	mean := float64(r.nsSum) / float64(r.counted)
	if mean < 2e6 || (mean > 4e6 && os.Getenv("TICKPROF_IN_MATRIX") != "1") {
		t.Errorf("mean of the counted calls %.3f ms, want about 2 ms (whole calls)", mean/1e6)
	}
}

// TestWindowedCounting runs short windows (1 ms) over a function whose calls
// last 2 ms: only calls entering inside a window are counted, each with its
// whole duration (the exit stays until it returns), and calls entering
// between windows are neither counted nor orphans. Between windows the
// probes are detached and attached again, as under an overhead budget:
// with multi-uprobe links where the kernel has them (Linux 6.6+; the window
// flag is a map the multi-link programs share) and with single links.
func TestWindowedCounting(t *testing.T) {
	bpftest.Require(t)
	for _, single := range []bool{false, true} {
		name := map[bool]string{false: "multi", true: "single"}[single]
		t.Run(name, func(t *testing.T) {
			if !single {
				if err := HaveUprobeMulti(); err != nil {
					t.Skipf("this kernel has no multi-uprobe links (Linux 6.6+): %v", err)
				}
			}
			g := testtarget.StartGated(t, timedBinary(t), "sleep2ms", "0") // calls forever
			pid := g.Pid()
			specs, err := ResolveUser(pid, "tp_sleep2ms", 1)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(Options{PID: pid, Clock: Clock{Kind: ClockNS}, Windowed: true, SingleLinks: single}, specs)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.LinkKind() != name {
				t.Fatalf("windowed session attached %q links, want %q", s.LinkKind(), name)
			}
			s.DetachProbes()
			g.Release(t)
			forever := time.Now().Add(time.Hour)
			checkWholeCalls(t, runWindows(t, s, 40, forever, time.Millisecond, 7*time.Millisecond, 2*time.Millisecond))
		})
	}
}

// TestWindowedSyscall is TestWindowedCounting for a system call (nanosleep
// of 2 ms) on raw tracepoints, linked again window by window: the window
// flag gates the entries in BPF.
func TestWindowedSyscall(t *testing.T) {
	bpftest.Require(t)
	p := testtarget.Start(t, exec.Command(sysloopBinary(t), "nanosleep", "100000", "2000"), testtarget.ReadyPrefix, nil)
	s, err := Open(Options{PID: p.Pid(), Clock: Clock{Kind: ClockNS}, Windowed: true}, mustSyscall(t, "nanosleep", SyscallRaw))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.DetachProbes()
	p.Release(t)
	r := runWindows(t, s, 40, time.Now().Add(time.Hour), time.Millisecond, 7*time.Millisecond, 2*time.Millisecond)
	checkWholeCalls(t, r)
	if r.orphans != 0 {
		t.Errorf("%d orphans: calls entering between windows must pair without counting", r.orphans)
	}
}

// TestWindowedGo runs windows over a Go function (testdata/go/timed's
// Work, on 64 goroutines that move between threads) with its entry and RET
// probes linked again window by window: every counted call returns (the
// calls in flight drain to zero after each window), entries pushed between
// windows and left without their RET are neither orphans nor in flight,
// and the counted calls' mean agrees with the target's own mean of all its
// calls (within a factor of 2, 4 in the matrix: Work's length varies with the token bursts,
// and the probes add their cost to the counted calls).
func TestWindowedGo(t *testing.T) {
	bpftest.Require(t)
	bin := buildGoTarget(t)
	cmd := exec.Command(bin, "-calls", "1", "-for", "5s")
	cmd.Stderr = os.Stderr
	proc := testtarget.Start(t, cmd, func(l string) bool { return l == "ready" }, nil)
	specs, err := ResolveUser(cmd.Process.Pid, "main.Work", 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{PID: cmd.Process.Pid, Clock: Clock{Kind: ClockNS}, Windowed: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.DetachProbes()
	proc.Release(t)
	r := runWindows(t, s, 30, time.Now().Add(4*time.Second), 5*time.Millisecond, 20*time.Millisecond, time.Microsecond)
	lines, err := proc.Wait(t, 60*time.Second, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("target failed: %v", err)
	}
	own := goOwnMean(t, lines)
	mean := float64(r.nsSum) / float64(max(r.counted, 1))
	t.Logf("Work: counted mean %.0f us, the target's own mean %.0f us", mean/1e3, own/1e3)
	if r.windows < 5 || r.counted < uint64(r.windows) {
		t.Fatalf("%d calls counted in %d windows of 5 ms", r.counted, r.windows)
	}
	if r.orphans != 0 {
		t.Errorf("%d orphans: entries left between windows must be neither counted nor orphans", r.orphans)
	}
	// A factor of 2 on hardware. In the kernel matrix's TCG guests each
	// probe hit costs tens of microseconds and a loaded host preempts the
	// guest for whole milliseconds inside calls, which lengthens the calls
	// the windows count more than the target's own (mostly unprobed) ones:
	// 120 ms against 57 ms was seen there, so the bound is a factor of 4.
	factor := 2.0
	if os.Getenv("TICKPROF_IN_MATRIX") == "1" {
		factor = 4
	}
	if mean < own/factor || mean > factor*own {
		t.Errorf("counted mean %.0f ns, the target's own %.0f ns: want within a factor of %g", mean, own, factor)
	}
}

// goOwnMean reads Work's own mean (ns) from the Go target's output.
func goOwnMean(t *testing.T, lines []string) float64 {
	t.Helper()
	for _, l := range lines {
		if !strings.HasPrefix(l, "Work ") {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "mean_ns="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
		}
	}
	t.Fatalf("no Work line in %q", lines)
	return 0
}
