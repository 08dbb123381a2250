// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
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
// to their probe sites, and keeps it so that AttachProbes (windowed
// sessions) and RelinkUprobes link them again without loading anything.
func (s *Session) linkProbes(attach func() error) error {
	s.relinks = append(s.relinks, attach)
	return attach()
}

// linkUprobes is linkProbes for probes bound to the process (uprobes),
// kept so that RelinkUprobes can attach them again.
func (s *Session) linkUprobes(attach func() error) error {
	s.uprobeRelinks = append(s.uprobeRelinks, attach)
	return s.linkProbes(attach)
}

// RelinkUprobes attaches the probes of user and Go functions again, from
// the programs already loaded, after a thread other than the process's
// main one exec'd (proc.ExecWatch): the kernel then stops installing the
// probes bound to the old main thread in the new program, while a
// multi-uprobe link's handler still runs for the process once another
// link installs them, so no old link may stay beside a new one (each call
// would count twice). Links this session holds are replaced: new ones
// attached, then the old closed. Links handed to a helper (HandOff) are
// detached by it, every kind, then all are attached again and handed to a
// new helper from helper (nil: kept here). Calls during the change are not
// counted. A windowed session needs none of it: each window attaches its
// probes anew.
func (s *Session) RelinkUprobes(ctx context.Context, helper func() *exec.Cmd) error {
	if s.stopped || s.opts.Windowed {
		return nil
	}
	if s.helper != nil {
		// The helper closes every link it holds, then all are attached
		// again: the calls in between are lost, none counted twice.
		if err := s.detachHelper(ctx); err != nil {
			return fmt.Errorf("take the probes back from the detach helper: %w", err)
		}
		s.detached = false
		for _, attach := range s.relinks {
			if err := attach(); err != nil {
				return fmt.Errorf("attach the probes again: %w", err)
			}
		}
		if helper != nil {
			return s.HandOff(helper())
		}
		return nil
	}
	oldEntries, oldExits := s.entryLinks, s.exitLinks
	s.entryLinks, s.exitLinks = nil, nil
	for _, attach := range s.uprobeRelinks {
		if err := attach(); err != nil {
			return fmt.Errorf("attach the probes again: %w", err)
		}
	}
	// The old links go once the new ones are in: closed first, the last
	// consumer of an address would take its uprobe away, and calls would
	// trap in it, uncounted, while a new one is made.
	closeParallel(ctx, oldEntries)
	closeParallel(ctx, oldExits)
	return nil
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
