// SPDX-License-Identifier: Apache-2.0

package selfcost

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Self agrees with what the kernel accounts: the CPU time grows by the
// time a spin burns, the wall time since start is at least the spin's
// and the test binary's start, and the peak RSS holds a block touched.
func TestSelf(t *testing.T) {
	before, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 64<<20)
	for i := range block {
		block[i] = byte(i)
	}
	spin := 300 * time.Millisecond
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	for start := ts.Nano(); ts.Nano()-start < int64(spin); {
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	}
	after, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if d := after.CPU() - before.CPU(); d < spin {
		t.Errorf("CPU grew by %v over a spin of %v of this thread's CPU time", d, spin)
	}
	if after.Wall < spin || after.Wall > time.Hour {
		t.Errorf("wall time since start %v", after.Wall)
	}
	if after.Wall-before.Wall < spin-20*time.Millisecond {
		t.Errorf("wall time grew by %v over a spin of %v", after.Wall-before.Wall, spin)
	}
	if after.PeakRSS < int64(len(block)) {
		t.Errorf("peak RSS %d bytes with a block of %d touched", after.PeakRSS, len(block))
	}
	_ = block[len(block)-1]
	if s := after.String(); !strings.Contains(s, "peak RSS") || strings.Contains(s, "BPF") {
		t.Errorf("String without BPF statistics: %q", s)
	}
	after.AddBPF(2*time.Millisecond, 1000)
	if s := after.String(); !strings.Contains(s, "BPF programs 2.00 ms in 1000 runs (2.00 µs each)") {
		t.Errorf("String with BPF statistics: %q", s)
	}
}
