// SPDX-License-Identifier: Apache-2.0

package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testContainerID = "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970"

func TestParseCgroup(t *testing.T) {
	id := testContainerID
	for _, c := range []struct {
		path, id, unit string
	}{
		{"/system.slice/docker-" + id + ".scope", id, ""},
		{"/docker/" + id, id, ""},
		{"/system.slice/containerd.service/default/" + id, id, "containerd.service"},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b_2c3d.slice/cri-containerd-" + id + ".scope", id, ""},
		{"/kubepods/burstable/pod0a1b2c3d-0000-1111-2222-333344445555/" + id, id, ""},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12.slice/crio-" + id + ".scope", id, ""},
		{"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12.slice/crio-conmon-" + id + ".scope", "", ""},
		{"/machine.slice/libpod-" + id + ".scope", id, ""},
		{"/machine.slice/libpod-" + id + ".scope/container", id, ""},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id + ".scope", id, "user@1000.service"},
		{"/system.slice/redis-server.service", "", "redis-server.service"},
		{"/user.slice/user-0.slice/session-3.scope", "", "session-3.scope"},
		{"/", "", ""},
		{"/docker/" + id[:63], "", ""},
		{"/docker/" + strings.ToUpper(id), "", ""},
	} {
		got := parseCgroup(c.path)
		if got.containerID != c.id || got.unit != c.unit || got.path != c.path {
			t.Errorf("%s: container %q unit %q, want %q %q", c.path, got.containerID, got.unit, c.id, c.unit)
		}
	}
}

// TestCgroupLabels places processes in cgroups this test creates, named as
// Docker (systemd driver) and systemd name theirs, and reads the agent's
// labels of each.
func TestCgroupLabels(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot create cgroups")
	}
	mnt := cgroup2Mount()
	if mnt == "" {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	root, err := os.MkdirTemp(mnt, "tickprof-test-")
	if err != nil {
		t.Fatal(err)
	}
	base := "/" + filepath.Base(root)
	var dirs []string
	t.Cleanup(func() {
		for i := len(dirs) - 1; i >= 0; i-- {
			os.Remove(dirs[i])
		}
		os.Remove(root)
	})
	place := func(rel string) int {
		dir := root
		for _, p := range strings.Split(rel, "/") {
			dir = filepath.Join(dir, p)
			if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			dirs = append(dirs, dir)
		}
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		return cmd.Process.Pid
	}
	docker := place("system.slice/docker-" + testContainerID + ".scope")
	unit := place("system.slice/tp-redis.service")
	a := &Agent{cfg: Config{}, watch: newWatcher([]int{docker, unit}, nil, time.Second)}
	procs, err := a.watch.scan()
	if err != nil || len(procs) != 2 {
		t.Fatalf("scan: %v, %d processes", err, len(procs))
	}
	want := map[int]map[string]string{
		docker: {"cgroup": base + "/system.slice/docker-" + testContainerID + ".scope", "container_id": testContainerID, "systemd_unit": ""},
		unit:   {"cgroup": base + "/system.slice/tp-redis.service", "container_id": "", "systemd_unit": "tp-redis.service"},
	}
	for _, p := range procs {
		l := a.labels(int64(p.pid), p, true)
		for k, v := range want[p.pid] {
			if l[k] != v {
				t.Errorf("process %d: label %s=%q, want %q", p.pid, k, l[k], v)
			}
		}
	}
}

// cgroup2Mount is where the unified (v2) hierarchy is mounted ("" when it
// is not).
func cgroup2Mount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if ok && strings.HasPrefix(post, "cgroup2 ") && len(f) >= 5 {
			return f[4]
		}
	}
	return ""
}
