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
)

// warnSkipped names, before timing starts, the functions of a glob left
// out because the kernel cannot probe them.
func warnSkipped(errOut io.Writer, s *loader.Session) {
	if sk := s.Skipped(); len(sk) > 0 {
		fmt.Fprintf(errOut, "tickprof: warning: %d function(s) skipped, not timed: %s\n", len(sk), loader.FormatSkipped(sk, 8))
	}
}

// handOff gives the probes to a helper process right after attaching
// (loader.Session.HandOff): whatever ends tickprof from then on, SIGKILL
// included, the helper detaches them, and tickprof itself never waits for
// the kernel to close links at its exit. Without the helper, detach falls
// back to closing them here.
func handOff(s *loader.Session, errOut io.Writer) {
	if err := s.HandOff(exec.Command("/proc/self/exe")); err != nil {
		fmt.Fprintf(errOut, "tickprof: warning: %v; probes are detached by this process\n", err)
	}
}

// detach removes the probes after the results are out; Ctrl-C or SIGTERM
// meanwhile ends the wait, and the helper finishes alone.
func detach(s *loader.Session, errOut io.Writer) {
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

// untimedNotes says what a target's mean stands for when a material share
// of its calls was not timed.
func untimedNotes(t export.TimeTarget, st loader.RunStats, k loader.Kind) []string {
	n := export.UntimedNote(t.Calls, t.Orphans, export.UntimedCauses{
		Overwritten: st.Overwritten, NoEntry: st.NoEntry, InFlightCap: st.InFlightCap,
		HashKeyed: k == loader.KindGoUser || k == loader.KindKernelFunc, MaxDepth: loader.MaxDepth,
	})
	if n == "" {
		return nil
	}
	return []string{n}
}

// writeNotes prints the targets' notes below the table.
func writeNotes(w io.Writer, r *export.TimeRun) {
	for _, t := range r.Targets {
		for _, n := range t.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", t.Name, n)
		}
	}
}
