// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/symbolize"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestTimeCommandCallerStacks runs `time -u tp_frameless_work` on
// testdata/c/callers.c built -O2 -fomit-frame-pointer (its callers keep
// data in rbp): with the default --user-stack every crossing record's
// caller stack in the profile reaches main through level1..3; with
// --user-stack 0 (the kernel's frame-pointer walk) none does, each is marked
// truncated, and the profile's comments say where and why.
func TestTimeCommandCallerStacks(t *testing.T) {
	bpftest.Require(t)
	bin := testtarget.C(t, "c/callers.c", "callers", "-O2", "-fomit-frame-pointer")
	for _, tc := range []struct {
		userStack int
		wantMain  bool
	}{{symbolize.MaxStackBytes, true}, {0, false}} {
		dir := t.TempDir()
		prof := filepath.Join(dir, "prof.pb.gz")
		f := timeFlags{users: []string{"tp_frameless_work"}, clock: "ns", confidence: "95%", maxProbes: 256,
			interval: 200 * time.Millisecond, pprofOut: prof, calDir: dir, userStack: tc.userStack}
		var out bytes.Buffer
		if err := runTime(context.Background(), &out, newNoticeWriter(), f, []string{bin, "100", "200000"}); err != nil {
			t.Fatal(err)
		}
		r, err := os.Open(prof)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		var withMain, truncated, stacks int64
		for _, s := range p.Sample {
			if len(s.Location) < 2 { // the target alone: calls without a record
				continue
			}
			stacks += s.Value[0]
			var names []string
			for _, l := range s.Location {
				for _, ln := range l.Line {
					names = append(names, ln.Function.Name)
				}
			}
			joined := strings.Join(names, " < ")
			if strings.Contains(joined, "level1 < level2 < level3 < main") {
				withMain += s.Value[0]
			}
			if strings.Contains(joined, "[truncated stack]") {
				truncated += s.Value[0]
			}
			t.Logf("--user-stack %d: %d calls: %s", tc.userStack, s.Value[0], joined)
		}
		comments := strings.Join(p.Comments, "\n")
		switch {
		case stacks == 0:
			t.Errorf("--user-stack %d: no caller stacks", tc.userStack)
		case tc.wantMain && (withMain != stacks || truncated != 0):
			t.Errorf("--user-stack %d: %d of %d calls' stacks reach main, %d truncated; want all, none; comments:\n%s", tc.userStack, withMain, stacks, truncated, comments)
		case !tc.wantMain && (withMain != 0 || truncated != stacks || !strings.Contains(comments, "caller stacks that ended before their outermost frame")):
			t.Errorf("--user-stack %d: %d of %d reach main, %d truncated, comments:\n%s", tc.userStack, withMain, stacks, truncated, comments)
		}
	}
}
