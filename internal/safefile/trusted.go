// SPDX-License-Identifier: Apache-2.0

package safefile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenTrusted opens the regular file at path for reading, or for running
// (through /proc/self/fd), only if no other user could have written it or
// put it there: every directory on the way is owned by root or the caller
// and writable by no one else (or sticky), a symbolic link on the way
// passes OpenDir's rule, the file itself is not a link, and it is owned by
// root or the caller and writable by neither group nor others. The checks
// are made on the descriptor returned, so the file cannot be swapped
// between check and use. A refusal wraps ErrUnsafe.
func OpenTrusted(path string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir, base := filepath.Split(abs)
	w := &walk{trust: trustedDir}
	dfd, err := w.openDir(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ELOOP {
			return nil, fmt.Errorf("%s is a symbolic link: not trusted (%w)", abs, ErrUnsafe)
		}
		return nil, fmt.Errorf("open %s: %w", abs, err)
	}
	f := os.NewFile(uintptr(fd), abs)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file (%w)", abs, kindOf(st.Mode), ErrNotRegular)
	}
	if euid := uint32(os.Geteuid()); st.Uid != 0 && st.Uid != euid {
		f.Close()
		return nil, fmt.Errorf("%s is owned by uid %d, not by root or uid %d: not trusted (%w)", abs, st.Uid, euid, ErrUnsafe)
	}
	if st.Mode&0o022 != 0 {
		f.Close()
		return nil, fmt.Errorf("%s is writable by group or others (mode %#o): not trusted (%w)", abs, st.Mode&0o7777, ErrUnsafe)
	}
	return f, nil
}
