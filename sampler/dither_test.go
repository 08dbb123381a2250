// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"bufio"
	"bytes"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/sampler"
)

// lockHz, lockShare and lockSeconds set the locking test: testdata's
// periodic target, pinned to CPU 0, runs phase_a in the first 30% of every
// 1/99 s of the monotonic clock and phase_b in the rest, for 5 s.
const (
	lockHz      = 99
	lockShare   = 0.3
	lockSeconds = 5
	// lockInflation is the most a dithered clock multiplies the variance
	// of a share by, for a program periodic at any frequency (simulated:
	// TestDitherSpectrum); at the sampling rate itself it is about 1.
	lockInflation = 1.5
	// lockZ is the two-sided 99.9% normal quantile: a correct sampler
	// fails the dithered check in at most 0.1% of runs.
	lockZ = 3.29
	// lockMinSamples is the fewest samples of the two phases with which a
	// locked clock (share 0 or 1 against 0.3) lies beyond lockZ from the
	// truth (38 would do: 0.3 / sqrt(1.5 x 0.21 / 38) = 3.3); with fewer the
	// machine is too busy for the test.
	lockMinSamples = 40
)

// lockResult is phase_a's sampled share of the samples in either phase,
// and the share of the target's CPU time it measured itself.
type lockResult struct {
	a, n  int64
	truth float64
}

func (r lockResult) share() float64 { return float64(r.a) / float64(r.n) }

// z is how many standard deviations of a dithered sampler's share (the
// binomial one times lockInflation) the share lies from the truth.
func (r lockResult) z() float64 {
	return math.Abs(r.share()-r.truth) / math.Sqrt(lockInflation*r.truth*(1-r.truth)/float64(r.n))
}

// TestDitherBreaksLocking samples a program that keeps time with a
// fixed-period sampler: testdata/sample/periodic.c runs phase_a in the
// first 30% of every 1/99 s and phase_b in the rest (the same code),
// pinned to one CPU, and measures the CPU time of each phase itself. A
// clock on a fixed grid of 1/99 s sees it at one phase: tickprof with
// FixedPeriod and perf record -F 99 (when installed) must both miss the
// truth by more than lockZ standard deviations. With dithered periods, the
// default, phase_a's share must lie within lockZ standard deviations of
// the truth (binomial variance times lockInflation): a false alarm rate of
// at most 0.1%.
func TestDitherBreaksLocking(t *testing.T) {
	bpftest.Require(t)
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skipf("taskset (util-linux) not installed: %v", err)
	}
	bin := testtarget.C(t, "sample/periodic.c", "periodic", "-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables")
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{taskset, "-c", "0", bin, strconv.Itoa(lockSeconds), strconv.Itoa(int(1e9) / lockHz),
			strconv.FormatFloat(lockShare, 'f', -1, 64), filepath.Join(dir, out)}
	}
	truth := func(out string) float64 {
		m := testtarget.ReadKV(t, filepath.Join(dir, out))
		return m["cpu_a"] / (m["cpu_a"] + m["cpu_b"])
	}
	run := func(fixed bool) lockResult {
		_, p, _ := sampleWith(t, sampler.Config{Frequency: lockHz, FixedPeriod: fixed}, args("truth.txt")...)
		r := phaseShare(p)
		r.truth = truth("truth.txt")
		return r
	}
	fixed := run(true)
	t.Logf("fixed period: phase_a's share %.3f of %d samples, truth %.3f (%.1f sd)", fixed.share(), fixed.n, fixed.truth, fixed.z())
	if fixed.n < lockMinSamples {
		t.Skipf("the target got only %d samples in 5 s at 99 Hz: the machine is too busy to show locking", fixed.n)
	}
	if fixed.z() < lockZ {
		t.Errorf("the fixed period was not locked: phase_a's share %.3f of %d samples, truth %.3f", fixed.share(), fixed.n, fixed.truth)
	}
	if perf, err := exec.LookPath("perf"); err != nil {
		t.Logf("perf not installed: %v", err)
	} else if r, err := perfShare(perf, dir, args("perf-truth.txt")); err != nil {
		t.Logf("perf record failed, not compared: %v", err)
	} else {
		r.truth = truth("perf-truth.txt")
		t.Logf("perf record -F %d: phase_a's share %.3f of %d samples, truth %.3f (%.1f sd)", lockHz, r.share(), r.n, r.truth, r.z())
		if r.n >= lockMinSamples && r.z() < lockZ {
			t.Errorf("perf's fixed period was not locked: phase_a's share %.3f of %d samples, truth %.3f", r.share(), r.n, r.truth)
		}
	}
	got := run(false)
	t.Logf("dithered periods: phase_a's share %.3f of %d samples, truth %.3f (%.1f sd)", got.share(), got.n, got.truth, got.z())
	if got.n == 0 || got.z() > lockZ {
		t.Errorf("dithered periods: phase_a's share %.3f of %d samples, truth %.3f: more than %.2f sd off", got.share(), got.n, got.truth, lockZ)
	}
}

// phaseShare counts the samples whose stack holds phase_a or phase_b.
func phaseShare(p *profile.Profile) lockResult {
	var r lockResult
	for _, s := range p.Sample {
		inA := stackHas(s, func(f string) bool { return f == "phase_a" })
		if inA || stackHas(s, func(f string) bool { return f == "phase_b" }) {
			r.n += s.Value[0]
			if inA {
				r.a += s.Value[0]
			}
		}
	}
	return r
}

// perfShare runs args under perf record -F lockHz on CPU 0's cpu-clock
// (the per-CPU events tickprof uses, at perf's own fixed period) and counts
// the samples of the target whose leaf is phase_a or phase_b. The clock
// reads between chunks of work, whose leaf is the vDSO, are left out of
// both phases alike.
func perfShare(perf, dir string, args []string) (lockResult, error) {
	data := filepath.Join(dir, "perf.data")
	rec := append([]string{"record", "-q", "-F", strconv.Itoa(lockHz), "-e", "cpu-clock", "-C", "0", "-o", data, "--"}, args...)
	if out, err := exec.Command(perf, rec...).CombinedOutput(); err != nil {
		return lockResult{}, &perfError{err, out}
	}
	out, err := exec.Command(perf, "script", "-i", data, "-F", "comm,ip,sym").Output()
	if err != nil {
		return lockResult{}, err
	}
	var r lockResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[0] != "periodic" {
			continue
		}
		switch f[2] {
		case "phase_a":
			r.a++
			r.n++
		case "phase_b":
			r.n++
		}
	}
	return r, nil
}

// perfError is a failed perf command with its output.
type perfError struct {
	err error
	out []byte
}

func (e *perfError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(string(e.out)) }
