// SPDX-License-Identifier: Apache-2.0

// Package debuginfo finds the separate debug file of an ELF build by its GNU
// build ID, the way gdb and perf do: first under /usr/lib/debug/.build-id/
// (xx/yyyy.debug, as Debian's -dbg and -dbgsym packages install them), then
// in the debuginfod client cache ($DEBUGINFOD_CACHE_PATH, else
// $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client; one
// directory per build ID holding "debuginfo"), then from the debuginfod
// servers listed in $DEBUGINFOD_URLS (space-separated), into that cache. No
// network access happens unless DEBUGINFOD_URLS is set.
//
// A debug file is used only when its own build ID matches and it is owned
// by root or by this process's user and writable by no one else; downloads
// are written to a new file (never through a symlink) in a cache directory
// that only this user and root can change, every directory on its path
// checked (safefile.MkdirPrivate), and renamed into place.
//
// Downloads are bounded and cancellable: each by the caller's context, by
// Timeout, and by HeaderTimeout until the server starts answering; a server
// that does not answer in time is not asked again by the same Finder (a
// server that accepts connections and never answers cost 30 s per build ID
// before).
//
// It imports symtab (for build IDs), internal/safefile (the private cache
// directory) and no third-party module (checked by internal/layers).
package debuginfo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickprof/tickprof/internal/safefile"
	"github.com/tickprof/tickprof/internal/symtab"
)

// Finder locates debug files.
type Finder struct {
	// DebugDirs are the roots searched for .build-id/xx/yyyy.debug.
	DebugDirs []string
	// CacheDir is the debuginfod client cache ("" for none).
	CacheDir string
	// URLs are debuginfod servers; empty means no network access.
	URLs []string
	// Timeout bounds one download (default 30 s; $DEBUGINFOD_MAXTIME).
	Timeout time.Duration
	// HeaderTimeout bounds the wait for a server's answer to begin
	// (default 2 s; $DEBUGINFOD_TIMEOUT).
	HeaderTimeout time.Duration
	// Client makes the requests (default http.DefaultClient).
	Client *http.Client
	// MaxBytes bounds a download (default 2 GiB).
	MaxBytes int64

	mu sync.Mutex
	// dead holds the servers that did not answer or could not be reached,
	// with why: they are not asked again.
	dead map[string]error
}

// FromEnv returns a Finder configured like the elfutils debuginfod client:
// /usr/lib/debug, the client cache, and $DEBUGINFOD_URLS.
func FromEnv() *Finder {
	f := &Finder{DebugDirs: []string{"/usr/lib/debug"}, CacheDir: CacheDir(),
		Timeout: envSeconds("DEBUGINFOD_MAXTIME"), HeaderTimeout: envSeconds("DEBUGINFOD_TIMEOUT")}
	for _, u := range strings.Fields(os.Getenv("DEBUGINFOD_URLS")) {
		f.URLs = append(f.URLs, strings.TrimSuffix(u, "/"))
	}
	return f
}

// envSeconds reads a positive number of seconds from the environment
// variable name, as the elfutils client does; 0 when unset or invalid.
func envSeconds(name string) time.Duration {
	v, err := strconv.ParseFloat(strings.TrimSpace(os.Getenv(name)), 64)
	if err != nil || !(v > 0) || v > 1e6 {
		return 0
	}
	return time.Duration(v * float64(time.Second))
}

// CacheDir is the debuginfod client cache directory the environment
// names: $DEBUGINFOD_CACHE_PATH, $XDG_CACHE_HOME/debuginfod_client, or
// $HOME/.cache/debuginfod_client.
func CacheDir() string {
	if d := os.Getenv("DEBUGINFOD_CACHE_PATH"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "debuginfod_client")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "debuginfod_client")
	}
	return ""
}

// ErrNotFound says no debug file was found for a build ID.
var ErrNotFound = errors.New("no debug file found")

