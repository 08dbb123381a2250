// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/symtab"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/sampler"
)

// offCPURun samples testdata/sample/offcpu (a worker thread blocked in
// read about 70% of its wall time: a byte every 10 ms, 3 ms of computing
// after each) with off-CPU sampling at probability p, and returns the
// table of typ (export.OffCPUType or WallType) at confidence conf, the
// target's own measurements and the run's counters.
func offCPURun(t *testing.T, p float64, typ string, conf float64) (*export.OffCPUTable, map[string]float64, sampler.Stats) {
	t.Helper()
	bpftest.Require(t)
	bin := testtarget.C(t, "sample/offcpu.c", "offcpu", "-fno-omit-frame-pointer", "-fno-inline", "-pthread")
	kv := filepath.Join(t.TempDir(), "kv")
	tab, st := offCPUTable(t, []string{bin, kv, "10000", "3000", "250"}, p, typ, conf)
	return tab, testtarget.ReadKV(t, kv), st
}

// offCPUTable samples the command with off-CPU sampling at probability p
// and returns the table of typ at confidence conf and the run's counters.
func offCPUTable(t *testing.T, command []string, p float64, typ string, conf float64) (*export.OffCPUTable, sampler.Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := sampler.Open(ctx, sampler.Config{Command: command, OffCPU: sampler.OffCPUConfig{Enabled: true, Prob: p}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := export.EncodeCPU(res.Profile)
	if err != nil {
		t.Fatal(err)
	}
	if err := export.AddOffCPU(prof, res.Profile, typ); err != nil {
		t.Fatal(err)
	}
	tab, err := export.OffCPUReport(prof, typ, estimate.Options{Confidence: conf})
	if err != nil {
		t.Fatal(err)
	}
	return tab, res.Stats
}

func offRow(t *testing.T, tab *export.OffCPUTable, fn string) export.OffCPURow {
	t.Helper()
	for _, r := range tab.Rows {
		if r.Function == fn {
			return r
		}
	}
	var fns []string
	for i, r := range tab.Rows {
		if i < 12 {
			fns = append(fns, fmt.Sprintf("%s %.4g", r.Function, r.Cum.Mean))
		}
	}
	t.Fatalf("no row for %s in the off-CPU table (total %.4g ns; first rows: %s)", fn, tab.Total.Mean, strings.Join(fns, ", "))
	return export.OffCPURow{}
}

// TestOffCPURead: the worker's time blocked in read, as it measured it,
// lies in the interval of the off-CPU time of the stacks through
// wait_byte. At p = 0.2 about 50 of 250 intervals are sampled. The
// interval is at 99.9%, so that a calibrated interval fails this test
// once in a thousand runs; the target's own measurement includes the
// microseconds read spends on CPU, far inside the interval's width.
func TestOffCPURead(t *testing.T) {
	tab, kv, st := offCPURun(t, 0.2, export.OffCPUType, 0.999)
	r := offRow(t, tab, "wait_byte")
	truth := kv["blocked_ns"]
	t.Logf("wait_byte off CPU %.4g [%.4g, %.4g] ns, truth %.4g; share of the worker's wall time %.3f (own %.3f); %+v",
		r.Cum.Mean, r.Cum.Low, r.Cum.High, truth, r.Cum.Mean/kv["worker_ns"], truth/kv["worker_ns"], st.OffCPU)
	if st.OffCPU.Sampled == 0 || math.Abs(st.OffCPU.Prob-0.2) > 1e-9 {
		t.Fatalf("off-CPU counters %+v", st.OffCPU)
	}
	if truth < r.Cum.Low || truth > r.Cum.High {
		t.Errorf("blocked in read %.4g ns, outside the interval [%.4g, %.4g]", truth, r.Cum.Low, r.Cum.High)
	}
	if r.Cum.High-r.Cum.Low <= 0 {
		t.Errorf("sampled estimate with an interval of no width: %+v", r.Cum)
	}
}

// TestOffCPUExactWall: with every interval taken (p = 1) the off-CPU part
// is exact, and the wall-clock table gives the worker's split: the time
// through wait_byte is its blocked time to 2%, or less by intervals the
// counters name as lost, and the time through spin (CPU
// samples and waits for a CPU) holds its own computing time at 99.9%; the
// worker thread's total is its wall time.
func TestOffCPUExactWall(t *testing.T) {
	tab, kv, st := offCPURun(t, 1, export.WallType, 0.999)
	read, spin := offRow(t, tab, "wait_byte"), offRow(t, tab, "spin")
	t.Logf("wall: wait_byte %.4g [%.4g, %.4g] (own %.4g), spin %.4g [%.4g, %.4g] (own %.4g); %+v",
		read.Cum.Mean, read.Cum.Low, read.Cum.High, kv["blocked_ns"], spin.Cum.Mean, spin.Cum.Low, spin.Cum.High, kv["compute_ns"], st.OffCPU)
	// A shortfall must be of intervals the counters name as lost (a
	// switch-in the program did not see: docs/statistics.md).
	lost := st.OffCPU.Unseen + st.OffCPU.Stale + st.OffCPU.MapFull + st.OffCPU.RingStart + st.OffCPU.RingEnd + st.OffCPU.Misses
	if d := read.Cum.Mean/kv["blocked_ns"] - 1; d > 0.02 || d < -0.02 && lost == 0 {
		t.Errorf("wall time through wait_byte %.4g ns, own blocked time %.4g (%+.1f%%), %d intervals counted as lost", read.Cum.Mean, kv["blocked_ns"], 100*d, lost)
	}
	if c := kv["compute_ns"]; c < spin.Cum.Low || c > spin.Cum.High {
		t.Errorf("computing %.4g ns, outside the wall interval of spin [%.4g, %.4g]", c, spin.Cum.Low, spin.Cum.High)
	}
	// The worker (the main thread) spends its whole life reading and
	// computing: one thread's wall time is its own measured wall time, to
	// its interval and 3% (the thread's start and exit around it), and the
	// share of wait_byte in it is the share it measured.
	found := false
	for _, th := range tab.Threads {
		if w := kv["worker_ns"]; 0.97*th.Total.Low <= w && w <= 1.03*th.Total.High {
			found = true
			t.Logf("worker thread %d: wall %.4g [%.4g, %.4g] ns, own %.4g; wait_byte share %.3f [%.3f, %.3f], own %.3f",
				th.Tid, th.Total.Mean, th.Total.Low, th.Total.High, w, read.Cum.Mean/th.Total.Mean,
				read.Cum.Low/th.Total.Mean, read.Cum.High/th.Total.Mean, kv["blocked_ns"]/w)
		}
	}
	if !found {
		t.Errorf("no thread's wall time holds the worker's own %.4g ns: %+v", kv["worker_ns"], tab.Threads)
	}
}

// goOffRun samples testdata/sample/gooff (a goroutine blocked on a
// channel about 70% of its life, one on a sync.Mutex about 35%: 10 ms
// period, the mutex held 7 ms of it, 3 ms of computing after each) for
// rounds periods with off-CPU sampling at probability p, and returns the
// table of typ at confidence conf, the target's own measurements and the
// run's counters.
func goOffRun(t *testing.T, rounds int, p float64, typ string, conf float64) (*export.OffCPUTable, map[string]float64, sampler.Stats) {
	t.Helper()
	bpftest.Require(t)
	bin := filepath.Join(t.TempDir(), "gooff")
	build := exec.Command(goTool(t), "build", "-o", bin, filepath.Join("..", "testdata", "sample", "gooff"))
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build gooff: %v\n%s", err, b)
	}
	// The preemption probe reads g.sched at the offsets the binary's
	// DWARF gives: those of the toolchain's runtime (go1.24 and later).
	tab0, err := symtab.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	off, err := tab0.GoSchedOffsets()
	tab0.Close()
	if want := (symtab.GoSched{SP: 56, PC: 64, BP: 96}); err != nil || off != want {
		t.Errorf("g.sched offsets %+v (%v), want %+v", off, err, want)
	}
	kv := filepath.Join(t.TempDir(), "kv")
	tab, st := offCPUTable(t, []string{bin, kv, "10ms", "7ms", "3ms", strconv.Itoa(rounds)}, p, typ, conf)
	return tab, testtarget.ReadKV(t, kv), st
}

// TestOffCPUGo: a Go program whose goroutines block on a channel and on a
// sync.Mutex (testdata/sample/gooff, 200 periods of 10 ms). A goroutine's
// wait does not block its thread; the goroutine probes see it park and run
// again. At p = 0.5 (about 100 sampled parks each) and 99.9% the off-CPU
// time through main.waitChan and main.waitMutex (blocked and then
// runnable) holds each goroutine's own measurement, and the wall time
// through chanWorker (its waits, its computing on CPU and its thread's
// preemptions) holds its whole life: a calibrated interval fails each
// check once in a thousand runs, the test about 3 in a thousand. The
// threads idle in the Go scheduler are left out (their stacks would show
// runtime.findRunnable).
func TestOffCPUGo(t *testing.T) {
	tab, own, st := goOffRun(t, 200, 0.5, export.WallType, 0.999)
	if len(st.OffCPU.GoExes) != 1 || st.OffCPU.GoSampled == 0 || st.OffCPU.GoEnded == 0 || len(st.OffCPU.GoNoPreempt) > 0 {
		t.Fatalf("goroutine probes not attached or silent: %+v", st.OffCPU)
	}
	// The park-time stacks run through the runtime's channel receive.
	if r := offRow(t, tab, "runtime.chanrecv1"); r.Cum.Mean < 0.5*own["chan_blocked_ns"] {
		t.Errorf("runtime.chanrecv1 %.4g ns, under half the channel wait %.4g", r.Cum.Mean, own["chan_blocked_ns"])
	}
	for _, c := range []struct{ fn, key string }{
		{"main.waitChan", "chan_blocked_ns"},
		{"main.waitMutex", "mutex_blocked_ns"},
		{"main.chanWorker", "chan_wall_ns"},
	} {
		r, truth := offRow(t, tab, c.fn), own[c.key]
		t.Logf("%s: wall %.4g [%.4g, %.4g] ns, own %s %.4g (%.1f%% of the run's %.4g)",
			c.fn, r.Cum.Mean, r.Cum.Low, r.Cum.High, c.key, truth, 100*truth/own["wall_ns"], own["wall_ns"])
		if truth < r.Cum.Low || truth > r.Cum.High {
			t.Errorf("%s: own %s %.4g ns outside the interval [%.4g, %.4g]", c.fn, c.key, truth, r.Cum.Low, r.Cum.High)
		}
	}
	t.Logf("%+v", st.OffCPU)
}

// TestOffCPUGoCoverage is the measurement behind docs/coverage.md
// ("Goroutines off CPU"; make coverage-offcpu-go): TICKPROF_GO_COVERAGE_RUNS
// runs of gooff at p = 0.5, each checking whether the 95% interval of the
// off-CPU time through main.waitChan and main.waitMutex holds the
// goroutine's own measurement. It fails when either holds it in fewer runs
// than the binomial tolerance allows (at least 8 of 10: a calibrated
// interval falls below it with probability 0.012 per function). Skipped
// unless the variable is set: it takes about 5 s a run.
func TestOffCPUGoCoverage(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("TICKPROF_GO_COVERAGE_RUNS"))
	if runs <= 0 {
		t.Skip("set TICKPROF_GO_COVERAGE_RUNS to run the coverage measurement")
	}
	held := map[string]int{}
	for i := 0; i < runs; i++ {
		tab, own, st := goOffRun(t, 200, 0.5, export.OffCPUType, 0.95)
		for _, c := range []struct{ fn, key string }{{"main.waitChan", "chan_blocked_ns"}, {"main.waitMutex", "mutex_blocked_ns"}} {
			r, truth := offRow(t, tab, c.fn), own[c.key]
			ok := r.Cum.Low <= truth && truth <= r.Cum.High
			if ok {
				held[c.fn]++
			}
			t.Logf("run %d %s: %.4g [%.4g, %.4g] ms, own %.4g ms (%.1f%% of the run), longest wait %.4g ms, held %v; go parks %d sampled %d lost %d",
				i, c.fn, r.Cum.Mean/1e6, r.Cum.Low/1e6, r.Cum.High/1e6, truth/1e6, 100*truth/own["wall_ns"],
				own[strings.TrimSuffix(c.key, "blocked_ns")+"max_ns"]/1e6, ok, st.OffCPU.GoParks, st.OffCPU.GoSampled,
				st.OffCPU.GoMapFull+st.OffCPU.GoRingStart+st.OffCPU.GoRingEnd+st.OffCPU.GoUnseen)
		}
	}
	// The least count k with P(X < k) <= 0.015 for X ~ Binomial(runs,
	// 0.95): a calibrated interval falls below it at most that often.
	least, tail := 0, 0.0
	for k := 0; k <= runs; k++ {
		pk := math.Exp(lgamma(runs+1) - lgamma(k+1) - lgamma(runs-k+1) + float64(k)*math.Log(0.95) + float64(runs-k)*math.Log(0.05))
		if tail+pk > 0.015 {
			least = k
			break
		}
		tail += pk
	}
	for _, fn := range []string{"main.waitChan", "main.waitMutex"} {
		t.Logf("%s: the interval held the goroutine's own measurement in %d of %d runs", fn, held[fn], runs)
		if held[fn] < least {
			t.Errorf("%s: held in %d of %d runs, fewer than %d", fn, held[fn], runs, least)
		}
	}
}

func lgamma(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}
