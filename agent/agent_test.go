// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/pushtest"
	"github.com/tickprof/tickprof/sampler"
)

func TestMain(m *testing.M) {
	flag.Parse()
	testtarget.Main(m, startPyroscope())
}

// buildBurn is testdata/sample/burn.c (burn_a does 3 units of work for
// every unit of burn_b) built as the executable name, so that --exe can
// tell the tests' targets apart.
func buildBurn(t *testing.T, name string) string {
	t.Helper()
	return testtarget.Sampled(t, "burn", name)
}

// startBurn runs the burn target for secs seconds.
func startBurn(t *testing.T, exe string, secs float64) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(exe, strconv.FormatFloat(secs, 'f', 1, 64), "/dev/null")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// leafHits counts samples whose user leaf is fn, and all samples.
func leafHits(p *profile.Profile, fn string) (hits, n uint64) {
	for _, s := range p.Sample {
		c := uint64(s.Value[0])
		n += c
		for _, l := range s.Location {
			if l.Mapping != nil && l.Mapping.File == "[kernel.kallsyms]" {
				continue
			}
			if len(l.Line) > 0 && l.Line[len(l.Line)-1].Function.Name == fn {
				hits += c
			}
			break
		}
	}
	return hits, n
}

// TestAgentPushesWindows runs the agent on a real sampled target with every
// kind of destination, each a real receiver in this process; what arrives
// decodes with google/pprof, carries the labels, and the windows merged
// give burn_a's share as one sampler run over the same span does.
func TestAgentPushesWindows(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	exe := buildBurn(t, "tpburn")
	target := startBurn(t, exe, 30)

	ing := &pushtest.Ingest{MaxAge: time.Hour}
	ingLn := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ingLn, ing)
	conLn := pushtest.Listen(t, "127.0.0.1:0")
	con, _ := pushtest.StartConnect(t, conLn)
	otlp, otlpAddr, _ := pushtest.StartOTLP(t, "127.0.0.1:0")

	ingest, err := push.NewIngest("http://"+ingLn.Addr().String(), push.HTTPOptions{Auth: push.Auth{TenantID: "team"}})
	if err != nil {
		t.Fatal(err)
	}
	connect, _ := push.NewConnect("http://"+conLn.Addr().String(), push.HTTPOptions{})
	osink, _ := push.NewOTLP(otlpAddr, push.OTLPOptions{Insecure: true, OriginalPayload: true})
	defer osink.Close()
	dsink, err := push.NewDir(filepath.Join(dir, "profiles"), push.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dsink.Close()

	a, err := New(Config{
		PIDs: []int{target.Process.Pid}, Frequency: 199, Window: 2 * time.Second,
		Labels: map[string]string{"team": "perf"},
		Sinks:  []push.Sink{ingest, connect, osink, dsink},
		Logf:   t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	// One sampler run over the agent's whole span, for comparison.
	ref, err := sampler.Open(context.Background(), sampler.Config{Frequency: 199, PIDs: []int{target.Process.Pid}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	// Until four windows are done (the machine may be slow to load BPF).
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type refRun struct {
		res *sampler.Result
		err error
	}
	refDone := make(chan refRun, 1)
	go func() {
		res, err := ref.Run(ctx)
		refDone <- refRun{res, err}
	}()
	go func() {
		for ctx.Err() == nil && a.Stats().Windows < 4 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	refOut := <-refDone
	if refOut.err != nil {
		t.Fatal(refOut.err)
	}
	st := a.Stats()
	t.Logf("agent stats %+v", st)

	got := ing.Received()
	if len(got) < 4 {
		t.Fatalf("ingest received %d windows, want at least 4", len(got))
	}
	var u unix.Utsname
	unix.Uname(&u)
	host, _ := os.Hostname()
	var profs []*profile.Profile
	for _, in := range got {
		l := in.Labels
		if in.App != "tpburn" || l["pid"] != strconv.Itoa(target.Process.Pid) || l["executable"] != exe ||
			l["host"] != host || l["kernel_release"] != unix.ByteSliceToString(u.Release[:]) || l["team"] != "perf" || l["build_id"] == "" {
			t.Errorf("window labels %s %v", in.App, l)
		}
		if in.Header.Get("X-Scope-OrgID") != "team" {
			t.Errorf("tenant header missing")
		}
		if in.Rate != "199" {
			t.Errorf("sampleRate %q", in.Rate)
		}
		// No function's calls are counted: no calls/count column of zeros.
		for _, st := range in.Profile.SampleType {
			if st.Type == export.CallsType {
				t.Errorf("CPU window has a %s/%s sample type", st.Type, st.Unit)
			}
		}
		profs = append(profs, in.Profile)
	}
	reqs, _ := con.Received()
	if len(reqs) != len(got) {
		t.Errorf("Connect received %d windows, ingest %d", len(reqs), len(got))
	}
	for _, r := range reqs {
		if _, err := profile.ParseData(r.Series[0].Samples[0].RawProfile); err != nil {
			t.Errorf("Connect window does not decode: %v", err)
		}
	}
	ot := otlp.Received()
	if len(ot) != len(got) {
		t.Errorf("OTLP received %d windows, ingest %d", len(ot), len(got))
	}
	for _, pd := range ot {
		op := pd.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
		if _, err := profile.ParseData(op.OriginalPayload().AsRaw()); err != nil {
			t.Errorf("OTLP window does not decode: %v", err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "profiles", "*"+push.DirSuffix))
	if len(files) != len(got) {
		t.Errorf("directory holds %d windows, ingest %d", len(files), len(got))
	}

	merged, err := profile.Merge(profs)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := export.CPUReport(merged, estimate.Options{Confidence: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	refProf, err := export.EncodeCPU(refOut.res.Profile)
	if err != nil {
		t.Fatal(err)
	}
	h1, n1 := leafHits(merged, "burn_a")
	h2, n2 := leafHits(refProf, "burn_a")
	if tab.Samples != n1 || n1 == 0 || n2 == 0 {
		t.Fatalf("merged windows %d samples (report %d), reference %d", n1, tab.Samples, n2)
	}
	// The two runs sample the same process at the same time: their shares
	// are positively correlated, so the independent-samples interval is
	// conservative; at 99.9% it holds 0 with probability >= 99.9% when
	// they agree: a false alarm in at most 0.1% of runs (at 99% it was up
	// to 1%, and 1 run in 12 failed on a loaded machine, a difference of
	// -0.044 in burn_a's share for an interval of +-0.043).
	d, err := estimate.DiffProportions(h1, n1, h2, n2, estimate.Options{Confidence: 0.999})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("burn_a share: merged windows %d/%d = %.3f, one sampler run %d/%d = %.3f, difference [%.3f, %.3f] (99.9%%)",
		h1, n1, float64(h1)/float64(n1), h2, n2, float64(h2)/float64(n2), d.Low, d.High)
	if d.Significant {
		t.Errorf("merged windows and one sampler run disagree on burn_a's share: difference %.3f [%.3f, %.3f]", d.Diff, d.Low, d.High)
	}
	if float64(n1) < 0.8*float64(n2) {
		t.Errorf("the windows hold %d samples, the single run %d: more than 20%% lost between windows", n1, n2)
	}

	// The metrics endpoint reports the pushes.
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		fmt.Sprintf(`tickprof_agent_push_windows_total{destination="pyroscope-ingest",result="pushed"} %d`, len(got)),
		`tickprof_agent_push_windows_total{destination="otlp",result="dropped"} 0`,
		"tickprof_agent_ring_buffer_drops_total 0",
		"process_resident_memory_bytes",
		"process_cpu_seconds_total",
		"tickprof_agent_attached_probes",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestAgentExeChurn watches an executable by name while targets start and
// stop: once the first window is out, a second process starts and the first
// is killed. The second is in a window that starts within one window of its
// start (plus a second: from is whole seconds); the first is in no window
// that starts after it exited.
func TestAgentExeChurn(t *testing.T) {
	bpftest.Require(t)
	exe := buildBurn(t, "tpchurn")
	const window = 2 * time.Second
	first := startBurn(t, exe, 60)
	ing := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, ing)
	sink, _ := push.NewIngest("http://"+ln.Addr().String(), push.HTTPOptions{})
	a, err := New(Config{Exes: []string{"tpchurn"}, Frequency: 99, Window: window, Sinks: []push.Sink{sink}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitWindows := func(n uint64) {
		for ctx.Err() == nil && a.Stats().Windows < n {
			time.Sleep(50 * time.Millisecond)
		}
	}
	var second *exec.Cmd
	var secondStart, firstEnd time.Time
	go func() {
		waitWindows(1)
		second = startBurn(t, exe, 60)
		secondStart = time.Now()
		first.Process.Kill()
		first.Wait()
		firstEnd = time.Now()
		waitWindows(a.Stats().Windows + 3)
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if second == nil {
		t.Fatal("no window within 90 s")
	}
	var firstSeen, secondSeen bool
	var secondFirstWindow time.Time
	for _, in := range ing.Received() {
		pid, _ := strconv.Atoi(in.Labels["pid"])
		from := time.Unix(in.From, 0)
		switch pid {
		case first.Process.Pid:
			firstSeen = true
			if from.After(firstEnd) {
				t.Errorf("exited process %d in a window from %v (it ended at %v)", pid, from, firstEnd)
			}
		case second.Process.Pid:
			if !secondSeen || from.Before(secondFirstWindow) {
				secondFirstWindow = from
			}
			secondSeen = true
		default:
			t.Errorf("window of unexpected process %d (%v)", pid, in.Labels)
		}
		if !strings.HasSuffix(in.Labels["executable"], "/tpchurn") || in.App != "tpchurn" {
			t.Errorf("window labels %s %v", in.App, in.Labels)
		}
	}
	if !firstSeen || !secondSeen {
		t.Fatalf("windows of the first target %v, of the second %v", firstSeen, secondSeen)
	}
	if lag := secondFirstWindow.Sub(secondStart); lag > window+time.Second {
		t.Errorf("the second target started at %v was first sampled in a window from %v (%v later, window %v)",
			secondStart, secondFirstWindow, lag, window)
	}
	if st := a.Stats(); st.Watched != 1 {
		t.Errorf("watch set holds %d processes at the end, want 1 (the second)", st.Watched)
	}
	t.Logf("stats %+v", a.Stats())
}

// timedRun is an agent timing burn_a in a burn target beside a full-time
// loader session (ns clock, histograms) over a span that holds the
// agent's.
type timedRun struct {
	row  export.TimeRow // burn_a in the merged time windows
	conf float64        // their confidence
	ref  *loader.Session
	c    loader.Counters // the full-time session's totals
	want estimate.Result // and its estimate at 99%
}

// timeBurnA runs the agent (cfg with the target's PID, burn_a, 2 s windows
// to an /ingest receiver) until n windows are done, and merges its time
// windows.
func timeBurnA(t *testing.T, name string, cfg Config, n uint64) timedRun {
	t.Helper()
	target := startBurn(t, buildBurn(t, name), 60)
	ing := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, ing)
	sink, _ := push.NewIngest("http://"+ln.Addr().String(), push.HTTPOptions{})
	cfg.PIDs, cfg.Window, cfg.Users, cfg.Confidence, cfg.Sinks, cfg.Logf = []int{target.Process.Pid}, 2*time.Second, []string{"burn_a"}, 0.99, []push.Sink{sink}, t.Logf
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := loader.ResolveUser(target.Process.Pid, "burn_a", 1)
	if err != nil {
		t.Fatal(err)
	}
	var r timedRun
	r.ref, err = loader.Open(loader.Options{Clock: loader.Clock{Kind: loader.ClockNS, Tick: time.Nanosecond}, PID: target.Process.Pid, NoRecords: true, Quantiles: true}, specs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ref.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The reference mean is of the calls made once the agent cut its
	// first window: before, the agent was loading and attaching beside
	// burn_a on two CPUs, which slowed it (the whole span's mean was 2%
	// above the windows' in a CI run, and the test failed).
	first := make(chan loader.Poll, 1)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		taken := false
		for ctx.Err() == nil && a.Stats().Windows < n {
			if !taken && a.Stats().Windows >= 1 {
				if p, err := r.ref.Poll(); err == nil {
					first <- p
				}
				taken = true
			}
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	<-watched
	r.ref.Stop()
	rp, err := r.ref.Poll()
	if err != nil {
		t.Fatal(err)
	}
	r.c = rp.Totals[0]
	since := r.c
	select {
	case p := <-first:
		since = r.c.Sub(p.Totals[0])
	default:
	}
	if r.want, err = estimate.Time(estimate.Counts{Resolution: 1, Calls: since.Calls, Ticks: since.Ticks, TicksSq: since.TicksSq.Lo, HasTicksSq: true},
		estimate.Options{Confidence: 0.99}); err != nil {
		t.Fatal(err)
	}
	r.row, r.conf = mergedTimeRow(t, ing)
	t.Logf("merged windows: %d calls, mean %.0f ns [%.0f, %.0f] (%s); full-time session: %d calls, %.0f ns [%.0f, %.0f]",
		r.row.Calls, r.row.Mean, r.row.Low, r.row.High, r.row.Method, r.c.Calls, r.want.Mean, r.want.Low, r.want.High)
	return r
}

// mergedTimeRow merges the time windows ing received and returns the one
// target's row and the confidence.
func mergedTimeRow(t *testing.T, ing *pushtest.Ingest) (export.TimeRow, float64) {
	t.Helper()
	var profs []*profile.Profile
	for _, in := range ing.Received() {
		if export.IsTimeProfile(in.Profile) {
			profs = append(profs, in.Profile)
		}
	}
	if len(profs) < 2 {
		t.Fatalf("%d time windows", len(profs))
	}
	merged, err := profile.Merge(profs)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := export.TimeReport(merged)
	if err != nil || len(tab.Rows) != 1 || !tab.Rows[0].HasEstimate {
		t.Fatalf("time report of the merged windows: %v %+v", err, tab)
	}
	return tab.Rows[0], tab.Confidence
}

// sameMean fails the test when the merged windows' mean and the full-time
// session's differ at 99% (the calls overlap, so the independent-samples
// interval is conservative).
func (r timedRun) sameMean(t *testing.T) {
	t.Helper()
	got := estimate.Result{Mean: r.row.Mean, Low: r.row.Low, High: r.row.High, Confidence: r.conf,
		StdErr: (r.row.High - r.row.Low) / (2 * 2.575829), Calls: r.row.Calls}
	if d, err := estimate.DiffResults(r.want, got); err != nil || d.Significant {
		t.Errorf("merged windows and the full-time session disagree on burn_a's mean: %+v %v", d, err)
	}
}

// TestAgentTimesFunction times burn_a continuously (-u, ns clock) beside a
// full-time session: the windows merged give at most its calls (it spans
// the agent's run), a mean whose difference from its mean holds 0 at 99%,
// and a median whose interval overlaps its.
func TestAgentTimesFunction(t *testing.T) {
	bpftest.Require(t)
	r := timeBurnA(t, "tptime", Config{Frequency: 49}, 4)
	if r.row.Calls == 0 || r.row.Calls > r.c.Calls {
		t.Errorf("merged windows count %d calls, the full-time session over a longer span %d", r.row.Calls, r.c.Calls)
	}
	r.sameMean(t)
	checkMergedMedian(t, r.ref, r.row)
}

// checkMergedMedian: the merged windows' histograms give burn_a's median
// with an interval that overlaps the single session's (both at 99%, over
// overlapping calls of one distribution).
func checkMergedMedian(t *testing.T, ref *loader.Session, row export.TimeRow) {
	t.Helper()
	h, err := ref.Histogram(0)
	if err != nil || h == nil {
		t.Fatalf("reference histogram: %v", err)
	}
	want, err := h.Quantile(0.5, estimate.Options{Confidence: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	var levels []float64
	for _, q := range row.Quantiles {
		levels = append(levels, q.Quantile)
	}
	if len(row.Quantiles) != len(export.DefaultWindowQuantiles) || row.Quantiles[0].Quantile != 0.5 || row.Quantiles[0].HighNs == nil {
		t.Fatalf("merged windows' quantiles at %v (%+v), want %v with a p50 interval", levels, row.Quantiles, export.DefaultWindowQuantiles)
	}
	q := row.Quantiles[0].ToQuantile()
	t.Logf("burn_a median: merged windows %.0f [%.0f, %.0f] over %d calls, one session %.0f [%.0f, %.0f] over %d", q.Value, q.Low, q.High, q.Calls, want.Value, want.Low, want.High, h.Total())
	if q.High < want.Low || want.High < q.Low {
		t.Errorf("burn_a's median: merged windows [%.0f, %.0f], one session [%.0f, %.0f]: disjoint", q.Low, q.High, want.Low, want.High)
	}
}
