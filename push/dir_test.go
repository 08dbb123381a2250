// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "profiles")
	now := time.Now()
	s, err := NewDir(dir, DirOptions{MaxAge: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v; want 0700", st.Mode(), err)
	}
	w := testWindow(1)
	if err := s.Push(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+DirSuffix))
	if len(files) != 1 || !strings.Contains(filepath.Base(files[0]), "-app-pid4242-") {
		t.Fatalf("files %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sameStacks(t, decode(t, b), w.Profile)

	// Age: a file of a previous run modified two hours ago goes at the
	// next write (the directory is indexed when opened).
	old := filepath.Join(dir, "00000000T000000.000000000Z-old-1"+DirSuffix)
	if err := os.WriteFile(old, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(old, now.Add(-2*time.Hour), now.Add(-2*time.Hour))
	s.Close()
	if s, err = NewDir(dir, DirOptions{MaxAge: time.Hour, Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Push(context.Background(), testWindow(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("file older than MaxAge kept: %v", err)
	}
	// Size: with a cap of about two files, only the newest two stay.
	s.opts.MaxBytes = int64(2*len(b) + len(b)/2)
	for i := 3; i < 8; i++ {
		if err := s.Push(context.Background(), testWindow(i)); err != nil {
			t.Fatal(err)
		}
	}
	files, _ = filepath.Glob(filepath.Join(dir, "*"+DirSuffix))
	if len(files) != 2 {
		t.Errorf("%d files under the size cap, want 2: %v", len(files), files)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestDirRefusesUnsafe(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDir(link, DirOptions{}); err == nil {
		t.Error("a symbolic link to a directory was accepted")
	}
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if _, err := NewDir(open, DirOptions{}); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("world-writable directory: got %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(root, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 65534, 65534)
		if _, err := NewDir(other, DirOptions{}); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("directory of another user: got %v", err)
		}
	}
	// A link planted under the name of a file is never followed: the file
	// is written under a fresh temporary name and renamed over the link.
	d, err := openSafeDir(real)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	target := filepath.Join(root, "victim")
	os.WriteFile(target, []byte("keep"), 0o600)
	os.Symlink(target, filepath.Join(real, "x.pb.gz"))
	if err := d.write("x.pb.gz", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("write followed a link: victim now %q", b)
	}
	if _, err := d.read("x.pb.gz", 1<<20); err != nil {
		t.Errorf("read back: %v", err)
	}
	os.Symlink(target, filepath.Join(real, "y"))
	if _, err := d.read("y", 1<<20); err == nil {
		t.Error("read followed a link")
	}
}

func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("  tok-123 \n"), 0o600)
	if tok, err := ReadTokenFile(good); err != nil || tok != "tok-123" {
		t.Errorf("ReadTokenFile = %q, %v", tok, err)
	}
	writable := filepath.Join(dir, "writable")
	os.WriteFile(writable, []byte("tok"), 0o600)
	os.Chmod(writable, 0o666)
	if _, err := ReadTokenFile(writable); err == nil {
		t.Error("world-writable token file accepted")
	}
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	if _, err := ReadTokenFile(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("symbolic link: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		os.WriteFile(other, []byte("tok"), 0o600)
		os.Chown(other, 65534, 65534)
		if _, err := ReadTokenFile(other); err == nil {
			t.Error("token file of another user accepted")
		}
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if _, err := ReadTokenFile(empty); err == nil {
		t.Error("empty token file accepted")
	}
	if err := (Auth{BasicUser: "u", BearerTokenFile: good}).Check(); err == nil {
		t.Error("basic auth and bearer token together accepted")
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 30: time.Second} {
		for i := 0; i < 200; i++ {
			d := b.Delay(attempt)
			if d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}
