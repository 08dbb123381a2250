// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/tickprof/tickprof/bench/benchkit"
	"github.com/tickprof/tickprof/internal/proc"
	"github.com/tickprof/tickprof/sampler"
)

// bpfTime measures the sampling program's run time per sample of the C++
// program (the kernel's BPF statistics over the run divided by the target's
// samples: an upper bound, as the program's early returns for other tasks
// count too), with frame pointers only and with the stack copy,
// interleaved. This is the sampling work done in the target's context; it
// is far less disturbed by other load than the target's CPU time.
func (b *bench) bpfTime(reps int) error {
	stats, err := benchkit.EnableStats()
	if err != nil {
		return err
	}
	defer stats.Close()
	confs := []struct {
		name string
		cfg  sampler.Config
	}{
		{"frame pointers", sampler.Config{FramePointersOnly: true}},
		{"stack copy (28 KiB)", sampler.Config{}},
	}
	per := make([][]float64, len(confs))
	for r := 0; r < reps; r++ {
		for i, c := range confs {
			ns, err := b.bpfTimeRun(c.cfg)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			per[i] = append(per[i], ns)
		}
	}
	fmt.Printf("### BPF run time per sample of the C++ workload at %d Hz (%d runs each, interleaved; median [min, max])\n\n", b.freq, reps)
	fmt.Printf("| configuration | BPF time per target sample | at %d Hz, share of the target's CPU |\n|---|---|---|\n", b.freq)
	for i, c := range confs {
		share := make([]float64, len(per[i]))
		for j, v := range per[i] {
			share[j] = 100 * v * float64(b.freq) / 1e9
		}
		fmt.Printf("| %s | %s µs | %s%% |\n", c.name, benchkit.MedRange(scale(per[i], 1e-3), "%.2f"), benchkit.MedRange(share, "%.2f"))
	}
	fmt.Println()
	return nil
}

// bpfTimeRun samples one run of the C++ program and returns the sampling
// program's run time per target sample in ns.
func (b *bench) bpfTimeRun(cfg sampler.Config) (float64, error) {
	h, err := proc.StartHeld([]string{b.cxx, strconv.Itoa(b.rounds)}, proc.Stdio{Out: io.Discard, Err: io.Discard})
	if err != nil {
		return 0, err
	}
	defer h.Wait()
	cfg.Frequency, cfg.PIDs, cfg.Exe = b.freq, []int{h.Pid}, h.Exe
	s, err := sampler.Open(context.Background(), cfg)
	if err != nil {
		h.Kill()
		return 0, err
	}
	defer s.Close()
	h.Release()
	res, err := s.Run(context.Background())
	if err != nil {
		return 0, err
	}
	st := res.Stats
	if st.Kept == 0 {
		return 0, fmt.Errorf("no samples of the target")
	}
	return float64(st.BPFRuntime.Nanoseconds()) / float64(st.Kept), nil
}

func scale(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}
