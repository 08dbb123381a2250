package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/timing"
	"github.com/tickprof/tickprof/units"
)

// detachHelper starts this binary as the helper the probes are handed to
// once attached (timing.Config.DetachHelper, loader.Session.HandOff):
// whatever ends tickprof from then on, SIGKILL included, the helper
// detaches them, and tickprof never waits for the kernel to close links
// at its exit.
func detachHelper() *exec.Cmd { return exec.Command("/proc/self/exe") }

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

// runDetachHelper is the process loader.Session.HandOff starts.
func runDetachHelper() {
	if err := loader.DetachHelper(); err != nil {
		fmt.Fprintln(os.Stderr, "tickprof: detach helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runTiming runs a timing session, saying on errOut what it times and
// showing its progress there, calls write with the result and then
// detaches the probes.
func runTiming(ctx context.Context, errOut io.Writer, cfg timing.Config, write func(*timing.Result) error) (*timing.Result, error) {
	cfg.Warn = func(msg string) { fmt.Fprintf(errOut, "tickprof: warning: %s\n", msg) }
	cfg.DetachHelper = detachHelper
	s, err := timing.OpenContext(ctx, cfg)
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
	prog := export.NewProgress(errOut)
	run, err := s.Run(ctx, prog.Update)
	prog.Clear()
	if err != nil {
		return nil, err
	}
	// The results are written before the probes come off (a large probe
	// set takes a while to detach, and nothing is lost if tickprof is
	// killed meanwhile).
	werr := write(run)
	detach(s, errOut)
	return run, werr
}
