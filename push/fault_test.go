// SPDX-License-Identifier: Apache-2.0

package push

import (
	"bytes"
	"compress/gzip"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/push/pushtest"
)

// within runs f and fails the test when it has not returned after d (the
// goroutine is left behind: the test is about the hang).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still running after %v", what, d)
	}
}

// TestCredentialFileKinds: a credential file of every kind but a regular
// file of this user is refused at once, never read from: a FIFO (whose
// open blocked until a writer came), a device, a directory, a link; and
// one whose content holds control characters, which no header may carry.
func TestCredentialFileKinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(write("target", "tok"), link)
	for _, c := range []struct{ path, want string }{
		{fifo, "not a regular file"},
		{"/dev/zero", "not a regular file"},
		{"/dev/null", "not a regular file"},
		{dir, "not a regular file"},
		{link, "symbolic link"},
		{filepath.Join(dir, "missing"), "no such file"},
		{write("nul", "tok\x00en"), "control character"},
		{write("del", "tok\x7fen"), "control character"},
		{write("soh", "\x01token"), "control character"},
		{write("esc", "tok\x1b[2Jen"), "control character"},
		{write("c1", "tok\u0085en"), "control character"},
		{write("tab", "tok\ten"), "control character"},
		{write("lines", "tok\nen"), "more than one line"},
		{write("huge", strings.Repeat("t", maxTokenBytes+1)), "over"},
		{write("blank", " \n\t"), "empty"},
	} {
		var err error
		within(t, 2*time.Second, "ReadTokenFile("+c.path+")", func() { _, err = ReadTokenFile(c.path) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadTokenFile(%s) = %v, want an error saying %q", c.path, err, c.want)
		}
	}
	if tok, err := ReadTokenFile(write("ok", " tok-1.2_3~ \n")); err != nil || tok != "tok-1.2_3~" {
		t.Errorf("good token: %q, %v", tok, err)
	}
	if WorldReadable(write("private", "x")) {
		t.Error("a 0600 file is not world-readable")
	}
	open := write("open", "x")
	os.Chmod(open, 0o644)
	if !WorldReadable(open) {
		t.Error("a 0644 file is world-readable")
	}
}

// TestCredentialControlCharacters: a tenant, user or password holding a
// control character is refused when the sink is made, not sent to fail
// every push as a transient error.
func TestCredentialControlCharacters(t *testing.T) {
	for _, a := range []Auth{
		{TenantID: "a\x01b"}, {TenantID: "a\x00"}, {TenantID: "t\x7f"}, {TenantID: "a\rb"}, {TenantID: "x\u009b2J"},
		{BasicUser: "u\x1b", BasicPassword: "p"}, {BasicUser: "u", BasicPassword: "p\x00w"}, {BasicUser: "a:b", BasicPassword: "p"},
	} {
		if err := a.Check(); err == nil {
			t.Errorf("Auth%+q accepted", []string{a.TenantID, a.BasicUser, a.BasicPassword})
		}
		if _, err := NewIngest("http://127.0.0.1:1", HTTPOptions{Auth: a}); err == nil {
			t.Errorf("NewIngest with Auth%+q accepted", []string{a.TenantID, a.BasicUser, a.BasicPassword})
		}
	}
	if err := (Auth{TenantID: "team-1.prod", BasicUser: "ü", BasicPassword: "pässwörd with spaces"}).Check(); err != nil {
		t.Errorf("printable credentials refused: %v", err)
	}
}

