// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
)

func newReportCmd() *cobra.Command {
	var (
		top      int
		byCum    bool
		o        outputFlags
		srv      serverFlags
		selector string
		outFile  string
	)
	cmd := command("report", "report FILE | report --pyroscope URL --query SELECTOR [--from TIME] [--until TIME] [-o FILE]", "The table with intervals for a pprof CPU profile or a tickprof time profile", func(cmd *cobra.Command, args []string) error {
		conf, confErr := parseConfidence(o.confidence)
		if err := cli.FirstErr(confErr, cli.UsageIf(top < 0, "--top %d: give a count, or 0 for all", top)); err != nil {
			return err
		}
		var p *profile.Profile
		var name string
		var err error
		if srv.set() {
			p, name, err = reportFromServer(cmd, &srv, selector, outFile)
		} else {
			name = args[0]
			p, err = export.ReadProfileFile(name)
		}
		if err != nil {
			return err
		}
		return writeReport(cmd.OutOrStdout(), p, name, top, byCum, o.json, conf)
	})
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if srv.set() {
			return cli.FirstErr(cli.UsageIf(len(args) > 0, "report --pyroscope takes no FILE"), cli.UsageIf(selector == "", "report --pyroscope needs --query SELECTOR"))
		}
		if err := srv.checkLocal(cmd); err != nil {
			return err
		}
		return cli.FirstErr(cli.UsageIf(outFile != "", "-o: only with --pyroscope (report reads FILE, it writes nothing)"), cli.ExactArgs(1, "one profile FILE")(cmd, args))
	}
	fl := cmd.Flags()
	fl.IntVar(&top, "top", 20, "show the top `N` functions (0 for all)")
	o.add(cmd, "confidence level of the share intervals (a time profile keeps its own)", "print JSON")
	fl.BoolVar(&byCum, "cum", false, "order by cumulative share")
	srv.add(cmd)
	fl.StringVar(&selector, "query", "", "with --pyroscope: the label `SELECTOR` of the windows to merge, such as '{service_name=\"nginx\"}'")
	fl.StringVarP(&outFile, "output", "o", "", "with --pyroscope: also write the merged profile to `FILE` (pprof, gzipped)")
	return cmd
}

// writeReport prints the table of p (read from name).
func writeReport(w io.Writer, p *profile.Profile, name string, top int, byCum, asJSON bool, conf float64) error {
	if export.IsTimeProfile(p) {
		t, err := export.TimeReport(p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return export.Write(w, asJSON, t, func(w io.Writer, t *export.TimeTable) error { return t.WriteText(w, top) })
	}
	if export.IsOffCPUProfile(p) {
		t, err := export.OffCPUReport(p, export.OffCPUTableType(p), estimate.Options{Confidence: conf})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return export.WriteOffCPUTable(w, t, top, asJSON)
	}
	t, err := export.CPUReport(p, estimate.Options{Confidence: conf})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if byCum {
		t.SortByCum()
	}
	return export.WriteCPUTable(w, t, top, asJSON)
}
