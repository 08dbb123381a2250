package sampler_test

import (
	"math"
	"os/exec"
	"strconv"
	"testing"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
	"github.com/tickprof/tickprof/sampler"
)

// TestRephaseBreaksAliasing samples testdata/sample/periodic.c, which runs
// phase_a in the first half of every sampling period of the monotonic clock
// and phase_b in the second (the same code: half the time each), pinned to
// one CPU. A sampling clock on a fixed grid sees it at one phase (logged:
// phase_a's share is then near 0 or 1); restarted at random phases, the
// share must be 0.5 within its tolerance. Samples between two restarts
// share a phase, in runs of at most 12 (sampler's rephaseMax), so the
// variance is at most 12 times the binomial one: the tolerance is 3.29
// standard deviations of that, failing a correct sampler in at most 0.1%
// of runs.
func TestRephaseBreaksAliasing(t *testing.T) {
	bpftest.Require(t)
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skipf("taskset (util-linux) not installed: %v", err)
	}
	bin := testtarget.C(t, "sample/periodic.c", "periodic", "-O2", "-fomit-frame-pointer", "-fasynchronous-unwind-tables")
	const hz = 999
	period := strconv.Itoa(int(1e9) / hz)
	share := func(fixed bool) (float64, int64) {
		_, p, _ := sampleWith(t, sampler.Config{Frequency: hz, FixedPhase: fixed}, taskset, "-c", "0", bin, "3", period)
		var a, n int64
		for _, s := range p.Sample {
			inA := stackHas(s, func(f string) bool { return f == "phase_a" })
			if inA || stackHas(s, func(f string) bool { return f == "phase_b" }) {
				n += s.Value[0]
				if inA {
					a += s.Value[0]
				}
			}
		}
		if n == 0 {
			t.Fatalf("no samples in phase_a or phase_b (fixed phase %v)", fixed)
		}
		return float64(a) / float64(n), n
	}
	fixed, fn := share(true)
	t.Logf("fixed phase: phase_a's share %.3f of %d samples", fixed, fn)
	got, n := share(false)
	tol := 3.29 * math.Sqrt(12*0.25/float64(n))
	t.Logf("restarted at random phases: phase_a's share %.3f of %d samples (want 0.5 ± %.3f)", got, n, tol)
	if math.Abs(got-0.5) > tol {
		t.Errorf("phase_a's share %.3f of %d samples, want 0.5 ± %.3f", got, n, tol)
	}
}
