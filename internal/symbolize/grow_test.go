// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/debuginfo"
)

// A process's libc addresses located window after window, each window's
// met first (Meet, GrowTables: the files' DWARF read for the units met so
// far only), have the frames, lines and inlined calls they have when the
// whole DWARF is read, those of earlier windows located again included;
// with libc's separate debug file installed, which holds its DWARF.
func TestMeetLocatesAlike(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to run: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var libc Mapping
	var addrs []uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && addrs == nil; time.Sleep(20 * time.Millisecond) {
		img := NewProcs(nil).Image(cmd.Process.Pid)
		for i := range img.Maps() {
			if m := img.Mapping(i); strings.Contains(m.File, "libc.so") {
				libc = m
				addrs = libcAddrs(t, m)
			}
		}
	}
	if addrs == nil {
		t.Skip("sleep maps no libc")
	}
	if _, err := debuginfo.FromEnv().Find(t.Context(), libc.BuildID); err != nil {
		t.Skipf("libc has no separate debug file here (%v): its DWARF is not read", err)
	}
	whole := NewProcs(debuginfo.FromEnv())
	defer whole.Close()
	grown := NewProcs(debuginfo.FromEnv())
	defer grown.Close()
	wi, gi := whole.Image(cmd.Process.Pid), grown.Image(cmd.Process.Pid)
	const windows = 5
	lines, inl := 0, 0
	for w := range windows {
		// Each window the addresses of the ones before and new ones.
		win := addrs[:len(addrs)*(w+1)/windows]
		for i, a := range win {
			gi.Meet(a, i%2 == 0)
		}
		grown.GrowTables(t.Context())
		for i, a := range win {
			wl, gl := wi.Locate(a, i%2 == 0), gi.Locate(a, i%2 == 0)
			if !reflect.DeepEqual(wl, gl) {
				t.Fatalf("window %d, %#x: located after Meet %+v, with the whole DWARF %+v", w, a, gl, wl)
			}
			if w == windows-1 && wl.Lines {
				lines++
			}
			if w == windows-1 && len(wl.Frames) > 1 {
				inl++
			}
		}
	}
	t.Logf("%d libc addresses alike over %d windows, %d with a line, %d inside inlined calls", len(addrs), windows, lines, inl)
	if lines == 0 {
		t.Error("no address had a line: the DWARF was not read")
	}
}
