// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/cmd/tickprof/internal/cli"
	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
)

// diffServer are diff's own flags with --pyroscope: the base's selector and
// span (the span defaults to --from and --until) and the new one's.
type diffServer struct {
	serverFlags
	baseQuery, newQuery, baseFrom, baseUntil string
}

func newDiffCmd() *cobra.Command {
	var (
		all        bool
		sampleType string
		o          outputFlags
		srv        diffServer
	)
	cmd := command("diff", "diff BASE NEW | diff --pyroscope URL --base-query SELECTOR --query SELECTOR [--from TIME] [--until TIME]", "What changed between two profiles, with intervals; significant changes only by default", func(cmd *cobra.Command, args []string) error {
		conf, err := parseConfidence(o.confidence)
		if err != nil {
			return err
		}
		var base, newp *profile.Profile
		if srv.set() {
			base, newp, err = srv.fetchBoth()
		} else {
			base, newp, err = readBoth(args[0], args[1])
		}
		if err != nil {
			return err
		}
		t, err := export.DiffSampleType(base, newp, sampleType, estimate.Options{Confidence: conf}, all)
		if err != nil {
			return err
		}
		return export.Write(cmd.OutOrStdout(), o.json, t, func(w io.Writer, t *export.DiffTable) error { return t.WriteText(w) })
	})
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if err := cli.UsageIf(sampleType != "" && sampleType != export.SamplesType && sampleType != export.OffCPUType && sampleType != export.WallType,
			"--sample-type %q: use samples, off_cpu or wall", sampleType); err != nil {
			return err
		}
		if srv.set() {
			return cli.FirstErr(cli.UsageIf(len(args) > 0, "diff --pyroscope takes no files"),
				cli.UsageIf(srv.baseQuery == "" || srv.newQuery == "", "diff --pyroscope needs --base-query SELECTOR and --query SELECTOR"))
		}
		if err := srv.checkLocal(cmd); err != nil {
			return err
		}
		return cli.ExactArgs(2, "two profiles, BASE and NEW")(cmd, args)
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "show every change, significant or not")
	fl.StringVar(&sampleType, "sample-type", "", "what to compare: samples (CPU shares), off_cpu or wall (time by function, of sample --off-cpu/--wall profiles); default as report chooses")
	o.add(cmd, "confidence level of the share differences (time profiles keep their own)", "print JSON")
	srv.add(cmd)
	fl.StringVar(&srv.baseQuery, "base-query", "", "with --pyroscope: the label `SELECTOR` of the base's windows")
	fl.StringVar(&srv.newQuery, "query", "", "with --pyroscope: the label `SELECTOR` of the new windows")
	fl.StringVar(&srv.baseFrom, "base-from", "", "with --pyroscope: start of the base's span (`TIME`; default --from)")
	fl.StringVar(&srv.baseUntil, "base-until", "", "with --pyroscope: end of the base's span (`TIME`; default --until)")
	return cmd
}

// readBoth reads the base and new profile files.
func readBoth(baseFile, newFile string) (*profile.Profile, *profile.Profile, error) {
	base, err := export.ReadProfileFile(baseFile)
	if err != nil {
		return nil, nil, err
	}
	newp, err := export.ReadProfileFile(newFile)
	return base, newp, err
}
