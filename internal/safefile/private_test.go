package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

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
