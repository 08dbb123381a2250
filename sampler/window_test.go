// SPDX-License-Identifier: Apache-2.0

package sampler_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/sampler"
)

// TestRunWindows: consecutive windows of one session are contiguous, carry
// the target's PID, and together hold every sample the session kept.
func TestRunWindows(t *testing.T) {
	bpftest.Require(t)
	burn := buildC(t, "burn")
	sp, err := proc.StartHeld([]string{burn, "30", "/dev/null"}, proc.Stdio{Out: os.Stdout, Err: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sp.Kill(); sp.Wait() }()
	sess, err := sampler.Open(context.Background(), sampler.Config{Frequency: 99, PIDs: []int{sp.Pid}, Exe: sp.Exe})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	sp.Release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ws []*sampler.Profile
	err = sess.RunWindows(ctx, time.Second, func(d *sampler.Profile) error {
		ws = append(ws, d)
		if len(ws) == 4 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) < 4 {
		t.Fatalf("%d windows", len(ws))
	}
	var total int64
	for i, w := range ws {
		if i > 0 {
			prevEnd := ws[i-1].Start.Add(ws[i-1].Duration)
			if !w.Start.Equal(prevEnd) {
				t.Errorf("window %d starts at %v, the previous ended at %v", i, w.Start, prevEnd)
			}
		}
		for _, s := range w.Samples {
			if s.Pid != int64(sp.Pid) {
				t.Errorf("window %d: sample of PID %d, want %d", i, s.Pid, sp.Pid)
			}
			total += s.Count
		}
	}
	if st := sess.Stats(); uint64(total) != st.Kept {
		t.Errorf("windows hold %d samples, the session kept %d", total, st.Kept)
	}
}
