// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Container and unit labels, from a process's cgroup.
//
// Fleets slice profiles by container and service unit. Container runtimes
// and systemd name the cgroups they create after what runs in them, and
// the agent reads the labels back from the path, as the OpenTelemetry eBPF
// profiler (which Grafana Alloy embeds) and Parca Agent do:
//
//	/system.slice/docker-<id>.scope                   Docker, systemd driver
//	/docker/<id>                                      Docker, cgroupfs driver
//	/system.slice/containerd.service/<ns>/<id>        containerd (ctr)
//	/kubepods.slice/.../cri-containerd-<id>.scope     containerd under Kubernetes
//	/kubepods/burstable/pod<uid>/<id>                 Kubernetes, cgroupfs driver
//	/kubepods.slice/.../crio-<id>.scope               CRI-O
//	/machine.slice/libpod-<id>.scope                  Podman (also .../libpod-<id>.scope/container)
//	/system.slice/nginx.service                       a systemd service
//
// The container ID is the 64 hexadecimal digits of the innermost path
// component that is one (bare, or after docker-, cri-containerd-, crio- or
// libpod-, with an optional .scope); CRI-O's crio-conmon-<id>.scope is its
// monitor, not the container. The unit is the innermost component that
// names a systemd service or scope that is not a container's.

// cgroupInfo is what a process's cgroup says.
type cgroupInfo struct {
	path, containerID, unit string
}

// containerComponent matches a path component holding a container ID.
var containerComponent = regexp.MustCompile(`^(?:(?:docker|cri-containerd|crio|libpod)-)?([0-9a-f]{64})(?:\.scope)?$`)

// parseCgroup reads the labels of a cgroup path.
func parseCgroup(path string) cgroupInfo {
	c := cgroupInfo{path: path}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if m := containerComponent.FindStringSubmatch(p); m != nil {
			if c.containerID == "" {
				c.containerID = m[1]
			}
			continue
		}
		if c.unit == "" && (strings.HasSuffix(p, ".service") || strings.HasSuffix(p, ".scope")) && !strings.HasPrefix(p, "crio-conmon-") {
			c.unit = p
		}
	}
	return c
}

// readCgroup returns the cgroup path of a process: the unified (v2)
// hierarchy's; on a host that keeps processes in the v1 hierarchies
// (hybrid or v1 only, where the v2 path stays "/"), systemd's named
// hierarchy's, else the first v1 controller's that is not the root; "" when
// unreadable.
func readCgroup(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	var v2, systemd, other string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(sc.Text(), ":", 3)
		switch {
		case len(f) != 3:
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case f[1] == "name=systemd":
			systemd = f[2]
		case other == "" && f[2] != "/":
			other = f[2]
		}
	}
	for _, p := range []string{v2, systemd, other} {
		if p != "" && p != "/" {
			return p
		}
	}
	return v2
}
