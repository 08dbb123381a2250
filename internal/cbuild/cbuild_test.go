// SPDX-License-Identifier: Apache-2.0

package cbuild

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needCompiler skips without gcc, or fails under TICKPROF_REQUIRE_BPF=1
// (CI, where everything the tests need is installed).
func needCompiler(t *testing.T) {
	t.Helper()
	if _, err := Find(); err != nil {
		if os.Getenv("TICKPROF_REQUIRE_BPF") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func writeC(t *testing.T, dir, name, code string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", bin, err, out)
	}
	return string(out)
}

const hello = `#include <stdio.h>
#include <math.h>
int main(void) { printf("%d %.0f\n", VALUE, sqrt(49.0)); return 0; }
`

func TestBuildSource(t *testing.T) {
	needCompiler(t)
	dir := t.TempDir()
	exe, err := BuildSource(dir, "hello", []byte(hello), []string{"-O1", "-DVALUE=42"}, []string{"-lm"})
	if err != nil {
		t.Fatal(err)
	}
	if exe != filepath.Join(dir, "hello") {
		t.Errorf("built %s, want dir/hello", exe)
	}
	if got := run(t, exe); got != "42 7\n" {
		t.Errorf("the program printed %q", got)
	}
}

// TestError: a source that does not compile gives an *Error whose message
// names the command and carries the compiler's own diagnostic.
func TestError(t *testing.T) {
	needCompiler(t)
	dir := t.TempDir()
	src := writeC(t, dir, "bad.c", "int main(void) { return undeclared_thing; }\n")
	err := Build(filepath.Join(dir, "bad"), Program{Sources: []string{src}, Flags: []string{"-O0"}})
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want an *Error", err)
	}
	msg := err.Error()
	for _, want := range []string{"gcc -O0 -o ", src, "undeclared_thing"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n\n") || strings.HasSuffix(msg, "\n") {
		t.Errorf("error %q has blank lines or a trailing newline", msg)
	}
}

// TestCache: a name is built once, asking for it with other flags fails,
// and Close removes what was built.
func TestCache(t *testing.T) {
	needCompiler(t)
	src := writeC(t, t.TempDir(), "v.c", strings.Replace(hello, "VALUE", "V", 1))
	var c Cache
	c.Prefix = "cbuild-test"
	p1 := Program{Sources: []string{src}, Flags: []string{"-DV=1"}, Libs: []string{"-lm"}}
	a, err := c.Get("v1", p1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	// A second build would replace the file: same inode means not rebuilt.
	if err := os.Chmod(a, 0o700); err != nil {
		t.Fatal(err)
	}
	again, err := c.Get("v1", p1)
	if err != nil || again != a {
		t.Fatalf("second Get: %s, %v; want %s", again, err, a)
	}
	if st2, _ := os.Stat(a); !os.SameFile(st, st2) || st2.Mode().Perm() != 0o700 {
		t.Error("the second Get rebuilt the program")
	}
	if _, err := c.Get("v1", Program{Sources: []string{src}, Flags: []string{"-DV=2"}, Libs: []string{"-lm"}}); err == nil ||
		!strings.Contains(err.Error(), "-DV=1") || !strings.Contains(err.Error(), "-DV=2") {
		t.Errorf("same name, other flags: got %v, want an error naming both", err)
	}
	b, err := c.Get("v2", Program{Sources: []string{src}, Flags: []string{"-DV=2"}, Libs: []string{"-lm"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, a) + run(t, b); got != "1 7\n2 7\n" {
		t.Errorf("the programs printed %q", got)
	}
	if _, err := c.Get("../x", p1); err == nil {
		t.Error("a name with a slash was accepted")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(a)); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", filepath.Dir(a), err)
	}
}

// TestCacheFailure: a failed build is remembered, with the compiler's
// output, and not retried.
func TestCacheFailure(t *testing.T) {
	needCompiler(t)
	src := writeC(t, t.TempDir(), "bad.c", "int main(void) { return nope; }\n")
	var c Cache
	defer c.Close()
	p := Program{Sources: []string{src}}
	_, err1 := c.Get("bad", p)
	_, err2 := c.Get("bad", p)
	if err1 == nil || err1 != err2 || !strings.Contains(err1.Error(), "nope") {
		t.Errorf("got %v then %v, want the same compiler error twice", err1, err2)
	}
}

// TestPrebuilt: with Prebuilt set, Get hands out the program named after
// the first source, whatever the flags, and builds nothing; a missing one
// is an error naming the source and the directory.
func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "timed"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := Cache{Prebuilt: dir}
	defer c.Close()
	got, err := c.Get("timed-nopie", Program{Sources: []string{"/src/testdata/c/timed.c"}, Flags: []string{"-no-pie"}})
	if err != nil || got != filepath.Join(dir, "timed") {
		t.Errorf("got %s, %v; want %s/timed", got, err, dir)
	}
	_, err = c.Get("other", Program{Sources: []string{"/src/other.c"}})
	if err == nil || !strings.Contains(err.Error(), "/src/other.c") || !strings.Contains(err.Error(), dir) {
		t.Errorf("missing prebuilt program: got %v", err)
	}
	if c.dir != "" {
		t.Errorf("a prebuilt cache made a build directory %s", c.dir)
	}
}
