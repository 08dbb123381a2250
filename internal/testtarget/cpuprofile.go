// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"io"
	"math"
	"runtime/pprof"
	"testing"
	"time"
)

// CPUProfile writes to w a runtime/pprof CPU profile of this process
// spinning for d (in CPUProfile, called from the test: the test's function
// is on every sample's stack). It skips the test when CPU profiling is
// unavailable.
func CPUProfile(t testing.TB, w io.Writer, d time.Duration) {
	t.Helper()
	if err := pprof.StartCPUProfile(w); err != nil {
		t.Skipf("CPU profiling unavailable: %v", err)
	}
	end := time.Now().Add(d)
	x := 1.0
	for time.Now().Before(end) {
		x = math.Sqrt(x + 1)
	}
	pprof.StopCPUProfile()
}
