// SPDX-License-Identifier: Apache-2.0

package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MkdirPrivate makes the directory path (mode 0700) when it is missing and
// checks that no one but the caller and root can change what it holds or
// where its path leads: every directory from the root down to it, the ones
// a symbolic link on the way leads through included, must be owned by
// root or the caller and writable by no one else unless sticky (as /tmp
// is: others may not rename or remove what is not theirs there), every
// link on the way must pass OpenDir's rule, and path itself must be a
// directory, not a link. Files made in such a directory by path cannot be
// redirected by another user.
func MkdirPrivate(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("directory %s: %w", path, err)
	}
	parent, base := filepath.Split(abs)
	w := &walk{trust: trustedDir}
	fd, err := w.openDir(parent)
	if err != nil {
		return fmt.Errorf("directory %s: %w", path, err)
	}
	defer unix.Close(fd)
	if base == "" {
		return nil // the root
	}
	if err := unix.Mkdirat(fd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create directory %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("directory %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is %s, not a directory (%w)", path, kindOf(st.Mode), ErrUnsafe)
	}
	return trustedDir(&st, path)
}

// trustedDir accepts a directory owned by root or the caller and writable
// by no one else, or sticky.
func trustedDir(st *unix.Stat_t, path string) error {
	if euid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != euid {
		return fmt.Errorf("%s is owned by uid %d, not by root or uid %d: not trusted (%w)", path, st.Uid, euid, ErrUnsafe)
	}
	if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
		return fmt.Errorf("%s is writable by group or others (mode %#o): not trusted (%w)", path, st.Mode&0o7777, ErrUnsafe)
	}
	return nil
}
