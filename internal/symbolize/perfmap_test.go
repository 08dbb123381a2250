// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParsePerfMapLine(t *testing.T) {
	for _, c := range []struct {
		line        string
		start, size uint64
		name        string
		ok          bool
	}{
		{"7fd3400061c0 2e4 JS:*burnA /tmp/burn.js:1:15", 0x7fd3400061c0, 0x2e4, "JS:*burnA /tmp/burn.js:1:15", true},
		{"0x00007f1c2d3e4000 0x0000000000000140 void Burn.burnA(int)", 0x7f1c2d3e4000, 0x140, "void Burn.burnA(int)", true},
		{"7fe33d89679b b py::f:<string>", 0x7fe33d89679b, 0xb, "py::f:<string>", true},
		{"7fe33d89679b b", 0, 0, "", false},
		{"zz 10 name", 0, 0, "", false},
		{"ffffffffffffffff 10 wraps", 0, 0, "", false},
		{"", 0, 0, "", false},
	} {
		start, size, name, ok := parsePerfMapLine(c.line)
		if ok != c.ok || start != c.start || size != c.size || name != c.name {
			t.Errorf("%q: got %#x %#x %q %v, want %#x %#x %q %v", c.line, start, size, name, ok, c.start, c.size, c.name, c.ok)
		}
	}
}

func TestPerfFrame(t *testing.T) {
	for _, c := range []struct {
		name string
		want Frame
	}{
		{"JS:*burnA /tmp/burn.js:1:15", Frame{Function: "burnA", File: "/tmp/burn.js", Line: 1}},
		{"JS:~ /tmp/burn.js:1:1", Frame{Function: "(anonymous)", File: "/tmp/burn.js", Line: 1}},
		{"JS:^Module._compile node:internal/modules/cjs/loader:1358:37",
			Frame{Function: "Module._compile", File: "node:internal/modules/cjs/loader", Line: 1358}},
		{"Builtin:ArgumentsAdaptorTrampoline", Frame{Function: "Builtin:ArgumentsAdaptorTrampoline"}},
		{"py::burn_a:/app/burn.py", Frame{Function: "burn_a", File: "/app/burn.py"}},
		{"void Burn.burnA(int)", Frame{Function: "void Burn.burnA(int)"}},
	} {
		if got := perfFrame(c.name); got != c.want {
			t.Errorf("%q: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// perfMapTarget starts a process to own a perf map file and returns it
// with the file's path (removed at the end).
func perfMapTarget(t *testing.T) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the perf map file is checked for its owner and read through /proc/PID/root")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	path := fmt.Sprintf("/tmp/perf-%d.map", cmd.Process.Pid)
	os.Remove(path)
	t.Cleanup(func() { os.Remove(path) })
	return cmd.Process.Pid, path
}

// TestPerfMapRead reads a perf map file that grows, with a later line
// naming reused code.
func TestPerfMapRead(t *testing.T) {
	pid, path := perfMapTarget(t)
	if err := os.WriteFile(path, []byte("1000 100 first\n2000 80 second\n1040 10 reused\n30"), 0o644); err != nil {
		t.Fatal(err)
	}
	pm := newPerfMap(pid)
	if pm == nil || pm.root == nil {
		t.Fatalf("newPerfMap(%d) = %+v", pid, pm)
	}
	defer pm.close()
	for _, c := range []struct {
		addr uint64
		want string
	}{{0x1000, "first"}, {0x10ff, "first"}, {0x1045, "reused"}, {0x2010, "second"}, {0x1100, ""}, {0x3000, ""}} {
		got, _ := pm.lookup(c.addr)
		if got != c.want {
			t.Errorf("lookup %#x: %q, want %q", c.addr, got, c.want)
		}
	}
	// The unfinished line is read once it ends, with what follows.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("00 20 third\n")
	f.Close()
	if got, _ := pm.lookup(0x3010); got != "third" {
		t.Errorf("after the file grew: lookup 0x3010 = %q, want third (err %v)", got, pm.err)
	}
	// A file written anew (jcmd's Compiler.perfmap) replaces what was
	// read, once perfMapRetry passed since the last open.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("4000 10 fresh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pm.tried = pm.tried.Add(-perfMapRetry)
	if got, _ := pm.lookup(0x4005); got != "fresh" {
		t.Errorf("after the file was replaced: lookup 0x4005 = %q, want fresh (err %v)", got, pm.err)
	}
	if got, _ := pm.lookup(0x1000); got != "" {
		t.Errorf("after the file was replaced: lookup 0x1000 = %q from the old file", got)
	}
	// Rewritten in place, shorter.
	if err := os.WriteFile(path, []byte("5000 8 short\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := pm.lookup(0x5001); got != "short" {
		t.Errorf("after the file was cut: lookup 0x5001 = %q, want short (err %v)", got, pm.err)
	}
}

// TestPerfMapRefused checks that a perf map that another user could have
// written, or that is reached through a link, is not read.
func TestPerfMapRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"symlink", func(p string) error {
			real := p + ".real"
			if err := os.WriteFile(real, []byte("1000 10 x\n"), 0o644); err != nil {
				return err
			}
			t.Cleanup(func() { os.Remove(real) })
			return os.Symlink(real, p)
		}, "symbolic link"},
		{"world-writable", func(p string) error {
			if err := os.WriteFile(p, []byte("1000 10 x\n"), 0o644); err != nil {
				return err
			}
			return os.Chmod(p, 0o666)
		}, "writable by other users"},
		{"other owner", func(p string) error {
			if err := os.WriteFile(p, []byte("1000 10 x\n"), 0o644); err != nil {
				return err
			}
			return os.Chown(p, 54321, 54321)
		}, "owned by user 54321"},
		{"fifo", func(p string) error { return mkfifo(p) }, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pid, path := perfMapTarget(t)
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			pm := newPerfMap(pid)
			defer pm.close()
			if name, ok := pm.lookup(0x1000); ok {
				t.Fatalf("read %q from a refused file", name)
			}
			if pm.err == nil || !strings.Contains(pm.err.Error(), c.want) && !(c.want == "symbolic link" && strings.Contains(pm.err.Error(), "too many levels")) {
				t.Errorf("error %v, want one saying %q", pm.err, c.want)
			}
		})
	}
}

func mkfifo(p string) error { return unix.Mkfifo(p, 0o644) }
