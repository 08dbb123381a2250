// SPDX-License-Identifier: Apache-2.0

package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// window is the agents' window length, the shortest they take: the
// windows that start and end within the time runs' 10 s are read back, and
// the shorter the windows, the more of the time runs' calls they hold
// (with 3 s windows, about half: burn_a's mean per call drifts with the
// load of a shared machine, and over spans that overlap by half the two
// disagreed by 13% in one run of three).
const window = time.Second

// TestReportPyroscopeFleet times burn_a on three processes, each watched by
// its own agent (as three hosts would), all pushing to the real Pyroscope
// server under one service name; meanwhile a `tickprof time` run times
// each process on its own for 10 s. `report --pyroscope` over the windows
// that start and end while all three time runs ran (about 8 s) gives
// burn_a's mean from the merged time windows of the three, and it
// agrees with the three time runs pooled (their calls' mean, its standard
// error from theirs) at 99%: a false alarm in at most 1% of runs (fewer:
// both time the same calls, so their errors are positively correlated and
// the independent-samples interval is conservative).
func TestReportPyroscopeFleet(t *testing.T) {
	bpftest.Require(t)
	srv, skip, err := pyro.Wait()
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatalf("the real Pyroscope server did not start: %v", err)
	}
	exe := testtarget.Sampled(t, "burn", "tpfleet")
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var pids []int
	var agents []*proc
	for i := 0; i < 3; i++ {
		target := exec.Command(exe, "120", "/dev/null")
		if err := target.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { target.Process.Kill(); target.Wait() })
		pid := target.Process.Pid
		pids = append(pids, pid)
		agents = append(agents, start(t, bin, "agent", "-p", strconv.Itoa(pid), "-u", "burn_a", "--window", window.String(),
			"--pyroscope", srv.URL, "--service", "tpfleet", "--label", "run="+run, "--listen", "127.0.0.1:0"))
	}
	for _, a := range agents {
		a.waitWindows(t, 1, 90*time.Second)
	}
	dir := t.TempDir()
	var times []*proc
	for i, pid := range pids {
		times = append(times, start(t, bin, "time", "-p", strconv.Itoa(pid), "-u", "burn_a", "--no-correct",
			"--duration", "10s", "--confidence", "99%", "--json", filepath.Join(dir, fmt.Sprintf("time%d.json", i))))
	}
	for _, p := range times {
		if code := p.wait(60 * time.Second); code != 0 {
			t.Fatalf("tickprof time exited %d:\n%s", code, p.log())
		}
	}
	for _, a := range agents {
		a.waitWindows(t, a.windows(t)+1, 30*time.Second)
		a.cmd.Process.Signal(syscall.SIGINT)
	}
	for _, a := range agents {
		if code := a.wait(60 * time.Second); code != 0 {
			t.Fatalf("agent exited %d:\n%s", code, a.log())
		}
	}
	pooled, from, until := poolTimeRuns(t, dir, 3)
	// The windows that start once every time run has attached and end
	// before the first one ends (a window is stored at the second of its
	// start): the same regime of load, the time runs' loading left out.
	from = from.Truncate(time.Second).Add(time.Second)
	until = until.Add(-window).Truncate(time.Second)
	if !until.After(from) {
		t.Fatalf("the time runs overlap too little: %s..%s", from, until)
	}
	rep := start(t, bin, "report", "--pyroscope", srv.URL, "--query", fmt.Sprintf(`{service_name="tpfleet", run=%q}`, run),
		"--profile", "time", "--from", strconv.FormatInt(from.Unix(), 10), "--until", strconv.FormatInt(until.Unix(), 10),
		"--json", "-o", filepath.Join(dir, "merged.pb.gz"))
	// Data is queryable a few seconds after it was pushed.
	var got reportRow
	for deadline := time.Now().Add(30 * time.Second); ; {
		code := rep.wait(60 * time.Second)
		if code == 0 {
			got = parseReport(t, rep.out.Bytes())
			if got.Calls > 0 && time.Now().After(until.Add(window+10*time.Second)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("report --pyroscope exited %d:\n%s%s", code, rep.out.String(), rep.log())
		}
		time.Sleep(2 * time.Second)
		rep = start(t, bin, rep.cmd.Args[1:]...)
	}
	if _, err := os.Stat(filepath.Join(dir, "merged.pb.gz")); err != nil {
		t.Errorf("-o wrote no profile: %v", err)
	}
	mine := estimate.Result{Mean: got.Mean, Low: got.Low, High: got.High, Confidence: 0.99,
		StdErr: (got.High - got.Low) / (2 * 2.575829), Calls: got.Calls}
	t.Logf("span %s..%s (%s): report --pyroscope: %d calls, mean %.0f ns [%.0f, %.0f] (%s); 3 time runs pooled: %d calls, %.0f ns [%.0f, %.0f]",
		from.Format("15:04:05"), until.Format("15:04:05"), until.Sub(from).Round(time.Second), got.Calls, got.Mean, got.Low, got.High, got.Method,
		pooled.Calls, pooled.Mean, pooled.Low, pooled.High)
	if d, err := estimate.DiffResults(pooled, mine); err != nil || d.Significant {
		t.Errorf("report --pyroscope and the pooled time runs disagree on burn_a's mean: %+v %v", d, err)
	}
	// The windows read back cover part of the span the three time runs
	// shared, itself part of their 10 s (they attach up to seconds apart).
	if ratio := float64(got.Calls) / float64(pooled.Calls); ratio < 0.15 || ratio > 1.1 {
		t.Errorf("report --pyroscope counts %d calls, the time runs %d over a span that holds it", got.Calls, pooled.Calls)
	}
}

