// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/query"
	"github.com/tickprof/tickprof/sampler"
)

// TestPyroscopeRoundTrip runs the agent on a real sampled target, timing
// burn_a besides, pushing to the real Pyroscope server through each of its
// APIs, and reads the windows back with Pyroscope's query API: each CPU
// window is stored exactly once (its samples read back over its own time
// range), the merged CPU profile gives burn_a's share as one sampler run
// over the same span does, and the merged time windows 2 to 4 give burn_a's
// mean as one timing session over those windows does.
func TestPyroscopeRoundTrip(t *testing.T) {
	srv := needPyroscope(t)
	for _, api := range []string{"ingest", "connect"} {
		t.Run(api, func(t *testing.T) { roundTrip(t, srv.URL, api) })
	}
}

func roundTrip(t *testing.T, url, api string) {
	service := "tprt" + api
	target := startBurn(t, buildBurn(t, service), 60)
	pid := target.Process.Pid
	dir := t.TempDir()
	dsink, err := push.NewDir(filepath.Join(dir, "windows"), push.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dsink.Close()
	a, err := New(Config{
		PIDs: []int{pid}, Frequency: 199, Window: 2 * time.Second, Users: []string{"burn_a"}, Confidence: 0.99,
		Destinations: Destinations{Pyroscope: url, PyroscopeAPI: api}, Sinks: []push.Sink{dsink}, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := sampler.Open(context.Background(), sampler.Config{Frequency: 199, PIDs: []int{pid}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	specs, err := loader.ResolveUser(pid, "burn_a", 1)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := loader.Open(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}, PID: pid, NoRecords: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	refDone := make(chan *sampler.Result, 1)
	go func() {
		res, err := ref.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		refDone <- res
	}()
	// The reference session is polled as the agent cuts its first and its
	// fourth window: between, it timed the calls of windows 2 to 4.
	var first, last loader.Poll
	polled := make(chan error, 1)
	go func() {
		var err error
		for _, n := range []uint64{1, 4} {
			for ctx.Err() == nil && a.Stats().Windows < n {
				time.Sleep(20 * time.Millisecond)
			}
			if n == 1 {
				first, err = sess.Poll()
			} else {
				last, err = sess.Poll()
			}
			if err != nil {
				break
			}
		}
		polled <- err
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-polled; err != nil {
		t.Fatal(err)
	}
	refRes := <-refDone
	if st := a.Stats(); st.Lost() != 0 {
		t.Fatalf("the agent lost windows: %+v", st)
	}

	sel := pidSelector(service, pid)
	ws := cpuWindows(t, filepath.Join(dir, "windows"))
	checkOnce(t, api, ws, storedTimes(t, url, sel, ws, 30*time.Second))
	c, err := query.New(url, push.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from, until := ws[0].start.Truncate(time.Second), time.Now()
	merged, err := c.Merge(context.Background(), storedName(t, c, sel, from, until, "samples"), sel, from, until, export.WindowTypeOrder(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, w := range ws {
		want += w.samples
	}
	h1, n1 := stackHits(merged, "burn_a")
	refProf, err := export.EncodeCPU(refRes.Profile)
	if err != nil {
		t.Fatal(err)
	}
	h2, n2 := stackHits(refProf, "burn_a")
	if n1 != want {
		t.Errorf("the merged profile read back holds %d samples, the windows %d", n1, want)
	}
	// As in TestAgentPushesWindows: at 99.9%, a false alarm in at most
	// 0.1% of runs.
	d, err := estimate.DiffProportions(uint64(h1), uint64(n1), uint64(h2), uint64(n2), estimate.Options{Confidence: 0.999})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("burn_a share: read back %d/%d, one sampler run %d/%d, difference [%.3f, %.3f] (99.9%%)", h1, n1, h2, n2, d.Low, d.High)
	if d.Significant {
		t.Errorf("the windows read back and one sampler run disagree on burn_a's share: %.3f [%.3f, %.3f]", d.Diff, d.Low, d.High)
	}

	if len(ws) < 4 {
		t.Fatalf("%d CPU windows, want 4", len(ws))
	}
	// Windows 2 to 4, each stored at a second of its start.
	tfrom, tuntil := ws[1].start.Truncate(time.Second), ws[3].start.Truncate(time.Second).Add(time.Second)
	tp, err := c.Merge(context.Background(), storedName(t, c, sel, tfrom, tuntil, "ticks"), sel, tfrom, tuntil, export.WindowTypeOrder(), export.LabelledTypes())
	if err != nil {
		t.Fatal(err)
	}
	tab, err := export.TimeReport(tp)
	if err != nil || len(tab.Rows) != 1 || !tab.Rows[0].HasEstimate {
		t.Fatalf("time report of the windows read back: %v %+v", err, tab)
	}
	since := last.Totals[0].Sub(first.Totals[0])
	wantT, err := estimate.Time(estimate.Counts{Resolution: 1, Calls: since.Calls, Ticks: since.Ticks, TicksSq: since.TicksSq.Lo, HasTicksSq: true},
		estimate.Options{Confidence: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	row := tab.Rows[0]
	got := estimate.Result{Mean: row.Mean, Low: row.Low, High: row.High, Confidence: 0.99,
		StdErr: (row.High - row.Low) / (2 * 2.575829), Calls: row.Calls}
	t.Logf("burn_a read back: %d calls, mean %.0f ns [%.0f, %.0f] (%s); one session: %d calls, %.0f ns [%.0f, %.0f]",
		row.Calls, row.Mean, row.Low, row.High, row.Method, since.Calls, wantT.Mean, wantT.Low, wantT.High)
	// The session was polled within 20 ms of the windows' cuts, a few
	// calls of burn_a (about 1 ms each).
	if float64(row.Calls) < 0.95*float64(since.Calls) || float64(row.Calls) > 1.05*float64(since.Calls) {
		t.Errorf("the windows read back hold %d calls, the session over the same windows %d", row.Calls, since.Calls)
	}
	if d, err := estimate.DiffResults(wantT, got); err != nil || d.Significant {
		t.Errorf("the time windows read back and one session disagree on burn_a's mean: %+v %v", d, err)
	}
}

// storedName is the name (__name__) of the profile whose series of
// sample type typ selector matches: the Connect API's series carry the
// window's name, the ingest API's another that Pyroscope derives.
func storedName(t *testing.T, c *query.Client, selector string, start, end time.Time, typ string) string {
	t.Helper()
	types, err := c.Types(context.Background(), selector, start, end)
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range types {
		if ty.SampleType == typ {
			t.Logf("%s is stored as %s", typ, ty.ID)
			return ty.Name
		}
	}
	t.Fatalf("no series of sample type %s among %+v", typ, types)
	return ""
}
