// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"strings"
	"testing"

	"github.com/tickprof/tickprof/sampler"
)

// TestOffCPUWarningsOnce checks that the off-CPU warnings a session's
// counters carry reach the log once each, however many windows repeat them,
// and that a new one is said when it appears.
func TestOffCPUWarningsOnce(t *testing.T) {
	said := map[string]bool{}
	st := sampler.OffCPUStats{GoRefused: []string{"/srv/app: attaching runtime.gopark: no such symbol"}}
	first := offCPUWarnings(st, said)
	if len(first) != 1 || !strings.Contains(first[0], "/srv/app") || !strings.Contains(first[0], "by thread") {
		t.Fatalf("first window: %q", first)
	}
	if again := offCPUWarnings(st, said); len(again) != 0 {
		t.Fatalf("second window repeated %q", again)
	}
	st.GoNoPreempt = []string{"/srv/other: no DWARF"}
	st.GoDetached = "goroutine probes detached at 12:00:00: 3% of a CPU"
	next := offCPUWarnings(st, said)
	if len(next) != 2 || !strings.Contains(next[0], "/srv/other") || !strings.Contains(next[1], "detached") {
		t.Fatalf("new warnings: %q", next)
	}
}
