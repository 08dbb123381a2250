// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrUprobeNeedsSysAdmin: the kernel creates uprobe perf events only for
// a caller with CAP_SYS_ADMIN (kernel/events/core.c, perf_uprobe_event_init):
// CAP_BPF and CAP_PERFMON load and attach everything else tickprof uses,
// but not a uprobe, which patches the pages of a file.
var ErrUprobeNeedsSysAdmin = errors.New("a uprobe needs CAP_SYS_ADMIN: the kernel creates uprobe perf events only with it, CAP_BPF and CAP_PERFMON are not enough; run as root or add cap_sys_admin")

// HasCap reports whether capability c is in this process's effective set.
func HasCap(c uint) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// UprobeAttachError explains a failed uprobe attach to what: a refusal
// names the missing privilege (ErrUprobeNeedsSysAdmin, or ErrNotPrivileged
// with the kernel's error); other errors are returned wrapped as they are.
func UprobeAttachError(what string, err error) error {
	if !errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("attach to %s: %w", what, err)
	}
	if !HasCap(unix.CAP_SYS_ADMIN) {
		return fmt.Errorf("attach to %s: %w (%v)", what, ErrUprobeNeedsSysAdmin, err)
	}
	return fmt.Errorf("attach to %s: %w (%v)", what, ErrNotPrivileged, err)
}

// TracefsPermission explains a refused read of tracefs (a trace event's
// ID): tracefs is root's unless an administrator opened it to a group.
func TracefsPermission(err error) error {
	if !errors.Is(err, os.ErrPermission) {
		return err
	}
	return fmt.Errorf("%w: tracefs (/sys/kernel/tracing) is readable by root only here; run as root, or let this user read it (mount tracefs with gid= and mode=0750 for a tracing group)", err)
}
