// SPDX-License-Identifier: Apache-2.0

package push

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// safeDir is a directory this process writes files into without following
// symbolic links: it is opened once (refusing a link as its last component)
// and checked to be owned by this user and writable by nobody else, and every
// file is then created relative to that open directory with
// O_CREAT|O_EXCL|O_NOFOLLOW, written to a temporary name, synced and renamed.
type safeDir struct {
	path string
	f    *os.File
	fd   int
	// lazySync skips the directory fsync after each rename: a crash may
	// then lose the newest files' names, never leave a partial file.
	lazySync bool
}

// openSafeDir opens (creating with mode 0700 when missing) the directory at
// path and checks its owner and permissions.
func openSafeDir(path string) (*safeDir, error) {
	if path == "" {
		return nil, errors.New("no directory given")
	}
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create directory %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("directory %s is a symbolic link or not a directory: %w", path, err)
		}
		return nil, fmt.Errorf("open directory %s: %w", path, err)
	}
	var st unix.Stat_t
	fd := int(f.Fd())
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat directory %s: %w", path, err)
	}
	if err := trustworthy(&st); err != nil {
		f.Close()
		return nil, fmt.Errorf("directory %s: %w", path, err)
	}
	return &safeDir{path: path, f: f, fd: fd}, nil
}

// trustworthy accepts a file owned by root or by this process's user and
// writable by nobody else.
func trustworthy(st *unix.Stat_t) error {
	euid := uint32(os.Geteuid())
	if st.Uid != euid && st.Uid != 0 {
		return fmt.Errorf("owned by uid %d, not by uid %d or root", st.Uid, euid)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("writable by group or others (mode %#o); chmod go-w it", st.Mode&0o7777)
	}
	return nil
}

// close releases the directory.
func (d *safeDir) close() error { return d.f.Close() }

// write stores data as name atomically: a temporary file created with
// O_EXCL|O_NOFOLLOW, written, fsynced and renamed over name, then the
// directory fsynced.
func (d *safeDir) write(name string, data []byte) error {
	if strings.ContainsRune(name, '/') || name == "" || name[0] == '.' {
		return fmt.Errorf("bad file name %q", name)
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := ".tmp-" + hex.EncodeToString(rnd[:]) + "-" + name
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s in %s: %w", tmp, d.path, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if werr != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return fmt.Errorf("write %s in %s: %w", name, d.path, werr)
	}
	if d.lazySync {
		return nil
	}
	if err := unix.Fsync(d.fd); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.path, err)
	}
	return nil
}

// read returns the content of the regular file name, refusing a link, a
// file another user could have written and a file over limit bytes.
func (d *safeDir) read(name string, limit int64) ([]byte, error) {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s in %s: %w", name, d.path, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s in %s: %w", name, d.path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s in %s is not a regular file", name, d.path)
	}
	if err := trustworthy(&st); err != nil {
		return nil, fmt.Errorf("%s in %s: %w", name, d.path, err)
	}
	if st.Size > limit {
		return nil, fmt.Errorf("%s in %s is %d bytes, over the limit of %d", name, d.path, st.Size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s in %s grew over the limit of %d bytes", name, d.path, limit)
	}
	return b, err
}

// remove deletes name.
func (d *safeDir) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s in %s: %w", name, d.path, err)
	}
	return nil
}

// entry is one regular file of the directory.
type entry struct {
	name  string
	size  int64
	mtime int64 // ns since the epoch
}

// openListed opens the directory at path (openSafeDir) and lists its files
// with the suffix (list); errors name what the directory is for (what).
func openListed(path, suffix, what string) (*safeDir, []entry, error) {
	d, err := openSafeDir(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	files, err := d.list(suffix)
	if err != nil {
		d.close()
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return d, files, nil
}

// list returns the regular files whose names have the suffix, sorted by
// name; temporary files left by a crash are removed.
func (d *safeDir) list(suffix string) ([]entry, error) {
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read directory %s: %w", d.path, err)
	}
	names, err := d.f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", d.path, err)
	}
	sort.Strings(names)
	var out []entry
	for _, n := range names {
		if strings.HasPrefix(n, ".tmp-") {
			d.remove(n)
			continue
		}
		if !strings.HasSuffix(n, suffix) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(d.fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		out = append(out, entry{name: n, size: st.Size, mtime: st.Mtim.Nano()})
	}
	return out, nil
}
