// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// gonePID returns the PID of a child that has run and been reaped.
func gonePID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("run true: %v", err)
	}
	return cmd.Process.Pid
}

// zombiePID returns the PID of a child that has exited and is not reaped
// until the test ends.
func zombiePID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skipf("start true: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return pid
			}
		}
	}
	t.Fatalf("process %d did not become a zombie", pid)
	return 0
}

// TestForkInherit checks that a forked child gone before its map was read
// takes its parent's (through a gone parent too, up to the ancestor whose
// map is read), that a child without a fork note or whose note Exec or
// PruneForks dropped does not, and that ExeBuildID names the executable's
// build ID.
func TestForkInherit(t *testing.T) {
	tab := NewProcs(nil)
	self := os.Getpid()
	parent := tab.Image(self)
	if parent.Err() != nil || len(parent.Maps()) == 0 {
		t.Fatalf("own map: %v", parent.Err())
	}
	child, grandchild, other := gonePID(t), gonePID(t), gonePID(t)
	tab.Fork(child, self)
	tab.Fork(grandchild, child)
	for _, pid := range []int{grandchild, child} {
		img := tab.Image(pid)
		if img.Err() != nil || img.Pid() != pid || img.Exe() != parent.Exe() || len(img.Maps()) != len(parent.Maps()) {
			t.Fatalf("child %d: err %v, pid %d, exe %q (parent's %q), %d maps (parent's %d)",
				pid, img.Err(), img.Pid(), img.Exe(), parent.Exe(), len(img.Maps()), len(parent.Maps()))
		}
		if img.ID() == parent.ID() {
			t.Fatalf("child %d shares its parent's image ID", pid)
		}
	}
	if img := tab.Image(other); img.Err() == nil {
		t.Fatalf("process %d, never noted as forked, has a map", other)
	}
	// A zombie's map reads empty without an error: it takes its parent's
	// too (the agent's forked children exiting before their first sample
	// was symbolized had no executable).
	zombie := zombiePID(t)
	tab.Fork(zombie, self)
	if img := tab.Image(zombie); img.Exe() != parent.Exe() || len(img.Maps()) != len(parent.Maps()) {
		t.Fatalf("zombie %d: exe %q (parent's %q), %d maps (parent's %d)", zombie, img.Exe(), parent.Exe(), len(img.Maps()), len(parent.Maps()))
	}

	// An exec makes the child's map its own: the parent's is not taken.
	tab.Fork(other, self)
	tab.Exec(other)
	if img := tab.Image(other); img.Err() == nil {
		t.Fatalf("process %d took its parent's map after an exec", other)
	}
	// A note pruned is forgotten.
	late := gonePID(t)
	tab.Fork(late, self)
	tab.parents[late] = forkNote{parent: self, at: time.Now().Add(-time.Hour)}
	tab.PruneForks(time.Minute)
	if img := tab.Image(late); img.Err() == nil {
		t.Fatalf("process %d took its parent's map from a pruned note", late)
	}

	// The test binary is built with a Go build ID (and a GNU one when
	// linked externally): ExeBuildID finds one of them.
	id := parent.ExeBuildID()
	if id == "" {
		t.Fatalf("no build ID for %s", parent.Exe())
	}
	for i := range parent.Maps() {
		if m := parent.Mapping(i); m.File == parent.Exe() && m.BuildID != id {
			t.Fatalf("ExeBuildID %q, the executable's mapping says %q", id, m.BuildID)
		}
	}
}
