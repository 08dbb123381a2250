// SPDX-License-Identifier: Apache-2.0

package python

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/proc"
)

// TestResolveLiveStack runs testdata/python/sleeper.py under each
// installed interpreter and, while it sleeps, walks its main thread's
// frame chain from user space as bpf/python.h does (the version table's
// offsets, reading /proc/PID/mem), then names the frames: K.h (h before
// 3.11) at the sleep, g and f at their calls, <module> at its call, with
// the eval-loop entries marked (every frame before 3.11; <module> alone
// from 3.11, whose Python-to-Python calls stay in one eval-loop call).
func TestResolveLiveStack(t *testing.T) {
	script, _ := filepath.Abs("../../testdata/python/sleeper.py")
	lines := map[string]int{}
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(src), "\n") {
		for _, m := range []string{"# sleep line", "# g's call", "# f's call", "# module's call"} {
			if strings.Contains(l, m) {
				lines[m] = i + 1
			}
		}
	}
	for _, py := range pythons(t) {
		t.Run(py.Name, func(t *testing.T) {
			h := "h"
			if py.Minor >= 11 {
				h = "K.h"
			}
			frames := liveFrames(t, py.Exe, script, lines["# sleep line"])
			want := []Frame{
				{h, script, lines["# sleep line"], py.Minor < 11},
				{"g", script, lines["# g's call"], py.Minor < 11},
				{"f", script, lines["# f's call"], py.Minor < 11},
				{"<module>", script, lines["# module's call"], true},
			}
			if fmt.Sprint(frames) != fmt.Sprint(want) {
				t.Errorf("frames\n%v\nwant\n%v", frames, want)
			}
		})
	}
}

// liveFrames starts the sleeper and names its main thread's frames once
// its leaf is at line sleep (it prints "ready" just before; 2 s at most).
func liveFrames(t *testing.T, exe, script string, sleep int) []Frame {
	t.Helper()
	cmd := exec.Command(exe, script)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
		t.Fatalf("sleeper said %q", l)
	}
	pid := cmd.Process.Pid
	maps, err := proc.ReadMaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	in, ok, err := Find(pid, maps)
	if !ok || err != nil {
		t.Fatalf("no interpreter found in %s: %v", exe, err)
	}
	r, err := NewResolver(pid, in)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		frames, failed := r.Frames(walk(t, r))
		if failed > 0 {
			t.Errorf("%d frames not read", failed)
		}
		if len(frames) > 0 && frames[0].Line == sleep || time.Now().After(deadline) {
			return frames
		}
	}
}

// walk reads the frame chain of the interpreter's first thread state (the
// sleeper's only thread) as bpf/python.h does.
func walk(t *testing.T, r *Resolver) []Raw {
	t.Helper()
	l := r.in.Layout
	// A read that fails (the chain changing under the walk) ends it:
	// liveFrames walks again.
	must := func(addr uint64) uint64 {
		v, _ := r.word(addr)
		return v
	}
	interp := must(r.in.InterpHead())
	ts := must(interp + uint64(l.InterpThreadsHead))
	f := must(ts + uint64(l.ThreadFrame))
	if l.CFrameCurrent != None {
		f = must(f + uint64(l.CFrameCurrent))
	}
	nameAt := l.CodeName
	if l.HasQualname() {
		nameAt = l.CodeQualname
	}
	var raw []Raw
	for ; f != 0 && len(raw) < 64; f = must(f + uint64(l.FramePrevious)) {
		code, instr := must(f+uint64(l.FrameCode)), must(f+uint64(l.FrameInstr))
		if l.FrameOwner != None {
			instr = instr&(1<<56-1) | must(f+uint64(l.FrameOwner))<<56
		}
		var stamp uint64
		if name, err := r.word(code + uint64(nameAt)); err == nil {
			stamp = Stamp(name, must(code+uint64(l.CodeLineTable)))
		}
		raw = append(raw, Raw{Code: code, Instr: instr, Stamp: stamp})
	}
	return raw
}
