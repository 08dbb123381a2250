// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/push"
	"github.com/tickprof/tickprof/push/query"
)

// TestPyroscopeOffCPU runs the agent with off-CPU sampling on
// testdata/sample/offcpu.c (a worker thread blocked in read about 70% of
// its wall time, a byte every 10 ms and 3 ms of computing after each; a
// feeder thread asleep between its writes), pushing to the package's real
// Pyroscope server over /ingest, and reads the off-CPU windows back
// through the query API: the off_cpu, wall and off_cpu_intervals types
// are stored, the series carry the target's labels (service, pid, host,
// kernel, executable, and the off_cpu state as a series label), the
// blocked stacks read back (selector off_cpu="blocked") add up exactly to
// those the agent wrote to its directory sink, and the read path
// (wait_byte) holds at least 95% of the blocked time outside the feeder
// thread (asleep in clock_nanosleep).
func TestPyroscopeOffCPU(t *testing.T) {
	url := needPyroscope(t).URL // the package's shared server (pyroscope_test.go)
	began := time.Now()
	const service = "tpoffcpu"
	bin := testtarget.C(t, "sample/offcpu.c", service, "-fno-omit-frame-pointer", "-fno-inline", "-pthread")
	target := exec.Command(bin, filepath.Join(t.TempDir(), "kv"), "10000", "3000", "3000") // 30 s
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	pid := target.Process.Pid
	dir := runOffCPUAgent(t, url, pid)
	sent, from := offWindows(t, dir)

	c, err := query.New(url, push.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Second)
	// Blocked (asleep, not waiting for a CPU), the worker thread waits in
	// read alone, the feeder in clock_nanosleep. The runnable stacks are
	// left out of the exact comparison: preempted anywhere in spin, some
	// hold an unnamed libc frame, and such stacks were seen missing from
	// the server's merged profile while its series totals counted them
	// (docs/agent.md).
	blockedSel := fmt.Sprintf(`{service_name=%q, pid="%d", %s="blocked"}`, service, pid, export.OffCPULabel)
	got, types := readBackOffCPU(t, c, blockedSel, from, until, blockedOnly(sent))
	checkOffCPULabels(t, c, pidSelector(service, pid), from, until, bin, pid)
	for _, want := range []string{export.OffCPUType, export.WallType, export.OffCPUIntervalsType} {
		if !slices.ContainsFunc(types, func(ty query.Type) bool { return ty.SampleType == want }) {
			t.Errorf("no %s type stored: %+v", want, types)
		}
	}
	tab, err := export.OffCPUReport(got, export.OffCPUType, estimate.Options{Confidence: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	read, feeder := offCPUIn(got, "wait_byte"), offCPUIn(got, "feeder")
	t.Logf("blocked, read back: %s [%s, %s] (99%%) in %d intervals; wait_byte %s, feeder %s; wait_byte %.3f of the blocked time outside the feeder (test %s after the server was ready)",
		fmtDur(tab.Total.Mean), fmtDur(tab.Total.Low), fmtDur(tab.Total.High), tab.Total.Calls, fmtDur(read), fmtDur(feeder),
		read/(tab.Total.Mean-feeder), time.Since(began).Round(time.Millisecond))
	if feeder <= 0 || !(read >= 0.95*(tab.Total.Mean-feeder)) {
		t.Errorf("wait_byte has %s of the %s blocked outside the feeder (%s): want at least 95%%",
			fmtDur(read), fmtDur(tab.Total.Mean-feeder), fmtDur(feeder))
	}
}

// runOffCPUAgent runs the agent with off-CPU sampling on pid, pushing to
// the Pyroscope server at url and to a directory sink, until it has cut
// four 1 s windows, and returns the directory.
func runOffCPUAgent(t *testing.T, url string, pid int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "windows")
	dsink, err := push.NewDir(dir, push.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dsink.Close()
	a, err := New(Config{PIDs: []int{pid}, Frequency: 99, Window: time.Second, OffCPU: true,
		Destinations: Destinations{Pyroscope: url}, Sinks: []push.Sink{dsink}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil && a.Stats().Windows < 4 {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Lost() != 0 || st.Windows < 4 {
		t.Fatalf("the agent lost windows or cut fewer than 4: %+v", st)
	}
	return dir
}

// blockedOnly is p's blocked off-CPU stacks alone.
func blockedOnly(p *profile.Profile) *profile.Profile {
	b := p.Copy()
	b.Sample = nil
	for _, s := range p.Sample {
		if st := s.Label[export.OffCPULabel]; len(st) > 0 && st[0] == "blocked" {
			b.Sample = append(b.Sample, s)
		}
	}
	return b
}

// offWindows reads the off-CPU windows the agent wrote to dir and returns
// them merged, and the start of the oldest.
func offWindows(t *testing.T, dir string) (*profile.Profile, time.Time) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+OffCPUProfileName+"*"+push.DirSuffix))
	if len(files) < 3 {
		t.Fatalf("%d off-CPU windows written, want at least 3", len(files))
	}
	var ps []*profile.Profile
	from := time.Now()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s := time.Unix(0, p.TimeNanos); s.Before(from) {
			from = s
		}
		ps = append(ps, p)
	}
	m, err := profile.Merge(ps)
	if err != nil {
		t.Fatal(err)
	}
	return m, from.Truncate(time.Second)
}

// offTypes are the sample types of an off-CPU window read back and
// checked against what was sent.
var offTypes = []string{export.OffCPUType, export.OffCPUIntervalsType, export.OffCPUVarType, export.WallType}

// readBackOffCPU reads the off-CPU profile (every sample type stored under
// its name) of selector back from the server, and the types stored, waiting up to
// 30 s for each of its off-CPU types to add up to what was sent; it fails
// the test when one never does.
func readBackOffCPU(t *testing.T, c *query.Client, sel string, from, until time.Time, sent *profile.Profile) (*profile.Profile, []query.Type) {
	t.Helper()
	ctx := context.Background()
	var got *profile.Profile
	var types []query.Type
	name := ""
	end := time.Now().Add(30 * time.Second)
	for ; ; time.Sleep(500 * time.Millisecond) {
		var err error
		if types, err = c.Types(ctx, sel, from, until); err != nil {
			t.Fatal(err)
		}
		for _, ty := range types {
			if ty.SampleType == export.OffCPUType {
				name = ty.Name
			}
		}
		// A merge may fail while the last windows become queryable (the
		// series' totals and the profile's disagree): asked again.
		var merr error
		if name != "" {
			if got, merr = c.Merge(ctx, name, sel, from, until, export.WindowTypeOrder(), nil); merr == nil && offDiff(got, sent) == "" {
				t.Logf("off-CPU profile stored as %s; types %+v", name, types)
				return got, types
			}
		}
		if time.Now().After(end) {
			if got == nil || merr != nil {
				t.Fatalf("after 30 s no off_cpu profile of %s (types %+v): %v", sel, types, merr)
			}
			t.Fatalf("after 30 s the server holds for %s: %s", sel, offDiff(got, sent))
		}
	}
}

// offDiff says how got's off-CPU sums differ from sent's ("" when equal).
func offDiff(got, sent *profile.Profile) string {
	var out []string
	for _, typ := range offTypes {
		if g, s := typeSum(got, typ), typeSum(sent, typ); g != s {
			out = append(out, fmt.Sprintf("%s %d, sent %d", typ, g, s))
		}
	}
	return strings.Join(out, "; ")
}

// checkOffCPULabels checks the labels of the off-CPU series selector
// matches: the target's executable, the host and kernel, and the off_cpu
// state of blocked stacks.
func checkOffCPULabels(t *testing.T, c *query.Client, sel string, from, until time.Time, exe string, pid int) {
	t.Helper()
	series, err := c.Series(context.Background(), sel, from, until)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	blocked := false
	for _, s := range series {
		if s["__type__"] != export.OffCPUType {
			continue
		}
		if s["executable"] != exe || s["pid"] != strconv.Itoa(pid) || s["host"] != host || s["kernel_release"] == "" {
			t.Errorf("off-CPU series labels %v: want executable %s, pid %d, host (%s) and kernel_release", s, exe, pid, host)
		}
		blocked = blocked || s[export.OffCPULabel] == "blocked"
	}
	if !blocked {
		t.Errorf("no off-CPU series with %s=\"blocked\" among %v", export.OffCPULabel, series)
	}
}

// typeSum is the sum of p's values of sample type typ (0 without it).
func typeSum(p *profile.Profile, typ string) int64 {
	i := -1
	for j, st := range p.SampleType {
		if st.Type == typ {
			i = j
		}
	}
	if i < 0 {
		return 0
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[i]
	}
	return n
}

// offCPUIn is the off-CPU time (ns) of p's stacks through fn.
func offCPUIn(p *profile.Profile, fn string) float64 {
	i := -1
	for j, st := range p.SampleType {
		if st.Type == export.OffCPUType {
			i = j
		}
	}
	var n float64
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if slicesHasFunc(l, fn) {
				n += float64(s.Value[i])
				break
			}
		}
	}
	return n
}

func fmtDur(ns float64) string {
	return time.Duration(math.Round(ns)).Round(time.Microsecond).String()
}
