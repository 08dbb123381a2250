// SPDX-License-Identifier: Apache-2.0

package push

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Dir writes each window as a gzipped pprof file in a directory, named
// START-SERVICE-pidPID-SEQ.pb.gz, and prunes the directory: the
// oldest files go when the total passes MaxBytes or when they are older than
// MaxAge. Files are created without following links (see safeDir) and
// renamed into place once synced, so a reader never sees half a profile.
type Dir struct {
	mu   sync.Mutex
	dir  *safeDir
	opts DirOptions
	seq  uint64
	// files indexes the directory's pprof files, oldest first: read once at
	// NewDir, then kept up to date, so that pruning costs no directory scan.
	files []entry
	total int64
}

// DirOptions configure a Dir sink.
type DirOptions struct {
	// MaxBytes caps the directory's pprof files (0: 1 GiB).
	MaxBytes int64
	// MaxAge removes files older than this (0: keep by size only).
	MaxAge time.Duration
	// Now returns the time (nil: time.Now); files' ages are from their
	// modification times.
	Now func() time.Time
}

// DirSuffix ends the names of the files a Dir sink writes.
const DirSuffix = ".pb.gz"

// NewDir opens (creating when missing, mode 0700) the directory.
func NewDir(path string, opts DirOptions) (*Dir, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 30
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d, files, err := openListed(path, DirSuffix, "profile directory")
	if err != nil {
		return nil, err
	}
	// A profile file is synced before its rename, so a crash never leaves
	// half of one; the directory is not synced after each, so a crash may
	// lose the last names. The spool, which must not lose a window, syncs.
	d.lazySync = true
	s := &Dir{dir: d, opts: opts, files: files}
	for _, f := range files {
		s.total += f.size
	}
	return s, nil
}

// Name implements Sink.
func (s *Dir) Name() string { return "dir" }

// Close releases the directory.
func (s *Dir) Close() error { return s.dir.close() }

// fileName is the file a window is written to:
// START-SERVICE[-pidPID]-SEQ.pb.gz, START the UTC start time
// (20060102T150405.000000000Z), so that names sort by time.
func (s *Dir) fileName(w *Window) string {
	var b strings.Builder
	b.WriteString(w.Start.UTC().Format("20060102T150405.000000000Z"))
	b.WriteByte('-')
	b.WriteString(fileSafe(w.Service()))
	if w.Name != "" {
		b.WriteByte('-')
		b.WriteString(fileSafe(w.Name))
	}
	if pid := w.Labels["pid"]; pid != "" {
		b.WriteString("-pid")
		b.WriteString(fileSafe(pid))
	}
	fmt.Fprintf(&b, "-%d%s", s.seq, DirSuffix)
	return b.String()
}

// fileSafe keeps letters, digits, '.', '_' and '-'.
func fileSafe(v string) string {
	out := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, v)
	if out == "" || out[0] == '.' {
		out = "_" + out
	}
	return out
}

// Push implements Sink.
func (s *Dir) Push(ctx context.Context, w *Window) error {
	data, err := w.encode()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	name := s.fileName(w)
	if err := s.dir.write(name, data); err != nil {
		return err
	}
	s.files = append(s.files, entry{name: name, size: int64(len(data)), mtime: s.opts.Now().UnixNano()})
	s.total += int64(len(data))
	return s.prune()
}

// prune removes the oldest files while they are older than MaxAge or the
// total is over MaxBytes; the newest file always stays.
func (s *Dir) prune() error {
	cutoff := int64(0)
	if s.opts.MaxAge > 0 {
		cutoff = s.opts.Now().Add(-s.opts.MaxAge).UnixNano()
	}
	n := 0
	for n < len(s.files)-1 {
		f := s.files[n]
		if f.mtime >= cutoff && s.total <= s.opts.MaxBytes {
			break
		}
		if err := s.dir.remove(f.name); err != nil {
			return err
		}
		s.total -= f.size
		n++
	}
	s.files = append(s.files[:0], s.files[n:]...)
	return nil
}
