// SPDX-License-Identifier: Apache-2.0

// Package safefile owns how tickprof touches files a user names: it
// creates outputs without following symbolic links and without replacing
// another user's file in a sticky directory, and it reads inputs with a
// size limit, refusing what is not a regular file (a device such as
// /dev/zero, a FIFO, a directory).
//
// tickprof often runs as root, in directories (the working directory, /tmp)
// where other users may plant links. Create therefore opens the output's
// parent directory once, checks every symbolic link on the way to it (one
// in a sticky, world-writable directory is followed only when it belongs to
// the caller or to that directory's owner, as the kernel's
// fs.protected_symlinks does), and then works relative to that directory
// descriptor: the new content goes into a fresh file made with O_EXCL and
// O_NOFOLLOW and is renamed over the output only when complete, so a
// reader never sees half a file and a link put in place meanwhile is
// replaced, never followed.
//
// Of third-party modules it imports only x/sys (checked by internal/layers).
package safefile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafe is wrapped by every refusal to create or replace a file for a
// safety reason (a link, another user's file in a sticky directory, a path
// that is not a regular file).
var ErrUnsafe = errors.New("refused for safety")

// ErrTooLarge is wrapped by ReadFile's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped by the errors for a path that is not a regular
// file (a device, a FIFO, a socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// dirFlags open a directory for use as a base of *at calls only: O_PATH
// needs no read permission, as the kernel's own walk needs none.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// maxLinks bounds the symbolic links followed while resolving a directory.
const maxLinks = 40

// File is an output being written. Its content becomes visible under the
// path given to Create only at Commit; Abort (or a failed Commit) removes
// it. Close is Commit.
type File struct {
	path    string
	dirfd   int
	tmpName string
	base    string
	f       *os.File
	done    bool
}

