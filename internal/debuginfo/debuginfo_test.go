// SPDX-License-Identifier: Apache-2.0

package debuginfo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/cbuild"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// buildSplit builds a C program with a build ID, splits its debug
// information into a separate file (objcopy --only-keep-debug) and strips
// the program. It returns the stripped program, the debug file and the ID.
func buildSplit(t *testing.T, dir string) (bin, dbg, id string) {
	t.Helper()
	for _, tool := range []string{cbuild.Compiler, "objcopy", "strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("TICKPROF_REQUIRE_BPF") == "1" {
				t.Fatalf("%s not found: the test builds its own debug files (required in CI)", tool)
			}
			t.Skipf("%s not found: the test builds its own debug files", tool)
		}
	}
	code := "static int local_helper(int x) { return x * 3; }\nint main(int c, char **v) { (void)v; return local_helper(c); }\n"
	bin, err := cbuild.BuildSource(dir, "prog", []byte(code), []string{"-g", "-O0", "-Wl,--build-id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dbg = filepath.Join(dir, "prog.debug")
	for _, s := range [][]string{
		{"objcopy", "--only-keep-debug", bin, dbg},
		{"strip", "--strip-all", bin},
		{"objcopy", "--add-gnu-debuglink=" + dbg, bin},
	} {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, out)
		}
	}
	if id, err = BuildID(bin); err != nil {
		t.Fatal(err)
	}
	return bin, dbg, id
}

// hasLocalHelper reports whether the file's symbol table names the static
// function only the debug file keeps.
func hasLocalHelper(t *testing.T, p string) bool {
	t.Helper()
	for _, s := range testtarget.Symbols(t, p) {
		if s.Name == "local_helper" {
			return true
		}
	}
	return false
}

func TestDebugDir(t *testing.T) {
	dir := t.TempDir()
	bin, dbg, id := buildSplit(t, dir)
	if hasLocalHelper(t, bin) {
		t.Fatal("the stripped program still names local_helper")
	}
	root := filepath.Join(dir, "debug")
	p := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(dbg)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := &Finder{DebugDirs: []string{root}}
	got, err := f.Find(context.Background(), id)
	if err != nil || got != p {
		t.Fatalf("Find = %q, %v; want %q", got, err, p)
	}
	if !hasLocalHelper(t, got) {
		t.Error("the debug file found does not name local_helper")
	}
	// Another build's ID is not found, and nothing is fetched.
	other := strings.Repeat("ab", 20)
	if _, err := f.Find(context.Background(), other); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(%s) = %v, want ErrNotFound", other, err)
	}
	// A file under the right name with another build ID is refused.
	wrong := filepath.Join(root, ".build-id", other[:2], other[2:]+".debug")
	os.MkdirAll(filepath.Dir(wrong), 0o755)
	os.WriteFile(wrong, data, 0o644)
	if _, err := f.Find(context.Background(), other); err == nil || !strings.Contains(err.Error(), "want "+other) {
		t.Errorf("a debug file of another build accepted: %v", err)
	}
	// A file anyone may write is refused.
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Find(context.Background(), id); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a world-writable debug file accepted: %v", err)
	}
	if _, err := f.Find(context.Background(), "xyz"); err == nil {
		t.Error("a malformed build ID accepted")
	}
}

func TestCacheDirFromEnv(t *testing.T) {
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if got := CacheDir(); got != "/x/cache/debuginfod_client" {
		t.Errorf("CacheDir = %q", got)
	}
	t.Setenv("DEBUGINFOD_CACHE_PATH", "/y")
	if got := CacheDir(); got != "/y" {
		t.Errorf("CacheDir = %q", got)
	}
	t.Setenv("DEBUGINFOD_URLS", "")
	if f := FromEnv(); len(f.URLs) != 0 {
		t.Errorf("URLs without DEBUGINFOD_URLS: %v", f.URLs)
	}
	t.Setenv("DEBUGINFOD_URLS", "http://a/ https://b")
	if f := FromEnv(); len(f.URLs) != 2 || f.URLs[0] != "http://a" || f.URLs[1] != "https://b" {
		t.Errorf("URLs = %v", f.URLs)
	}
}

// TestDebuginfodServer starts Debian's debuginfod on loopback serving a
// debug file the test built, fetches it into a fresh client cache, and
// finds it in the cache once the server is gone.
func TestDebuginfodServer(t *testing.T) {
	server, err := exec.LookPath("debuginfod")
	if err != nil {
		if os.Getenv("TICKPROF_REQUIRE_BPF") == "1" {
			t.Fatal("debuginfod not found (apt package debuginfod): required in CI")
		}
		t.Skip("debuginfod not found (apt package debuginfod): cannot test the client against a server")
	}
	dir := t.TempDir()
	_, dbg, id := buildSplit(t, dir)
	serve := filepath.Join(dir, "serve")
	os.Mkdir(serve, 0o755)
	data, _ := os.ReadFile(dbg)
	os.WriteFile(filepath.Join(serve, "prog.debug"), data, 0o644)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(server, "-F", "-p", fmt.Sprint(port), "-d", filepath.Join(dir, "db.sqlite"), "-t", "0", "-g", "0", serve)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	defer stop()

	cache := filepath.Join(dir, "cache")
	f := &Finder{CacheDir: cache, URLs: []string{fmt.Sprintf("http://127.0.0.1:%d", port)}, Timeout: 5 * time.Second}
	var got string
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err = f.Find(context.Background(), id)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the server is still scanning
	}
	if err != nil {
		t.Fatalf("fetch from debuginfod: %v\nserver log:\n%s", err, log.String())
	}
	want := filepath.Join(cache, id, "debuginfo")
	if got != want {
		t.Errorf("fetched into %s, want the client cache layout %s", got, want)
	}
	if !hasLocalHelper(t, got) {
		t.Error("the fetched debug file does not name local_helper")
	}
	stop()
	// Served from the cache without the server.
	if got2, err := f.Find(context.Background(), id); err != nil || got2 != want {
		t.Errorf("from the cache: %q, %v", got2, err)
	}
	// An unknown build ID with the server gone fails with ErrNotFound.
	if _, err := f.Find(context.Background(), strings.Repeat("cd", 20)); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown build ID: %v", err)
	}
}
