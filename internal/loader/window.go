package loader

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf/link"
)

// Timing in windows (an overhead budget): the probes are attached only in
// time windows. In a windowed session (Options.Windowed) the entry program
// counts a call only while the window is open; a call entering otherwise is
// still pushed, flagged, so that its exit pairs, and is not counted. The
// window flag is a map (tp_window) shared with every object the session
// loads (LoadShared), so the multi-uprobe, Go, syscall and kernel-function
// programs see the same window; windows attach multi-uprobe links where the
// kernel has them (Linux 6.6+: one link per binary and side, one grace
// period to detach) and single links elsewhere; kernel functions attach
// their kprobes or fentry/fexit programs again (a tracing program can be
// linked again once its link is closed). A window is run as:
//
//	AttachProbes; SetWindowOpen(true); ... ; SetWindowOpen(false);
//	wait until WindowInFlight is all zero (the counted calls returned); Poll;
//	DetachProbes
//
// which counts exactly the calls whose entry fell in the window, each with
// its whole duration (estimate.WindowedTime explains why that is unbiased).

// boolU32 is a BPF boolean.
func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// linkProbes runs attach, which links one kind's programs (already loaded)
// to their probe sites, and keeps it in windowed sessions so that
// AttachProbes links them again without loading anything.
func (s *Session) linkProbes(attach func() error) error {
	if s.opts.Windowed {
		s.relinks = append(s.relinks, attach)
	}
	return attach()
}

// SetWindowOpen opens or closes the window of a windowed session: while it
// is open, entering calls are counted.
func (s *Session) SetWindowOpen(open bool) error {
	if !s.opts.Windowed {
		return errors.New("the session is not windowed")
	}
	if err := s.objs.TpWindow.Put(uint32(0), boolU32(open)); err != nil {
		return fmt.Errorf("set the timing window: %w", err)
	}
	return nil
}

// WindowInFlight returns, per target, the counted calls that entered and have not
// returned yet (windowed sessions).
func (s *Session) WindowInFlight() ([]int64, error) {
	out := make([]int64, len(s.targets))
	var per []int64
	for i := range s.targets {
		if err := s.objs.TpInflight.Lookup(uint32(i), &per); err != nil {
			return nil, fmt.Errorf("read the calls in flight: %w", err)
		}
		for _, v := range per {
			out[i] += v
		}
	}
	return out, nil
}

// DetachProbes closes every probe link at once; the loaded programs and
// counters stay. Call it when WindowInFlight is zero: no counted call then
// waits for its exit. Closing a uprobe link waits for an RCU grace period
// (about 0.25 s here) after removing its consumer; the breakpoint goes when
// the last consumer of its address does, so links closed one after another
// keep the entry+exit breakpoint trapping through the first one's wait
// (measured: 470 ms a window in sequence). Closed concurrently, every
// consumer goes first and the waits overlap.
func (s *Session) DetachProbes() {
	var wg sync.WaitGroup
	for _, ls := range [][]link.Link{s.entryLinks, s.exitLinks, s.links} {
		for _, l := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.Close()
			}()
		}
	}
	wg.Wait()
	s.entryLinks, s.exitLinks, s.links = nil, nil, nil
	s.singleLinks = 0
}

// AttachProbes attaches every target's probes again after DetachProbes.
func (s *Session) AttachProbes() error {
	if !s.opts.Windowed {
		return errors.New("the session is not windowed")
	}
	if s.stopped {
		return errors.New("the session is stopped")
	}
	if len(s.links)+len(s.entryLinks)+len(s.exitLinks) > 0 || s.helper != nil {
		return nil
	}
	for _, attach := range s.relinks {
		if err := attach(); err != nil {
			s.DetachProbes()
			return err
		}
	}
	return nil
}

// groupBy groups xs by key, the keys in the order of their first element.
func groupBy[K comparable, T any](xs []T, key func(T) K) ([]K, map[K][]T) {
	m := map[K][]T{}
	var keys []K
	for _, x := range xs {
		k := key(x)
		if m[k] == nil {
			keys = append(keys, k)
		}
		m[k] = append(m[k], x)
	}
	return keys, m
}

// groupByKind groups targets by their kind of probe, kinds in the order of
// their first target.
func groupByKind(ts []*Target) ([]Kind, map[Kind][]*Target) {
	return groupBy(ts, func(t *Target) Kind { return t.Spec.Kind })
}