// Create starts writing the file at path with permission bits perm (before
// the umask). It fails, wrapping ErrUnsafe, when path is a symbolic link,
// is not a regular file, or belongs to another user in a sticky directory,
// and when a directory on the way is reached through a link another user
// could have planted. A file replaced keeps its owner and mode when the
// caller may set them (root replacing a user's file in the user's own
// directory).
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("%s: a file name is needed, not a directory", path)
	}
	if dir == "" {
		dir = "."
	}
	dirfd, err := OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	var dst unix.Stat_t
	if err := unix.Fstat(dirfd, &dst); err != nil {
		unix.Close(dirfd)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	old, exists, err := checkTarget(dirfd, base, path, &dst)
	if err != nil {
		unix.Close(dirfd)
		return nil, err
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		unix.Close(dirfd)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	tmp := "." + base + ".tmp-" + hex.EncodeToString(rnd[:])
	if len(tmp) > 255 {
		tmp = ".tickprof.tmp-" + hex.EncodeToString(rnd[:])
	}
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		unix.Close(dirfd)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if exists && int(old.Uid) != os.Geteuid() {
		// Keep the owner and mode of the file replaced (root writing into
		// a user's own directory); without the right to, the new file is
		// the caller's.
		if unix.Fchown(fd, int(old.Uid), int(old.Gid)) == nil {
			_ = unix.Fchmod(fd, old.Mode&0o777)
		}
	}
	return &File{path: path, dirfd: dirfd, tmpName: tmp, base: base, f: os.NewFile(uintptr(fd), path)}, nil
}

// checkTarget checks the file name base in the directory dirfd (stat dst)
// before it is replaced: it must not be a link or anything but a regular
// file, and in a sticky directory it must be the caller's.
func checkTarget(dirfd int, base, path string, dst *unix.Stat_t) (unix.Stat_t, bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("create %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return st, true, fmt.Errorf("%s is a symbolic link: tickprof does not write through links (%w); give the path of a regular file or a new name", path, ErrUnsafe)
	case unix.S_IFREG:
	default:
		return st, true, fmt.Errorf("%s is %s, %w: give the path of a regular file to write (%w)", path, kindOf(st.Mode), ErrNotRegular, ErrUnsafe)
	}
	if dst.Mode&unix.S_ISVTX != 0 && int(st.Uid) != os.Geteuid() {
		return st, true, fmt.Errorf("%s belongs to uid %d in a sticky directory: not replacing another user's file (%w); choose another name", path, st.Uid, ErrUnsafe)
	}
	return st, true, nil
}

// Write writes to the new content.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Commit completes the file: it is synced, checked once more (a link put
// in its place meanwhile is refused) and renamed over the output.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	defer unix.Close(f.dirfd)
	if err := f.f.Sync(); err != nil {
		f.f.Close()
		unix.Unlinkat(f.dirfd, f.tmpName, 0)
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if err := f.f.Close(); err != nil {
		unix.Unlinkat(f.dirfd, f.tmpName, 0)
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	var dst unix.Stat_t
	if err := unix.Fstat(f.dirfd, &dst); err != nil {
		unix.Unlinkat(f.dirfd, f.tmpName, 0)
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if _, _, err := checkTarget(f.dirfd, f.base, f.path, &dst); err != nil {
		unix.Unlinkat(f.dirfd, f.tmpName, 0)
		return err
	}
	if err := unix.Renameat(f.dirfd, f.tmpName, f.dirfd, f.base); err != nil {
		unix.Unlinkat(f.dirfd, f.tmpName, 0)
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	return nil
}

// Close is Commit.
func (f *File) Close() error { return f.Commit() }

// Abort discards the new content; the output is left as it was.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	unix.Unlinkat(f.dirfd, f.tmpName, 0)
	unix.Close(f.dirfd)
}

// WriteFile writes the file at path through Create: write is called with
// the new content's writer, and the file is committed when it returns nil.
func WriteFile(path string, perm fs.FileMode, write func(io.Writer) error) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// OpenDir opens the directory dir with O_PATH (for openat, fstatat and
// renameat) after checking every symbolic link
// on the way: a link inside a sticky directory that others may write is
// followed only when it belongs to the caller or to that directory's owner
// (the rule of fs.protected_symlinks, applied whether or not the sysctl is
// on). The caller closes the descriptor.
func OpenDir(dir string) (int, error) {
	return (&walk{}).openDir(dir)
}

// walk resolves a directory path component by component: links counts the
// symbolic links followed; trust, when set, checks every directory reached
// (its stat and its path, for errors).
type walk struct {
	links int
	trust func(st *unix.Stat_t, path string) error
}

// openDir opens dir, from the root or the working directory.
func (w *walk) openDir(dir string) (int, error) {
	start := "."
	if filepath.IsAbs(dir) {
		start = "/"
	}
	fd, err := unix.Open(start, dirFlags, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", start, err)
	}
	if err := w.check(fd, start); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return w.steps(fd, dir, start)
}

// steps walks the components of rel from the directory fd (whose path is
// walked), consuming fd, and returns the last directory opened.
func (w *walk) steps(fd int, rel, walked string) (int, error) {
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		next, err := w.stepDir(fd, c, walked)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
		walked = filepath.Join(walked, c)
	}
	return fd, nil
}

// check applies trust, when set, to the directory fd at path.
func (w *walk) check(fd int, path string) error {
	if w.trust == nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return w.trust(&st, path)
}

// stepDir opens the directory entry name of the directory fd (whose path,
// for errors, is walked), checking a link before following it.
func (w *walk) stepDir(fd int, name, walked string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(walked, name), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		nfd, err := unix.Openat(fd, name, dirFlags|unix.O_NOFOLLOW, 0)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", filepath.Join(walked, name), err)
		}
		if err := w.check(nfd, filepath.Join(walked, name)); err != nil {
			unix.Close(nfd)
			return -1, err
		}
		return nfd, nil
	}
	w.links++
	if w.links > maxLinks {
		return -1, fmt.Errorf("%s: too many levels of symbolic links", filepath.Join(walked, name))
	}
	var parent unix.Stat_t
	if err := unix.Fstat(fd, &parent); err != nil {
		return -1, err
	}
	if err := linkTrusted(&st, &parent); err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(walked, name), err)
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, buf)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(walked, name), err)
	}
	target := string(buf[:n])
	if filepath.IsAbs(target) {
		return w.openDir(target)
	}
	// A relative link resolves from the directory that holds it: walk it
	// from fd, component by component, with the same checks.
	cur, err := unix.Dup(fd)
	if err != nil {
		return -1, err
	}
	return w.steps(cur, target, walked)
}

