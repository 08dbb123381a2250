// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/pushtest"
	"github.com/tickprof/tickprof/push/query"
)

// The tests against a real Grafana Pyroscope server share one, started by
// TestMain in the background (it takes 45-70 s to be ready, which the
// other tests of the package overlap) on this package's ports, its data
// in a directory of its own; the outage test stops and restarts it.
const pyroHTTP, pyroGRPC = 4110, 9110

var pyro *pushtest.Shared

// startPyroscope starts the shared server (not under -short, nor without
// root, which the agent's tests need) and returns what stops it.
func startPyroscope() func() {
	skip := ""
	switch {
	case testing.Short():
		skip = "-short: no real Pyroscope server"
	case os.Geteuid() != 0:
		skip = "not root: the agent cannot sample, so no real Pyroscope server is started"
	}
	var stop func()
	pyro, stop = pushtest.StartShared(pyroHTTP, pyroGRPC, skip)
	return stop
}

// needPyroscope returns the shared server, once ready; it skips the test
// without one (the server's start script is absent) and without BPF.
func needPyroscope(t *testing.T) *pushtest.Pyroscope {
	t.Helper()
	bpftest.Require(t)
	srv, skip, err := pyro.Wait()
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatalf("the real Pyroscope server did not start: %v", err)
	}
	return srv
}

// windowFile is one CPU window the agent wrote to its directory sink: the
// truth that what Pyroscope stored is checked against.
type windowFile struct {
	name    string
	start   time.Time
	samples int64
}

// cpuWindows reads the CPU windows in dir, oldest first.
func cpuWindows(t *testing.T, dir string) []windowFile {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+push.DirSuffix))
	var out []windowFile
	for _, f := range files {
		if strings.Contains(filepath.Base(f), TimeProfileName) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		w := windowFile{name: filepath.Base(f), start: time.Unix(0, p.TimeNanos)}
		for _, s := range p.Sample {
			w.samples += s.Value[0]
		}
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// storedSamples is the sample count Pyroscope holds for selector in the
// second that holds w's start (the ingest API stores a window at its whole
// second from, the Connect API at its start: windows a second or more
// apart fall in different seconds); 0 when it holds none.
func storedSamples(ctx context.Context, c *query.Client, typeID, selector string, w windowFile) (int64, error) {
	from := w.start.Truncate(time.Second)
	p, err := c.MergeType(ctx, typeID, selector, from, from.Add(time.Second))
	if errors.Is(err, query.ErrEmpty) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return n, nil
}

// cpuType is the ID of the samples/count profile type selector's series
// hold.
func cpuType(ctx context.Context, c *query.Client, selector string, start, end time.Time) (string, error) {
	types, err := c.Types(ctx, selector, start, end)
	if err != nil {
		return "", err
	}
	for _, ty := range types {
		if ty.SampleType == "samples" {
			return ty.ID, nil
		}
	}
	return "", fmt.Errorf("no samples/count type among %+v", types)
}

// storedTimes returns, for each window, how many times Pyroscope stored it
// (its samples read back over its own second, divided by its samples),
// waiting up to d for the last ones to become queryable; -1 for a count
// that is not a whole multiple.
func storedTimes(t *testing.T, url, selector string, ws []windowFile, d time.Duration) []int64 {
	t.Helper()
	c, err := query.New(url, push.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	times := make([]int64, len(ws))
	deadline := time.Now().Add(d)
	for {
		typeID, err := cpuType(ctx, c, selector, ws[0].start.Add(-time.Minute), time.Now())
		missing := err != nil
		for i, w := range ws {
			if err != nil {
				break
			}
			n, qerr := storedSamples(ctx, c, typeID, selector, w)
			if qerr != nil {
				t.Fatalf("read back %s: %v", w.name, qerr)
			}
			switch {
			case w.samples == 0:
				times[i] = 1
			case n%w.samples != 0:
				times[i] = -1
			default:
				times[i] = n / w.samples
			}
			missing = missing || times[i] == 0
		}
		if !missing || time.Now().After(deadline) {
			return times
		}
		time.Sleep(time.Second)
	}
}

// checkOnce fails the test for each window not stored exactly once.
func checkOnce(t *testing.T, what string, ws []windowFile, times []int64) {
	t.Helper()
	for i, w := range ws {
		if times[i] != 1 {
			t.Errorf("%s: window %s (%d samples, start %s) stored %d times (-1: not a whole number of times)",
				what, w.name, w.samples, w.start.Format("15:04:05.000"), times[i])
		}
	}
}

// stackHits counts the samples (first value) whose stack holds fn, and
// all samples.
func stackHits(p *profile.Profile, fn string) (hits, n int64) {
	for _, s := range p.Sample {
		n += s.Value[0]
		for _, l := range s.Location {
			if slicesHasFunc(l, fn) {
				hits += s.Value[0]
				break
			}
		}
	}
	return hits, n
}

func slicesHasFunc(l *profile.Location, fn string) bool {
	for _, ln := range l.Line {
		if ln.Function != nil && ln.Function.Name == fn {
			return true
		}
	}
	return false
}

// logLines collects the agent's log lines (and passes them on to t).
type logLines struct {
	t     *testing.T
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
	l.t.Log(s)
}

func (l *logLines) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// gateSink holds every push while closed: closing it waits for the push
// under way, so that what the destination stored can be read back
// complete before it is stopped.
// It records the start (the profile's time) of each window delivered.
type gateSink struct {
	push.Sink
	mu        sync.Mutex
	delivered map[int64]bool
}

func (g *gateSink) Push(ctx context.Context, w *push.Window) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.Sink.Push(ctx, w)
	if err == nil && w.Profile != nil {
		if g.delivered == nil {
			g.delivered = map[int64]bool{}
		}
		g.delivered[w.Profile.TimeNanos] = true
	}
	return err
}

// split returns the windows of ws the gate delivered, and the others;
// g.mu is held.
func (g *gateSink) split(ws []windowFile) (in, out []windowFile) {
	for _, w := range ws {
		if g.delivered[w.start.UnixNano()] {
			in = append(in, w)
		} else {
			out = append(out, w)
		}
	}
	return in, out
}

func pidSelector(service string, pid int) string {
	return fmt.Sprintf(`{service_name=%q, pid="%d"}`, service, pid)
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// quiet reports whether a destination has delivered everything given to it
// (nothing queued, nothing spooled).
func quiet(a *Agent, sink string) bool {
	ps := a.Stats().Push[sink]
	return ps.Queued == 0 && ps.Spool == 0
}
