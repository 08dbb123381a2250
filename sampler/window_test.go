package sampler

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
)

// TestRunWindows: consecutive windows of one session are contiguous, carry
// the target's PID, and together hold every sample the session kept.
func TestRunWindows(t *testing.T) {
	bpftest.Require(t)
	burn := buildC(t, t.TempDir(), "burn")
	sp, err := Spawn([]string{burn, "30", "/dev/null"}, nil, os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Kill()
	sess, err := Start(Config{Frequency: 99, PIDs: []int{sp.PID()}, Exe: sp.Exe})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sp.Release(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ws []*export.CPUData
	err = sess.RunWindows(ctx, sp.Done(), time.Second, func(d *export.CPUData) error {
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
			if s.Pid != int64(sp.PID()) {
				t.Errorf("window %d: sample of PID %d, want %d", i, s.Pid, sp.PID())
			}
			total += s.Count
		}
	}
	if st := sess.Stats(); uint64(total) != st.Kept {
		t.Errorf("windows hold %d samples, the session kept %d", total, st.Kept)
	}
}
