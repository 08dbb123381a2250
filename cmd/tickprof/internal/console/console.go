// SPDX-License-Identifier: Apache-2.0

// Package console runs a timing or sampling session for a person at a
// terminal, the way the commands time, sample and demo show it: it says
// what it measures, shows the live progress, writes the outputs before the
// probes come off, and says how detaching went.
//
// Like every package under cmd/tickprof/internal it may import any library
// (internal/layers), and only cmd/tickprof and its internal packages import
// it.
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/table"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/selfcost"
	"github.com/tickprof/tickprof/internal/units"
	"github.com/tickprof/tickprof/sampler"
	"github.com/tickprof/tickprof/timing"
)

// selfHelper starts this binary as the helper the probes are handed to
// once attached (timing.Config.DetachHelper): whatever ends the program
// from then on, SIGKILL included, the helper detaches them, and the
// program never waits for the kernel to close links at its exit. The
// program must run timing.RunDetachHelper when timing.IsDetachHelper says
// it was started as one.
func selfHelper() *exec.Cmd { return exec.Command("/proc/self/exe") }

// Timing runs a timing session, saying on errOut what it times and
// showing its progress there, calls write with the result and then
// detaches the probes (by a helper process, see selfHelper). Warnings go
// to errOut.
func Timing(ctx context.Context, errOut io.Writer, cfg timing.Config, write func(*timing.Result) error) (*timing.Result, error) {
	cfg.Warn = func(msg string) { fmt.Fprintf(errOut, "tickprof: warning: %s\n", msg) }
	cfg.DetachHelper = selfHelper
	prog := table.NewProgress(errOut)
	cfg.OnProgress = prog.Update
	s, err := timing.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	clk := s.Clock()
	where := "every process"
	if s.PID() != 0 {
		where = fmt.Sprintf("process %d", s.PID())
	}
	fmt.Fprintf(errOut, "tickprof: timing %d target(s) in %s with clock %s (d = %s); Ctrl-C to stop\n",
		len(s.Targets()), where, clk, units.Ns(clk.Resolution()))
	run, err := s.Run(ctx)
	prog.Clear()
	if err != nil {
		return nil, err
	}
	// The results are written before the probes come off (a large probe
	// set takes a while to detach, and nothing is lost if the program is
	// killed meanwhile).
	werr := write(run)
	table.WriteOwnCost(errOut, table.TimeCost(run))
	detach(s, errOut)
	return run, werr
}

// detach removes the probes after the results are out; Ctrl-C or SIGTERM
// meanwhile ends the wait, and the helper finishes alone.
func detach(s *timing.Session, errOut io.Writer) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := s.Detach(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintln(errOut, "tickprof: interrupted while detaching: the results are written; the probes are removed as tickprof exits")
	case err != nil:
		fmt.Fprintf(errOut, "tickprof: warning: detach: %v\n", err)
	}
}

// SampleOutput says what a sampling run writes and prints.
type SampleOutput struct {
	File       string  // the pprof profile ("": none)
	Top        int     // table rows (0: all)
	Confidence float64 // confidence of the table's intervals
	JSON       bool    // the table as JSON
	// OffCPU is export.OffCPUType or export.WallType when the run sampled
	// time off CPU (cfg.OffCPU): the profile's default type and the table's.
	OffCPU string
}

// ErrNoSamples is returned by Sample when no sample fell in the target.
var ErrNoSamples = errors.New("no samples of the target: it was idle or exited at once")

// Sample records a sampling run, writes its profile, and prints a line of
// statistics on errw and the function table on w. What was gathered is
// written also when the run ends in an error.
func Sample(ctx context.Context, w, errw io.Writer, cfg sampler.Config, o SampleOutput) error {
	s, err := sampler.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	res, runErr := s.Run(ctx)
	if res == nil {
		return runErr
	}
	data, st := res.Profile, res.Stats
	data.Comments = append(data.Comments, "tickprof's own cost until the profile was encoded: "+sampleCost(st).String())
	prof, err := export.EncodeCPU(data)
	if err != nil {
		return err
	}
	if o.OffCPU != "" {
		if err := export.AddOffCPU(prof, data, o.OffCPU); err != nil {
			return err
		}
	}
	if o.File != "" {
		if err := export.WriteProfileFile(o.File, prof); err != nil {
			return err
		}
	}
	var tab *export.CPUTable
	if runErr == nil && st.Kept > 0 {
		if tab, err = export.CPUReport(prof, estimate.Options{Confidence: o.Confidence}); err != nil {
			return err
		}
	}
	cost := sampleCost(st)
	table.WriteSampleStats(errw, st, cfg.Frequency, data.Duration, o.File, cost)
	if runErr != nil {
		return runErr
	}
	if o.OffCPU != "" {
		return offCPUTable(w, errw, prof, st, o)
	}
	if st.Kept == 0 {
		return ErrNoSamples
	}
	if o.JSON {
		return export.WriteJSON(w, struct {
			*export.CPUTable
			OwnCost selfcost.Cost `json:"own_cost"`
		}{tab, cost})
	}
	return export.WriteCPUTable(w, tab, o.Top, false)
}