// Find returns the path of the debug file of the build, or ErrNotFound
// (wrapped with what was tried).
func (f *Finder) Find(ctx context.Context, buildID string) (string, error) {
	id := strings.ToLower(buildID)
	if len(id) < 4 || !isHex(id) {
		return "", fmt.Errorf("build ID %q: want at least 2 bytes of hex", buildID)
	}
	var tried []string
	for _, d := range f.DebugDirs {
		p := filepath.Join(d, ".build-id", id[:2], id[2:]+".debug")
		if err := usable(p, id); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			tried = append(tried, err.Error())
		}
	}
	if f.CacheDir != "" {
		p := filepath.Join(f.CacheDir, id, "debuginfo")
		if err := usable(p, id); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			tried = append(tried, err.Error())
		}
	}
	for _, u := range f.URLs {
		if err := f.deadErr(u); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		if ctx.Err() != nil {
			tried = append(tried, fmt.Sprintf("debuginfod %s not asked: %v", u, context.Cause(ctx)))
			continue
		}
		p, err := f.fetch(ctx, u, id)
		if err == nil {
			return p, nil
		}
		tried = append(tried, err.Error())
	}
	if len(tried) == 0 {
		return "", fmt.Errorf("build ID %s: %w", id, ErrNotFound)
	}
	return "", fmt.Errorf("build ID %s: %w (%s)", id, ErrNotFound, strings.Join(tried, "; "))
}

// fetch downloads BUILDID/debuginfo from one server into the cache.
func (f *Finder) fetch(ctx context.Context, server, id string) (string, error) {
	if f.CacheDir == "" {
		return "", errors.New("no debuginfod cache directory to download into")
	}
	timeout, header := f.Timeout, f.HeaderTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if header <= 0 {
		header = 2 * time.Second
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no complete answer within %v", timeout))
	defer cancel()
	url := server + "/buildid/" + id + "/debuginfo"
	hctx, hcancel := context.WithCancelCause(ctx)
	defer hcancel(nil)
	silent := time.AfterFunc(header, func() { hcancel(fmt.Errorf("no answer within %v", header)) })
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("debuginfod request %s: %w", url, err)
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	inTime := silent.Stop()
	if err != nil {
		if cause := context.Cause(hctx); cause != nil {
			err = cause
		}
		if !inTime {
			// Silent: asking again would cost as long each time. (A
			// refused connection costs nothing, and the server may be
			// starting: it is asked again.)
			f.markDead(server, err)
		}
		return "", fmt.Errorf("debuginfod %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("debuginfod %s: %s", url, resp.Status)
	}
	return f.store(resp.Body, id, url)
}

// deadErr says why server is no longer asked, or nil.
func (f *Finder) deadErr(server string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err, ok := f.dead[server]; ok {
		return fmt.Errorf("debuginfod %s not asked again: %w", server, err)
	}
	return nil
}

// markDead stops asking server.
func (f *Finder) markDead(server string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead == nil {
		f.dead = map[string]error{}
	}
	f.dead[server] = err
}

// store writes a download into the cache as BUILDID/debuginfo: into a new
// file in a private directory, renamed into place once its build ID
// matches.
func (f *Finder) store(body io.Reader, id, url string) (string, error) {
	dir := filepath.Join(f.CacheDir, id)
	for _, d := range []string{f.CacheDir, dir} {
		if err := safefile.MkdirPrivate(d); err != nil {
			return "", fmt.Errorf("debuginfod cache directory: %w", err)
		}
	}
	tmp, err := os.CreateTemp(dir, ".debuginfo-*") // O_EXCL: never an existing file or symlink
	if err != nil {
		return "", fmt.Errorf("create file in debuginfod cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	max := f.MaxBytes
	if max <= 0 {
		max = 2 << 30
	}
	n, err := io.Copy(tmp, io.LimitReader(body, max+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	if n > max {
		return "", fmt.Errorf("download %s: larger than %d bytes", url, max)
	}
	if err := matchBuildID(tmp.Name(), id); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	final := filepath.Join(dir, "debuginfo")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("store %s in debuginfod cache: %w", id, err)
	}
	return final, nil
}

// usable checks that p exists, is a regular file this user or root owns
// and no one else can write, and carries the build ID id.
func usable(p, id string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	if err := trustedOwner(p, fi); err != nil {
		return err
	}
	return matchBuildID(p, id)
}

func trustedOwner(p string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", p)
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by user %d: not trusted", p, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("%s is writable by others: not trusted", p)
	}
	return nil
}

// matchBuildID checks the GNU build ID note of the ELF file p.
func matchBuildID(p, id string) error {
	got, err := BuildID(p)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("%s has build ID %s, want %s", p, got, id)
	}
	return nil
}

// BuildID reads the GNU build ID of an ELF file, in lower-case hex.
func BuildID(p string) (string, error) {
	id, _, err := symtab.FileBuildIDs(p)
	if err != nil {
		return "", err
	}
	if id != "" {
		return id, nil
	}
	return "", fmt.Errorf("%s has no GNU build ID", p)
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
