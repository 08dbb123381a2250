package loader

import (
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestWindowedCounting runs short windows (1 ms) over a function whose calls
// last 2 ms: only calls entering inside a window are counted, each with its
// whole duration (the exit stays until it returns), and calls entering
// between windows are neither counted nor orphans. Between windows the
// probes are detached and attached again, as under an overhead budget.
func TestWindowedCounting(t *testing.T) {
	bpftest.Require(t)
	g := testtarget.StartGated(t, timedBinary(t), "sleep2ms", "0") // calls forever
	pid := g.Pid()
	specs, err := ResolveUser(pid, "tp_sleep2ms", 1)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{PID: pid, Clock: Clock{Kind: ClockNS}, Windowed: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.DetachProbes()
	g.Release(t)
	const windows = 40
	var counted, nsSum uint64
	prev, err := s.Poll()
	if err != nil {
		t.Fatal(err)
	}
	var drains, attaches, detaches time.Duration
	for w := 0; w < windows; w++ {
		time.Sleep(7 * time.Millisecond)
		t0 := time.Now()
		if err := s.AttachProbes(); err != nil {
			t.Fatal(err)
		}
		attaches += time.Since(t0)
		// The window's bounds as seen from here bracket the kernel's: read
		// the clock before opening and after closing, so that open is an
		// upper bound of the time the flag was set (under emulation the
		// map updates take long enough to matter).
		opened := time.Now()
		if err := s.SetWindowOpen(true); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		if err := s.SetWindowOpen(false); err != nil {
			t.Fatal(err)
		}
		closed := time.Now()
		open := closed.Sub(opened)
		for {
			in, err := s.WindowInFlight()
			if err != nil {
				t.Fatal(err)
			}
			if in[0] == 0 {
				break
			}
			if in[0] < 0 {
				t.Fatalf("window %d: %d calls in flight", w, in[0])
			}
			if time.Since(closed) > time.Second {
				t.Fatalf("window %d: %d calls still in flight after 1 s", w, in[0])
			}
			time.Sleep(200 * time.Microsecond)
		}
		drains += time.Since(closed)
		p, err := s.Poll()
		if err != nil {
			t.Fatal(err)
		}
		d := p.Totals[0].Sub(prev.Totals[0])
		prev = p
		t1 := time.Now()
		s.DetachProbes()
		detaches += time.Since(t1)
		// Calls of 2 ms one after another: at most one entry per 2 ms
		// of open window, plus one.
		if most := 1 + uint64(open/(2*time.Millisecond)); d.Calls > most {
			t.Errorf("window %d: %d calls counted in %v open; at most %d can enter", w, d.Calls, open, most)
		}
		counted += d.Calls
		nsSum += d.NsSum
	}
	tot := prev.Totals[0]
	// Orphans: exits of calls that entered between the exit's attach and
	// the entry's (the exit is attached first), never counted.
	t.Logf("%d windows: %d calls counted, mean %.3f ms; orphans %d; mean attach %v, drain %v, detach %v",
		windows, counted, float64(nsSum)/float64(max(counted, 1))/1e6, tot.Orphans, attaches/windows, drains/windows, detaches/windows)
	if counted < windows/5 {
		t.Fatalf("%d calls counted in %d windows of 1 ms over a 2 ms function: want about half", counted, windows)
	}
	// Each counted call lasted its whole 2 ms (plus probe overhead): had
	// the exit been cut at the window's end, the mean would be below 1 ms.
	if mean := float64(nsSum) / float64(counted); mean < 2e6 || mean > 4e6 {
		t.Errorf("mean of the counted calls %.3f ms, want about 2 ms (whole calls)", mean/1e6)
	}
}
