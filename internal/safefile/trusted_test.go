// SPDX-License-Identifier: Apache-2.0

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenTrusted(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "prog")
	if err := os.WriteFile(good, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := OpenTrusted(good)
	if err != nil {
		t.Fatalf("a file of the caller's, mode 0755: %v", err)
	}
	f.Close()

	// The file itself writable by others, or by its group.
	for _, mode := range []os.FileMode{0o757, 0o775} {
		if err := os.Chmod(good, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenTrusted(good); !errors.Is(err, ErrUnsafe) {
			t.Errorf("mode %#o: %v, want ErrUnsafe", mode, err)
		}
	}
	os.Chmod(good, 0o755)

	// A link in its place, even to a good file.
	link := filepath.Join(root, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTrusted(link); !errors.Is(err, ErrUnsafe) {
		t.Errorf("link: %v, want ErrUnsafe", err)
	}

	// Not a regular file.
	if _, err := OpenTrusted(root); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v, want ErrNotRegular", err)
	}

	// In a directory others may write (not sticky): they could have put it
	// there.
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(open, "prog")
	if err := os.WriteFile(in, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTrusted(in); !errors.Is(err, ErrUnsafe) {
		t.Errorf("world-writable directory: %v, want ErrUnsafe", err)
	}
	if _, err := OpenTrusted(filepath.Join(root, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}

	// Owned by another user.
	if os.Geteuid() != 0 {
		t.Skip("changing an owner needs root")
	}
	if err := os.Chown(good, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenTrusted(good); !errors.Is(err, ErrUnsafe) {
		t.Errorf("another user's file: %v, want ErrUnsafe", err)
	}
}
