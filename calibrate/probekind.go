// SPDX-License-Identifier: Apache-2.0

package calibrate

import (
	"fmt"
	"os"

	"github.com/tickprof/tickprof/internal/symtab"
)

// ProbeKind names a kind of probe pair whose overhead is calibrated: the
// target kind it applies to, as loader.Kind spells it, or a variant.
type ProbeKind string

// The probe kinds calibrated.
const (
	KindUser        ProbeKind = "user"         // uprobe pair, first instruction emulated
	KindUserStepped ProbeKind = "user-stepped" // uprobe pair, first instruction single-stepped
	KindGo          ProbeKind = "go"           // RET-site uprobes on Go code
	KindSyscall     ProbeKind = "syscall"      // syscall entry and exit (a reference only)
	KindKernel      ProbeKind = "kernel"       // kernel-function pair (a reference only)
)

// UserProbeKind returns the overhead kind that applies to a uprobe at file
// offset off of the ELF file at path: "user" when the kernel's x86 uprobe
// code emulates the probed instruction, "user-stepped" when it must
// single-step it out of line, which costs several times more and lands
// inside the measured interval (the probe's clock read comes first).
func UserProbeKind(path string, off uint64) (ProbeKind, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the probed instruction: %w", err)
	}
	defer f.Close()
	var b [4]byte
	n, err := f.ReadAt(b[:], int64(off))
	if n == 0 {
		return "", fmt.Errorf("read the probed instruction of %s at %#x: %w", path, off, err)
	}
	if symtab.KernelEmulates(b[:n]) {
		return KindUser, nil
	}
	return KindUserStepped, nil
}
