package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tickprof/tickprof/loader"
)

// doctorMethod is the attach method one target kind will use, or why it
// cannot be timed on this kernel.
type doctorMethod struct {
	Kind   string `json:"kind"`
	Method string `json:"method,omitempty"`
	Error  string `json:"error,omitempty"`
}

// doctorReport is what `tickprof doctor --json` prints.
type doctorReport struct {
	*loader.Features
	Methods []doctorMethod `json:"methods"`
}

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
			rep := doctorReport{Features: f, Methods: doctorMethods(f)}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return writeDoctor(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func doctorMethods(f *loader.Features) []doctorMethod {
	one := func(kind string, m string, err error) doctorMethod {
		if err != nil {
			return doctorMethod{Kind: kind, Error: err.Error()}
		}
		return doctorMethod{Kind: kind, Method: m}
	}
	um, uerr := f.UserFuncMethod()
	sm, serr := f.SyscallMethod()
	km, kerr := f.KernelFuncMethod(loader.AttachAuto)
	kdesc := ""
	switch km {
	case loader.AttachKprobe:
		kdesc = "kprobe + kretprobe"
		if f.Has(loader.FeatFentry) {
			kdesc += " (fentry/fexit also available: --attach fentry)"
		}
	case loader.AttachFentry:
		kdesc = "fentry + fexit (BPF trampolines)"
	}
	pm, perr := f.SamplingMethod()
	return []doctorMethod{
		one("user function (-u)", um, uerr),
		one("syscall (-s)", sm, serr),
		one("kernel function (-k)", kdesc, kerr),
		one("sampling (sample)", pm, perr),
	}
}

func writeDoctor(w io.Writer, rep doctorReport) error {
	f := rep.Features
	fmt.Fprintf(w, "kernel %s", f.Kernel)
	if f.ConfigSource != "" {
		fmt.Fprintf(w, " (config: %s)", f.ConfigSource)
	} else {
		fmt.Fprint(w, " (no kernel config readable)")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CAPABILITY\tOK\tDETAIL")
	for _, r := range f.Results {
		ok := "yes"
		if !r.OK {
			ok = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, ok, r.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET KIND\tMETHOD")
	for _, m := range rep.Methods {
		s := m.Method
		if m.Error != "" {
			s = "unavailable: " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\n", m.Kind, s)
	}
	return tw.Flush()
}