// sampleCost is this process's cost so far with the sampling program's
// run time, when the kernel counted it.
func sampleCost(st sampler.Stats) selfcost.Cost {
	c, _ := selfcost.Self() // a partial cost (no wall time) is still the cost
	if st.BPFStats {
		c.AddBPF(st.BPFRuntime, st.BPFRuns)
	}
	return c
}

// offCPUTable prints the off-CPU counters on errw and the off-CPU or wall
// table on w.
func offCPUTable(w, errw io.Writer, prof *profile.Profile, st sampler.Stats, o SampleOutput) error {
	oc := st.OffCPU
	how := "as given"
	if oc.SwitchRate > 0 {
		how = fmt.Sprintf("from %.4g to %.4g, chosen from the targets' switch rate for a %.0f%% CPU budget", oc.MinProb, oc.MaxProb, 100*sampler.DefaultOffCPUBudget)
	}
	fmt.Fprintf(errw, "off-CPU: %d intervals begun, %d sampled, %d ended (p = %.4g at the end, %s); lost: %d map full, %d ring full at start, %d at end, %d ends without start, %d starts without end, %d switch-ins unseen, %d runs skipped; %d still open at stop\n",
		oc.Switches, oc.Sampled, oc.Ended, oc.Prob, how, oc.MapFull, oc.RingStart, oc.RingEnd, oc.Unmatched, oc.Stale, oc.Unseen, oc.Misses, oc.Open)
	if oc.Runtime > 0 && oc.Runs > 0 {
		fmt.Fprintf(errw, "off-CPU program: %d runs, %.0f ns each on average (kernel BPF statistics)\n", oc.Runs, float64(oc.Runtime.Nanoseconds())/float64(oc.Runs))
	}
	for _, why := range oc.GoRefused {
		fmt.Fprintf(errw, "warning: goroutine probes not attached (%s): that program's off-CPU time is by thread, a goroutine's waits shown under the thread that waited\n", why)
	}
	if len(oc.GoExes) > 0 {
		fmt.Fprintf(errw, "goroutines (%s): %d parks, %d sampled, %d ended; lost: %d map full, %d ring full at start, %d at end, %d executes unseen; probes %d runs, %.0f ns each on average\n",
			strings.Join(oc.GoExes, ", "), oc.GoParks, oc.GoSampled, oc.GoEnded, oc.GoMapFull, oc.GoRingStart, oc.GoRingEnd, oc.GoUnseen, oc.GoRuns, float64(oc.GoRuntime.Nanoseconds())/math.Max(1, float64(oc.GoRuns)))
		for _, why := range oc.GoNoPreempt {
			fmt.Fprintf(errw, "goroutines: preempted goroutines' waits not traced: %s\n", why)
		}
		if oc.GoDetached != "" {
			fmt.Fprintf(errw, "warning: %s (%d goroutine intervals open then, dropped)\n", oc.GoDetached, oc.GoDropped)
		}
	}
	if m := oc.MeanSampledNs; m > 0 && m < sampler.ObserverBiasBelowNs {
		fmt.Fprintf(errw, "warning: the sampled intervals off CPU lasted %.3g µs on average (the exact mean of those seen, not an estimate): at this scale taking a sample lengthens the interval it samples (16.8 µs for waits of 10 µs, measured), so the off-CPU times below are biased upward (docs/statistics.md, \"Observer effect\")\n", m/1e3)
	}
	tab, err := export.OffCPUReport(prof, o.OffCPU, estimate.Options{Confidence: o.Confidence})
	if err != nil {
		return err
	}
	return export.WriteOffCPUTable(w, tab, o.Top, o.JSON)
}