// reportRow is burn_a's row of report --json.
type reportRow struct {
	Calls     uint64  `json:"calls"`
	Mean      float64 `json:"mean_ns"`
	Low       float64 `json:"low_ns"`
	High      float64 `json:"high_ns"`
	Method    string  `json:"method"`
	Estimated bool    `json:"has_estimate"`
}

func parseReport(t *testing.T, out []byte) reportRow {
	t.Helper()
	var tab struct {
		Confidence float64     `json:"confidence"`
		Rows       []reportRow `json:"targets"`
	}
	if err := json.Unmarshal(out, &tab); err != nil || len(tab.Rows) != 1 || !tab.Rows[0].Estimated {
		t.Fatalf("report --json: %v %s", err, out)
	}
	return tab.Rows[0]
}

// poolTimeRuns pools n `time --json` runs of one target at 99%: the mean
// of all their calls, and its standard error from each run's interval;
// and the span all of them ran.
func poolTimeRuns(t *testing.T, dir string, n int) (res estimate.Result, from, until time.Time) {
	t.Helper()
	var calls, sum, varSum float64
	type run struct{ n, mean, se float64 }
	var runs []run
	for i := 0; i < n; i++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("time%d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Confidence float64   `json:"confidence"`
			Start      time.Time `json:"start"`
			DurationS  float64   `json:"duration_s"`
			Targets    []struct {
				Calls  uint64   `json:"calls"`
				MeanNs *float64 `json:"mean_ns"`
				LowNs  *float64 `json:"low_ns"`
				HighNs *float64 `json:"high_ns"`
			} `json:"targets"`
		}
		if err := json.Unmarshal(b, &raw); err != nil || len(raw.Targets) != 1 || raw.Targets[0].MeanNs == nil || raw.Confidence != 0.99 {
			t.Fatalf("time --json: %v %s", err, b)
		}
		end := raw.Start.Add(time.Duration(raw.DurationS * float64(time.Second)))
		if from.IsZero() || raw.Start.After(from) {
			from = raw.Start
		}
		if until.IsZero() || end.Before(until) {
			until = end
		}
		tg := raw.Targets[0]
		se := (*tg.HighNs - *tg.LowNs) / (2 * 2.575829)
		runs = append(runs, run{float64(tg.Calls), *tg.MeanNs, se})
		calls += float64(tg.Calls)
		sum += float64(tg.Calls) * *tg.MeanNs
	}
	for _, r := range runs {
		w := r.n / calls
		varSum += w * w * r.se * r.se
	}
	mean, se := sum/calls, math.Sqrt(varSum)
	return estimate.Result{Mean: mean, Low: mean - 2.575829*se, High: mean + 2.575829*se, StdErr: se, Confidence: 0.99, Calls: uint64(calls)}, from, until
}

// proc is a tickprof process, its stdout and stderr collected.
type proc struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	mu   sync.Mutex
	err  bytes.Buffer
	done chan struct{}
	code int
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), done: make(chan struct{})}
	p.cmd.Stdout = &p.out
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.err.Write(sc.Bytes())
			p.err.WriteByte('\n')
			p.mu.Unlock()
		}
		io.Copy(io.Discard, pipe)
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err.String()
}

// wait waits at most d for the process to exit and returns its status (-2
// when it did not exit: it is then killed).
func (p *proc) wait(d time.Duration) int {
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		return -2
	}
}

var metricsAddr = regexp.MustCompile(`metrics on (http://[^ ]+/metrics)`)

// windows reads the agent's tickprof_agent_windows_total.
func (p *proc) windows(t *testing.T) int {
	t.Helper()
	m := metricsAddr.FindStringSubmatch(p.log())
	if m == nil {
		return 0
	}
	resp, err := http.Get(m[1])
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "tickprof_agent_windows_total "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	return 0
}

// waitWindows waits until the agent completed n windows.
func (p *proc) waitWindows(t *testing.T, n int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); p.windows(t) < n; time.Sleep(200 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("agent exited %d before its window %d:\n%s", p.code, n, p.log())
		default:
		}
		if time.Now().After(end) {
			t.Fatalf("agent did not complete window %d within %v:\n%s", n, d, p.log())
		}
	}
}
