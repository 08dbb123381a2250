package main

import (
	"context"
	"fmt"
	"io"
	"os"
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

// detach removes the probes after the results are out; Ctrl-C or SIGTERM
// meanwhile ends the wait (the kernel removes what is left as the process
// exits).
func detach(s *loader.Session, errOut io.Writer) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Detach(ctx); err != nil {
		fmt.Fprintln(errOut, "tickprof: interrupted while detaching: the results are written; the kernel removes the remaining probes as tickprof exits")
	}
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
