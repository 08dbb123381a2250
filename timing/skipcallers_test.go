// SPDX-License-Identifier: Apache-2.0

package timing_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/timing"
)

// With SkipCallers the caller stacks stay out of the result, and the
// crossing records they would hold are still counted: only the records
// lost are Dropped (every crossing would be, were the records not counted).
func TestSkipCallers(t *testing.T) {
	bpftest.Require(t)
	s, err := timing.Open(context.Background(), timing.Config{
		Command:     []string{"ls", "-lR", "/usr/share"},
		Stdout:      io.Discard,
		Targets:     timing.Targets{Users: []string{"libc.so.6:malloc"}},
		Clock:       timing.Clock{Kind: timing.ClockJiffies},
		Duration:    2 * time.Second,
		SkipCallers: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range res.Targets {
		t.Logf("%s: %d calls, %d crossings, %d dropped, %d caller stacks", tr.Name, tr.Calls, tr.Crossings, tr.Dropped, len(tr.Callers))
		if len(tr.Callers) != 0 {
			t.Errorf("%s: %d caller stacks with SkipCallers", tr.Name, len(tr.Callers))
		}
		if tr.Crossings == 0 {
			t.Fatalf("%s: no tick crossings in %d calls: nothing recorded to count", tr.Name, tr.Calls)
		}
		if tr.Dropped >= tr.Crossings {
			t.Errorf("%s: %d of %d crossings dropped: the records were not counted", tr.Name, tr.Dropped, tr.Crossings)
		}
	}
}