// linkTrusted applies the fs.protected_symlinks rule to a link st found in
// the directory parent.
func linkTrusted(st, parent *unix.Stat_t) error {
	if parent.Mode&unix.S_ISVTX == 0 || parent.Mode&0o002 == 0 {
		return nil
	}
	euid := uint32(os.Geteuid())
	if st.Uid == euid || st.Uid == parent.Uid {
		return nil
	}
	return fmt.Errorf("a symbolic link of uid %d in a sticky, world-writable directory: not followed (%w)", st.Uid, ErrUnsafe)
}

// kindOf names a file type for errors: "a character device".
func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return "not a regular file"
}

// ReadFile reads the regular file at path, at most limit bytes. It refuses
// without reading what is not a regular file (a device, a FIFO: opened
// without blocking) and a file over limit, with an error that states the
// limit; what names it is the caller's (what, e.g. "profile").
func ReadFile(path, what string, limit int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s %s is %s, %w: give a file", what, path, kindOf(st.Mode), ErrNotRegular)
	}
	if st.Size > limit {
		return nil, fmt.Errorf("%s %s is %s, over the %s limit: %w", what, path, Size(st.Size), Size(limit), ErrTooLarge)
	}
	// The size can grow while reading: read at most limit+1 bytes.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s %s grew past the %s limit while read: %w", what, path, Size(limit), ErrTooLarge)
	}
	return b, nil
}

// Size formats a byte count: 268435456 -> "256 MiB".
func Size(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k && n%(k*k*k) == 0:
		return fmt.Sprintf("%d GiB", n/(k*k*k))
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k && n%(k*k) == 0:
		return fmt.Sprintf("%d MiB", n/(k*k))
	case n >= k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	case n >= k && n%k == 0:
		return fmt.Sprintf("%d KiB", n/k)
	case n >= k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d bytes", n)
}

// LimitedReader returns r that fails with ErrTooLarge (stating the limit
// and what) after limit bytes: for decompressing what a file holds.
func LimitedReader(r io.Reader, what string, limit int64) io.Reader {
	return &limited{r: r, left: limit, limit: limit, what: what}
}

type limited struct {
	r           io.Reader
	left, limit int64
	what        string
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a stream of exactly limit bytes from a
		// longer one.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%s is over the %s limit: %w", l.what, Size(l.limit), ErrTooLarge)
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// CheckCreate reports, without creating anything, whether Create(path)
// would be refused now: a missing or unreadable directory, a directory
// the caller cannot write, a link or a foreign file at path. Commands call
// it before a long measurement so that a bad output path fails at once,
// not after the data is gathered.
func CheckCreate(path string) error {
	dir, base := filepath.Split(path)
	if base == "" || base == "." || base == ".." {
		return fmt.Errorf("%s: a file name is needed, not a directory", path)
	}
	if dir == "" {
		dir = "."
	}
	dirfd, err := OpenDir(dir)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer unix.Close(dirfd)
	var dst unix.Stat_t
	if err := unix.Fstat(dirfd, &dst); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, _, err := checkTarget(dirfd, base, path, &dst); err != nil {
		return err
	}
	if err := unix.Faccessat(dirfd, ".", unix.W_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("create %s: directory %s: %w", path, dir, err)
	}
	return nil
}

// ReadParsed reads the file at path as ReadFile does and parses it with
// parse; a parse error names what and path.
func ReadParsed[T any](path, what string, limit int64, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	data, err := ReadFile(path, what, limit)
	if err != nil {
		return zero, err
	}
	v, err := parse(bytes.NewReader(data))
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return v, nil
}
