// SPDX-License-Identifier: Apache-2.0

package safefile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// other is the uid that plays another local user (nobody).
const other = 65534

func write(t *testing.T, path, s string) error {
	t.Helper()
	return WriteFile(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, s); return err })
}

// onlyEntry fails unless dir holds one entry: nothing was left behind (no
// temporary file, nothing created by a check).
func onlyEntry(t *testing.T, dir string) {
	t.Helper()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d entries in %s, want 1 (nothing left behind)", len(ents), dir)
	}
}

// writeRefused fails unless writing to path is refused as unsafe, with an
// error that mentions why, and kept still holds what it held.
func writeRefused(t *testing.T, path, why, kept, held string) {
	t.Helper()
	err := write(t, path, "overwritten")
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), why) {
		t.Fatalf("err = %v, want a refusal mentioning %q", err, why)
	}
	if b, _ := os.ReadFile(kept); string(b) != held {
		t.Fatalf("%s now holds %q, want %q", kept, b, held)
	}
}

func TestCreateNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.pb.gz")
	if err := write(t, p, "one"); err != nil {
		t.Fatal(err)
	}
	if err := write(t, p, "two"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "two" {
		t.Fatalf("content %q, want two", b)
	}
	onlyEntry(t, dir)
}

func TestCreateRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := write(t, "rel.json", "x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := write(t, "sub/../sub/a.json", "y"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "a.json")); string(b) != "y" {
		t.Fatalf("sub/a.json = %q", b)
	}
}

// A link at the output path, pointing at a root-owned 0600 file, is
// refused and the file it points at is untouched.
func TestCreateRefusesLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "sample.pb.gz")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	writeRefused(t, link, "symbolic link", victim, "secret")
	// A dangling link (to a file that would be created) is refused too.
	dangling := filepath.Join(dir, "time.json")
	if err := os.Symlink(filepath.Join(dir, "new"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := write(t, dangling, "x"); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("dangling link: err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new")); err == nil {
		t.Fatal("the dangling link's target was created")
	}
}

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to play another user (chown)")
	}
}

// stickyDir is a world-writable sticky directory like /tmp.
func stickyDir(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return d
}

// Another user's file in a sticky directory is not replaced; the caller's
// own is.
func TestCreateStickyOtherOwner(t *testing.T) {
	needRoot(t)
	d := stickyDir(t)
	p := filepath.Join(d, "out.json")
	if err := os.WriteFile(p, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, other, other); err != nil {
		t.Fatal(err)
	}
	writeRefused(t, p, "sticky", p, "theirs")
	own := filepath.Join(d, "own.json")
	if err := write(t, own, "a"); err != nil {
		t.Fatal(err)
	}
	if err := write(t, own, "b"); err != nil {
		t.Fatalf("replacing the caller's own file in a sticky directory: %v", err)
	}
}

// A directory link planted by another user in a sticky directory is not
// followed; one of the caller's is.
func TestCreateUntrustedDirLink(t *testing.T) {
	needRoot(t)
	d := stickyDir(t)
	secret := t.TempDir()
	if err := os.WriteFile(filepath.Join(secret, "f"), []byte("root"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(d, "x")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, other, other); err != nil {
		t.Fatal(err)
	}
	err := write(t, filepath.Join(link, "f"), "pwned")
	if !errors.Is(err, ErrUnsafe) {
		t.Fatalf("err = %v, want a refusal of the planted link", err)
	}
	if b, _ := os.ReadFile(filepath.Join(secret, "f")); string(b) != "root" {
		t.Fatalf("file behind the link now %q", b)
	}
	if err := os.Lchown(link, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := write(t, filepath.Join(link, "g"), "ok"); err != nil {
		t.Fatalf("the caller's own link: %v", err)
	}
}

// Root replacing a user's file in that user's own directory keeps the
// file the user's.
func TestCreateKeepsOwner(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "sample.pb.gz")
	if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, other, other); err != nil {
		t.Fatal(err)
	}
	if err := write(t, p, "new"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != other || fi.Mode().Perm() != 0o640 {
		t.Fatalf("owner %d mode %v, want %d 0640", st.Uid, fi.Mode().Perm(), other)
	}
}

func TestCreateRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := write(t, fifo, "x"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("fifo: err = %v", err)
	}
	if err := write(t, dir+"/", "x"); err == nil {
		t.Fatal("a directory path was accepted")
	}
}

func TestWriteFileAbortKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	if err := write(t, p, "old"); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(p, 0o644, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("no error")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("after a failed write the file holds %q", b)
	}
	onlyEntry(t, dir)
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("a"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, "profile", 100); err != nil || len(b) != 100 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	_, err := ReadFile(p, "profile", 99)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "99 bytes limit") {
		t.Fatalf("over the limit: %v", err)
	}
	for _, dev := range []string{"/dev/zero", "/dev/null"} {
		_, err := ReadFile(dev, "profile", 1<<20)
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
			t.Fatalf("%s: %v", dev, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO without a writer would block an ordinary open forever.
	if _, err := ReadFile(fifo, "pilot", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("fifo: %v", err)
	}
	if _, err := ReadFile(dir, "pilot", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), "pilot", 1); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestLimitedReader(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(make([]byte, 10<<20)) // 10 MiB of zeros, ~10 KiB compressed
	zw.Close()
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(LimitedReader(zr, "decompressed profile", 1<<20))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("err = %v", err)
	}
	b, err := io.ReadAll(LimitedReader(strings.NewReader("abc"), "x", 3))
	if err != nil || string(b) != "abc" {
		t.Fatalf("exactly at the limit: %q %v", b, err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{12: "12 bytes", 1024: "1 KiB", 256 << 20: "256 MiB", 1536: "1.5 KiB", 1 << 30: "1 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheckCreate(t *testing.T) {
	dir := t.TempDir()
	if err := CheckCreate(filepath.Join(dir, "new.json")); err != nil {
		t.Fatalf("new file: %v", err)
	}
	if err := CheckCreate(filepath.Join(dir, "missing", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing directory: %v", err)
	}
	os.Symlink("/etc/passwd", filepath.Join(dir, "l"))
	if err := CheckCreate(filepath.Join(dir, "l")); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("link: %v", err)
	}
	onlyEntry(t, dir)
}

func TestMkdirPrivate(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cache")
	if err := MkdirPrivate(dir); err != nil {
		t.Fatalf("new directory: %v", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("made %v (%v), want a directory of mode 0700", fi, err)
	}
	if err := MkdirPrivate(dir); err != nil {
		t.Fatalf("existing directory: %v", err)
	}

	// The last component a link: refused, even to a good directory.
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("link as the directory: %v, want ErrUnsafe", err)
	}

	// A directory on the way that others may write (not sticky): another
	// user could rename the cache away and put their own in its place.
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(filepath.Join(open, "sub", "cache")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("world-writable directory on the way: %v, want ErrUnsafe", err)
	}
	// Sticky, it is fine (as /tmp is).
	if err := os.Chmod(open, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(filepath.Join(open, "cache")); err != nil {
		t.Errorf("sticky world-writable directory on the way: %v", err)
	}

	// A directory on the way reached through a good link is checked too.
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(root, "via")
	if err := os.Symlink(open, via); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(filepath.Join(via, "cache2")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("world-writable directory behind a link: %v, want ErrUnsafe", err)
	}

	// A directory on the way owned by another user.
	if os.Geteuid() != 0 {
		t.Skip("changing an owner needs root")
	}
	theirs := filepath.Join(root, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, other, other); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(filepath.Join(theirs, "cache")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("another user's directory on the way: %v, want ErrUnsafe", err)
	}
}
