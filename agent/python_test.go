// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	"google.golang.org/protobuf/proto"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/push"
)

// TestAgentPushesPython runs the agent on testdata/python/burn.py under
// the newest installed CPython, pushing to the real Pyroscope server, and
// reads the profile back: burn_a and burn_b (qualified names from 3.11)
// come back as Python frames with their file and lines, below main and
// <module>, and burn_a's share of the two within 5 points of 0.75 (at
// least 700 samples of the two, about 1,500 on a loaded machine: 5 points
// are then at least 3.1 standard deviations of the binomial spread, a
// false alarm in one run in 500 at most).
func TestAgentPushesPython(t *testing.T) {
	bpftest.Require(t)
	found, _ := testtarget.Pythons(t)
	if len(found) == 0 {
		t.Skip("no CPython 3.8-3.13 installed (pyenv, /usr/bin/python3.11)")
	}
	py := found[0]
	for _, f := range found {
		if f.Minor > py.Minor {
			py = f
		}
	}
	url := needPyroscope(t).URL // the package's shared server (pyroscope_test.go)
	script, _ := filepath.Abs("../testdata/python/burn.py")
	target := exec.Command(py.Exe, script, "30")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	from := time.Now()

	ingest, err := push.NewIngest(url, push.HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{PIDs: []int{target.Process.Pid}, Frequency: 999, Window: 2 * time.Second,
		Sinks: []push.Sink{ingest}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil && a.Stats().Windows < 4 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("agent stats %+v", a.Stats())

	burnA, burnB := "burn_a", "burn_b"
	if py.Minor >= 11 {
		burnA, burnB = "Worker.burn_a", "Worker.burn_b"
	}
	// Data is queryable a few seconds after ingest.
	var p *profile.Profile
	var counts map[string]int64
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(2 * time.Second) {
		p = readBack(t, url, target.Process.Pid, from)
		counts = pythonCounts(t, p, script, burnA, burnB)
		if counts[burnA]+counts[burnB] >= 700 && time.Since(from) > 10*time.Second || time.Now().After(deadline) {
			break
		}
	}
	a1, b1 := counts[burnA], counts[burnB]
	t.Logf("read back from Pyroscope (%s): %s %d, %s %d samples with the whole Python stack", py.Name, burnA, a1, burnB, b1)
	if a1+b1 < 700 {
		t.Fatalf("%d samples of burn_a and burn_b with their Python stack read back, want at least 700", a1+b1)
	}
	if share := float64(a1) / float64(a1+b1); share < 0.70 || share > 0.80 {
		t.Errorf("burn_a's share %.4f read back, want 0.75 ± 0.05", share)
	}
}

// readBack asks the Pyroscope server at url for the CPU profile of
// process pid from from until now, merged.
func readBack(t *testing.T, url string, pid int, from time.Time) *profile.Profile {
	t.Helper()
	c := querierv1connect.NewQuerierServiceClient(http.DefaultClient, url)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	//lint:ignore SA1019 the whole profile as pprof, lines and files included, is what the test reads; the server built for the tests answers it
	res, err := c.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{
		ProfileTypeID: "process_cpu:samples:count:cpu:nanoseconds",
		LabelSelector: `{service_name=~".+",pid="` + strconv.Itoa(pid) + `"}`,
		Start:         from.Add(-time.Minute).UnixMilli(),
		End:           time.Now().Add(time.Minute).UnixMilli(),
	}))
	if err != nil {
		t.Fatalf("read back from Pyroscope: %v", err)
	}
	b, err := proto.Marshal(res.Msg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(b)
	if err != nil {
		t.Fatalf("profile read back does not decode: %v", err)
	}
	return p
}

// pythonCounts counts the samples of each of fns whose Python frames are
// the function (in script, with a line), main and <module>, leaf first.
func pythonCounts(t *testing.T, p *profile.Profile, script string, fns ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		ok := true
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if strings.HasSuffix(ln.Function.Filename, ".py") {
					names = append(names, ln.Function.Name)
					ok = ok && ln.Function.Filename == script && ln.Line > 0
				}
			}
		}
		if !ok || len(names) != 3 || names[1] != "main" || names[2] != "<module>" {
			continue
		}
		for _, fn := range fns {
			if names[0] == fn {
				out[fn] += s.Value[0]
			}
		}
	}
	return out
}
