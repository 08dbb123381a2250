// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// Load loads spec's programs and maps into to (LoadAndAssign), with the
// kernel version set (SetKernelVersion), and turns a failure into one line
// that names what was loaded (what, e.g. "the calibration programs"): the
// verifier's refusal, or the privileges loading needs.
func Load(spec *ebpf.CollectionSpec, to any, what string) error {
	SetKernelVersion(spec)
	err := spec.LoadAndAssign(to, nil)
	if err == nil {
		return nil
	}
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("load %s: the kernel's verifier refused them: %v", what, ve)
	}
	return fmt.Errorf("load %s (needs root, or CAP_BPF and CAP_PERFMON): %w", what, err)
}