// TestTokenReplacedByFIFO: a token file replaced by a FIFO while pushing
// fails that push at once; Close returns within its deadline.
func TestTokenReplacedByFIFO(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("tok"), 0o600)
	h := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, h)
	sink, err := NewIngest("http://"+ln.Addr().String(), HTTPOptions{Auth: Auth{BearerTokenFile: tok}})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(tok)
	if err := syscall.Mkfifo(tok, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Sink: sink, Backoff: Backoff{Initial: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	p.Enqueue(testWindow(0))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	within(t, 2*time.Second, "Close with a FIFO token file", func() { p.Close(ctx) })
	if st := p.Stats(); st.Failed == 0 || st.Dropped != 1 {
		t.Errorf("stats %+v: want failed attempts and the window counted as dropped", st)
	}
}

// mountTmpfs mounts a tmpfs of size bytes at a new directory (root only).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fillDisk fills the file system of dir with a file until it is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestSpoolFullDisk: with windows left in the spool by a previous run and
// the spool's disk full, new windows are kept in memory (which has room)
// and all arrive once the destination answers; none is dropped.
func TestSpoolFullDisk(t *testing.T) {
	disk := mountTmpfs(t, 256<<10)
	spoolDir := filepath.Join(disk, "spool")
	ln := pushtest.Listen(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // the destination is down
	sink, _ := NewIngest("http://"+addr, HTTPOptions{})
	// A previous run leaves two windows in the spool.
	p0, err := New(Config{Sink: sink, QueueLen: 1, SpoolDir: spoolDir, Backoff: Backoff{Initial: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	p0.Enqueue(testWindow(100))
	p0.Enqueue(testWindow(101))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	p0.Close(ctx)
	cancel()
	fillDisk(t, disk)

	p, err := New(Config{Sink: sink, SpoolDir: spoolDir, Backoff: Backoff{Initial: 20 * time.Millisecond, Max: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		p.Enqueue(testWindow(i))
	}
	if st := p.Stats(); st.Dropped != 0 || st.Queued != 7 {
		t.Errorf("with the spool's disk full: %+v; want the 7 new windows in memory, none dropped", st)
	}
	h := &pushtest.Ingest{}
	pushtest.Serve(t, pushtest.Listen(t, addr), h)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n, st := len(h.Received()), p.Stats(); n != 9 || st.Dropped != 0 {
		t.Errorf("%d windows arrived (stats %+v), want all 9 (7 new, 2 spooled), none dropped", n, st)
	}
}

// gzipBomb writes a spool file whose gzip stream holds n MiB of zeros,
// as members of one MiB-compressed block repeated (a few KiB on disk).
func gzipBomb(t *testing.T, path string, mib int) {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	var data bytes.Buffer
	data.WriteString(`{"start":"2025-01-01T00:00:00Z","end":"2025-01-01T00:00:10Z","labels":{"service":"x"}}` + "\n")
	for i := 0; i < mib/64; i++ {
		data.Write(member.Bytes())
	}
	if err := os.WriteFile(path, data.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolBomb: a spool file that decompresses to 2 GiB is dropped as
// unreadable after reading a bounded part of it (the allocation stays far
// below its size), it is counted, and Enqueue and Stats are never held up
// while the pusher reads it.
func TestSpoolBomb(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	os.Mkdir(dir, 0o700)
	gzipBomb(t, filepath.Join(dir, "00000000000000000001.window"), 2048)
	h := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, h)
	sink, _ := NewIngest("http://"+ln.Addr().String(), HTTPOptions{})
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	p, err := New(Config{Sink: sink, SpoolDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var slowest atomic.Int64
	stop := make(chan struct{})
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			p.Stats()
			if d := int64(time.Since(t0)); d > slowest.Load() {
				slowest.Store(d)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	p.Enqueue(testWindow(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.Close(ctx)
	close(stop)
	<-probed
	runtime.ReadMemStats(&ms1)
	st := p.Stats()
	if st.Dropped != 1 || st.Pushed != 1 {
		t.Errorf("stats %+v: want the bomb dropped (counted) and the window pushed", st)
	}
	if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 512<<20 {
		t.Errorf("reading a 2 GiB gzip bomb allocated %d MiB", alloc>>20)
	}
	if d := time.Duration(slowest.Load()); d > 200*time.Millisecond {
		t.Errorf("Stats waited %v for the pusher's lock while it read the spool", d)
	}
	// A spool file over the file limit is refused without being read.
	big := filepath.Join(dir, "00000000000000000002.window")
	f, _ := os.Create(big)
	f.Truncate(maxSpoolFile + 1)
	f.Close()
	d, _ := openSafeDir(dir)
	defer d.close()
	if _, err := d.read(filepath.Base(big), maxSpoolFile); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("oversized spool file: %v", err)
	}
}

// TestCutShortAfterSent: a window whose push is cut by Close after the
// destination received all of it is not spooled (the next run would store
// it again) and is counted as unconfirmed; one cut before it went out is
// spooled.
func TestCutShortAfterSent(t *testing.T) {
	var received atomic.Int32
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		received.Add(1)
		time.Sleep(3 * time.Second) // stored, but the answer is late
	})
	ln := pushtest.Listen(t, "127.0.0.1:0")
	srv := &http.Server{Handler: slow}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	sink, _ := NewIngest("http://"+ln.Addr().String(), HTTPOptions{})
	dir := filepath.Join(t.TempDir(), "spool")
	p, err := New(Config{Sink: sink, SpoolDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p.Enqueue(testWindow(0))
	for i := 0; i < 200 && received.Load() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	p.Close(ctx)
	st := p.Stats()
	if received.Load() != 1 || st.Spool != 0 || st.Unconfirmed != 1 {
		t.Errorf("received %d; stats %+v: want the window received once, not spooled, counted unconfirmed", received.Load(), st)
	}

	// A destination that accepts connections but never reads: the request
	// cannot all go out (it is larger than the socket buffers), so the
	// window is spooled.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
	}}
	silent, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	sink2, _ := NewIngest("http://"+silent.Addr().String(), HTTPOptions{})
	p2, err := New(Config{Sink: sink2, SpoolDir: filepath.Join(t.TempDir(), "spool2")})
	if err != nil {
		t.Fatal(err)
	}
	w := testWindow(1)
	noise := make([]byte, 8<<20) // incompressible: 8 MB that cannot all be in flight
	crand.Read(noise)
	for i := 0; i < len(noise); i += 4096 {
		w.Profile.Comments = append(w.Profile.Comments, string(noise[i:i+4096]))
	}
	p2.Enqueue(w)
	time.Sleep(300 * time.Millisecond)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	p2.Close(ctx2)
	if st := p2.Stats(); st.Spool != 1 || st.Unconfirmed != 0 {
		t.Errorf("stats %+v: a window not sent in full must be spooled", st)
	}
}
