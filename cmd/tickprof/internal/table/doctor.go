// SPDX-License-Identifier: Apache-2.0

package table

import (
	"fmt"
	"io"

	"github.com/tickprof/tickprof/internal/features"
)

// DoctorMethod is the attach method one target kind will use, or why it
// cannot be timed on this kernel.
type DoctorMethod struct {
	Kind   string `json:"kind"`
	Method string `json:"method,omitempty"`
	Error  string `json:"error,omitempty"`
}

// DoctorReport is what doctor found: the kernel's features and the
// method of each target kind.
type DoctorReport struct {
	*features.Features
	Methods []DoctorMethod `json:"methods"`
}

// WriteDoctor prints what doctor found: the kernel, every capability, and
// the method each target kind will use.
func WriteDoctor(w io.Writer, rep DoctorReport) error {
	f := rep.Features
	fmt.Fprintf(w, "kernel %s", f.Kernel)
	if f.ConfigSource != "" {
		fmt.Fprintf(w, " (config: %s)", f.ConfigSource)
	} else {
		fmt.Fprint(w, " (no kernel config readable)")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	if err := table(w, "CAPABILITY\tOK\tDETAIL", func(tw io.Writer) {
		for _, r := range f.Results {
			ok := "yes"
			if !r.OK {
				ok = "NO"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, ok, r.Detail)
		}
	}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return table(w, "TARGET KIND\tMETHOD", func(tw io.Writer) {
		for _, m := range rep.Methods {
			s := m.Method
			if m.Error != "" {
				s = "unavailable: " + m.Error
			}
			fmt.Fprintf(tw, "%s\t%s\n", m.Kind, s)
		}
	})
}

// NewDoctorReport is the report on f: the features and the method each
// target kind will use.
func NewDoctorReport(f *features.Features) DoctorReport {
	return DoctorReport{Features: f, Methods: doctorMethods(f)}
}

// doctorMethods are the attach methods of every target kind, or why each
// cannot be used.
func doctorMethods(f *features.Features) []DoctorMethod {
	one := func(kind string, m string, err error) DoctorMethod {
		if err != nil {
			return DoctorMethod{Kind: kind, Error: err.Error()}
		}
		return DoctorMethod{Kind: kind, Method: m}
	}
	um, uerr := f.UserFuncMethod()
	sm, serr := f.SyscallMethod()
	km, kerr := f.KernelFuncMethod(features.AttachAuto)
	kdesc := ""
	switch km {
	case features.AttachKprobe:
		kdesc = "kprobe + kretprobe"
		if f.Has(features.FeatFentry) {
			kdesc += " (fentry/fexit also available: --attach fentry)"
		}
	case features.AttachFentry:
		kdesc = "fentry + fexit (BPF trampolines)"
	}
	pm, perr := f.SamplingMethod()
	return []DoctorMethod{
		one("user function (-u)", um, uerr),
		one("syscall (-s)", sm, serr),
		one("kernel function (-k)", kdesc, kerr),
		one("sampling (sample)", pm, perr),
	}
}
