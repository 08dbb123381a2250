package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/tickprof/tickprof/loader"
	"github.com/tickprof/tickprof/timing"
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
