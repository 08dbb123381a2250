// SPDX-License-Identifier: Apache-2.0

package budget

import (
	"os"
	"testing"
	"time"

	"github.com/tickprof/tickprof/estimate"
)

// TestProcessCPU reads this test's own CPU time with both clocks, which
// a busy loop of 0.2 s of CPU must advance by about that much; the
// process's clock is the ns one on this kernel.
func TestProcessCPU(t *testing.T) {
	clk, _, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if clk.res != time.Nanosecond {
		t.Errorf("CPU clock resolution %v: /proc/PID/task/TID/schedstat unread", clk.res)
	}
	for _, read := range []func(int) (time.Duration, error){threadsCPU, statCPU} {
		c0, err := read(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		var x uint64
		for c := c0; c-c0 < 200*time.Millisecond; {
			for i := 0; i < 1e6; i++ {
				x = x*6364136223846793005 + 1
			}
			if c, err = read(os.Getpid()); err != nil {
				t.Fatal(err)
			}
		}
		c1, _ := read(os.Getpid())
		if d := c1 - c0; d < 200*time.Millisecond || d > time.Second {
			t.Errorf("CPU time advanced %v over a 0.2 s busy loop (x %d)", d, x)
		}
	}
}

// TestPerCPU: a rate is scaled to the target's CPU time only below a
// whole CPU.
func TestPerCPU(t *testing.T) {
	r := estimate.Result{Mean: 1000, Low: 900, High: 1100, StdErr: 50}
	for _, c := range []struct {
		share, want float64
	}{{0, 1000}, {0.25, 4000}, {1, 1000}, {1.8, 1000}} {
		got := perCPU(r, c.share)
		if got.Mean != c.want || got.High != c.want*1.1 {
			t.Errorf("perCPU(share %v) = %+v, want mean %v", c.share, got, c.want)
		}
	}
}
