package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/loader"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "What this kernel and these privileges allow, and how each target kind is timed",
		Long: `doctor loads and attaches tiny BPF programs to find out what this kernel and
these privileges allow (it does not guess from the version number): BTF,
uprobes, kprobes, fentry, syscall and raw tracepoints, perf_event sampling,
ring buffers, BPF cookies, task storage, bpf_jiffies64, and the measured
tick period. It then says which method each target kind (-u, -s, -k,
sampling) will use. Needs root.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := loader.ProbeFeatures()
			if err != nil {
				return fmt.Errorf("probe kernel features: %w", err)
			}
			rep := export.NewDoctorReport(f)
			if asJSON {
				return export.WriteJSON(cmd.OutOrStdout(), rep)
			}
			return export.WriteDoctor(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
