// SPDX-License-Identifier: Apache-2.0

package agentfault

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/push/pushtest"
)

// faultCases are the runs; each starts a real agent on a real target.
var faultCases = []struct {
	name string
	run  func(t *testing.T)
	// short: kept under -short.
	short bool
}{
	{"undelivered at shutdown exits 3", testUndelivered, true},
	{"silent endpoint: bounded exit, counted", testSilentEndpoint, true},
	{"second signal cuts the flush", testSecondSignal, true},
	{"second signal with a spool keeps all", testSecondSignalSpool, false},
	{"token file becomes a FIFO", testTokenBecomesFIFO, true},
	{"world-readable token warned", testWorldReadableToken, false},
	{"-F 100000 stops", testHighRate, true},
	{"spool on a full disk", testSpoolFullDisk, true},
	{"spool full disk, endpoint slow", testSpoolFullDiskSlow, false},
	{"corrupt spool files", testSpoolCorrupt, true},
	{"window in flight at SIGTERM not stored twice", testInFlight, true},
	{"idle and abusive /metrics clients", testMetricsClients, true},
	{"forked children labelled", testForkedChildren, true},
	{"silent debuginfod", testDebuginfodSilent, false},
	{"setuid target refused", testSetuidRefused, true},
	{"access lost at exec", testAccessLostAtExec, true},
	{"signals at random moments", testRandomSignals, true},
}

func TestFaults(t *testing.T) {
	bpftest.Require(t)
	for _, c := range faultCases {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() && !c.short {
				t.Skip("-short")
			}
			c.run(t)
		})
	}
}

// outDir is a new directory for --dir.
func outDir(t *testing.T) string { return filepath.Join(t.TempDir(), "out") }

// flushBound is how long an agent may take to exit after SIGTERM: its
// --flush-timeout, and 5 s to end and symbolize the last window and close
// (well under a second on an idle machine; on two CPUs shared with a
// loaded CI, reading /proc/kallsyms for the first window took 4 s).
func flushBound(flush time.Duration) time.Duration { return flush + 5*time.Second }

// testUndelivered: the destination is down and there is no spool: the
// windows left at shutdown are dropped, counted, and the exit status is 3
// (it was 0: a supervisor saw success).
func testUndelivered(t *testing.T) {
	pid := burner(t, "tpafund", "")
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", "http://"+closedPort(t), "--flush-timeout", "1s")
	r.waitLog(t, `push failed`, 15*time.Second)
	code := r.stopAndWait(t, flushBound(time.Second))
	_, sinks := r.summary(t)
	s := sinks["pyroscope-ingest"]
	if code != 3 || s.dropped == 0 || !hasLine(r.log(), "windows were not delivered") {
		t.Errorf("exit status %d, %+v; want 3 with the drops counted and said:\n%s", code, s, r.log())
	}
}

// testSilentEndpoint: a destination that accepts and never answers: the
// agent exits within its flush timeout, and the window it was pushing is
// counted (unconfirmed: it went out in full).
func testSilentEndpoint(t *testing.T) {
	pid := burner(t, "tpafsil", "")
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", "http://"+silentServer(t), "--flush-timeout", "2s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	time.Sleep(2500 * time.Millisecond)
	t0 := time.Now()
	code := r.stopAndWait(t, flushBound(2*time.Second))
	_, sinks := r.summary(t)
	s := sinks["pyroscope-ingest"]
	t.Logf("exited %v after SIGTERM, status %d, %+v", r.ended.Sub(t0).Round(time.Millisecond), code, s)
	if code != 3 || s.dropped+s.unconfirmed == 0 || s.pushed != 0 {
		t.Errorf("exit status %d, %+v: want 3 and every window counted as dropped or unconfirmed", code, s)
	}
}

// testSecondSignal: with a long flush timeout and the destination down, a
// second SIGTERM ends the agent within 2 s, the undelivered windows
// counted.
func testSecondSignal(t *testing.T) {
	pid := burner(t, "tpaf2nd", "")
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", "http://"+closedPort(t), "--flush-timeout", "60s")
	r.waitLog(t, `push failed`, 15*time.Second)
	r.signal(syscall.SIGTERM)
	time.Sleep(time.Second)
	t0 := r.signal(syscall.SIGTERM)
	code := r.wait(t, 2*time.Second)
	t.Logf("exited %v after the second signal", r.ended.Sub(t0).Round(time.Millisecond))
	if _, sinks := r.summary(t); code != 3 || sinks["pyroscope-ingest"].dropped == 0 {
		t.Errorf("exit status %d, %+v: want 3 with the drops counted", code, sinks)
	}
}

// testSecondSignalSpool: the same with a spool: what is undelivered is
// spooled, nothing is lost, the status is 0.
func testSecondSignalSpool(t *testing.T) {
	pid := burner(t, "tpaf2sp", "")
	spool := filepath.Join(t.TempDir(), "spool")
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", "http://"+closedPort(t), "--flush-timeout", "60s", "--spool", spool)
	r.waitLog(t, `push failed`, 15*time.Second)
	r.signal(syscall.SIGTERM)
	time.Sleep(time.Second)
	r.signal(syscall.SIGTERM)
	code := r.wait(t, 2*time.Second)
	n, sinks := r.summary(t)
	s := sinks["pyroscope-ingest"]
	if code != 0 || s.dropped != 0 || s.left != n || len(spooled(t, spool)) != n {
		t.Errorf("exit status %d, %d windows, %+v, %d files: want 0 and every window in the spool", code, n, s, len(spooled(t, spool)))
	}
}

// testTokenBecomesFIFO: the bearer token file is replaced by a FIFO while
// the agent runs: pushes fail, and SIGTERM still ends the agent in time
// (it blocked in open() forever).
func testTokenBecomesFIFO(t *testing.T) {
	pid := burner(t, "tpaffifo", "")
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("secret"), 0o600)
	ing := &pushtest.Ingest{}
	ln := pushtest.Listen(t, "127.0.0.1:0")
	pushtest.Serve(t, ln, ing)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", "http://"+ln.Addr().String(),
		"--bearer-token-file", tok, "--flush-timeout", "2s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	waitFor(t, 10*time.Second, func() bool { return len(ing.Received()) > 0 })
	os.Remove(tok)
	syscall.Mkfifo(tok, 0o600)
	time.Sleep(2500 * time.Millisecond) // a window's push or two
	code := r.stopAndWait(t, flushBound(2*time.Second))
	if !strings.Contains(r.log(), "not a regular file") {
		t.Errorf("no push refused the FIFO:\n%s", r.log())
	}
	if code != 3 && code != 0 {
		t.Errorf("exit status %d", code)
	}
	if got := ing.Received()[0].Header.Get("Authorization"); got != "Bearer secret" {
		t.Errorf("Authorization %q", got)
	}
}

// testWorldReadableToken: a token file every user can read is used, with
// a warning.
func testWorldReadableToken(t *testing.T) {
	pid := burner(t, "tpafread", "")
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("secret"), 0o644)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--dir", outDir(t), "--pyroscope", "http://127.0.0.1:1", "--bearer-token-file", tok, "--flush-timeout", "1s")
	r.waitLog(t, `readable by every user`, 10*time.Second)
	r.stopAndWait(t, flushBound(time.Second))
}

// testHighRate: at the highest rate accepted the agent still stops in
// time (the drain loop returned only when the ring was empty).
func testHighRate(t *testing.T) {
	pid := burner(t, "tpafhz", "")
	out := outDir(t)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "-F", "100000", "--window", "1s", "--dir", out, "--flush-timeout", "1s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	time.Sleep(2 * time.Second)
	t0 := time.Now()
	code := r.stopAndWait(t, flushBound(time.Second)+time.Second)
	t.Logf("exited %v after SIGTERM, status %d", r.ended.Sub(t0).Round(time.Millisecond), code)
	if files, _ := filepath.Glob(filepath.Join(out, "*.pb.gz")); len(files) == 0 || code != 0 {
		t.Errorf("%d windows written, exit status %d:\n%s", len(files), code, r.log())
	}
}

// mountTmpfs mounts a tmpfs of size bytes (unmounted when the test ends).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// fillDisk fills the file system holding dir.
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
			return
		}
	}
}

// spoolWithOld makes a spool on a small tmpfs holding one window a
// previous run left, and fills the disk.
func spoolWithOld(t *testing.T) string {
	disk := mountTmpfs(t, 512<<10)
	spool := filepath.Join(disk, "spool")
	sub := filepath.Join(spool, "pyroscope-ingest")
	os.MkdirAll(sub, 0o700)
	os.WriteFile(filepath.Join(sub, "00000000000000000001.window"), spoolFile(t, time.Now().Add(-time.Minute), "4242", nil), 0o600)
	fillDisk(t, disk)
	return spool
}

// testSpoolFullDisk: a spool on a full disk holding a window from a
// previous run, the destination down: new windows stay in memory, which
// has room, none is dropped while the agent runs (every one was); at
// shutdown those that cannot be spooled are dropped and counted, and the
// exit status is 3.
func testSpoolFullDisk(t *testing.T) {
	pid := burner(t, "tpafdisk", "")
	spool := spoolWithOld(t)
	port := freePort(t)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", "http://"+closedPort(t), "--spool", spool,
		"--flush-timeout", "1s", "--listen", port)
	r.waitLog(t, `push failed`, 15*time.Second)
	time.Sleep(2500 * time.Millisecond)
	if d := metric(t, port, `tickprof_agent_push_windows_total{destination="pyroscope-ingest",result="dropped"}`); d != 0 {
		t.Errorf("%v windows dropped while the memory queue had room", d)
	}
	code := r.stopAndWait(t, flushBound(time.Second))
	n, sinks := r.summary(t)
	s := sinks["pyroscope-ingest"]
	if code != 3 || s.dropped != n {
		t.Errorf("exit status %d, %d windows, %+v: want 3, the windows that could not be spooled at exit counted as dropped", code, n, s)
	}
}

// testSpoolFullDiskSlow: the same with the destination up but slow: every
// window arrives, the old one too, none dropped, status 0.
func testSpoolFullDiskSlow(t *testing.T) {
	pid := burner(t, "tpafdsl", "")
	spool := spoolWithOld(t)
	// Slow enough that new windows come while the old one is still in the
	// spool, being pushed.
	srv := newRecorder(t, 1500*time.Millisecond)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", srv.url, "--spool", spool, "--flush-timeout", "15s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	time.Sleep(4 * time.Second)
	code := r.stopAndWait(t, flushBound(15*time.Second))
	n, sinks := r.summary(t)
	s := sinks["pyroscope-ingest"]
	if got := len(srv.keys()); code != 0 || s.dropped != 0 || got != n+1 {
		t.Errorf("exit status %d, %d windows made, %d received, %+v: want all %d received, none dropped", code, n, got, s, n+1)
	}
}

// testSpoolCorrupt: a spool holding corrupt files of every kind and one
// good window: the good one is delivered, each bad one is dropped and
// counted, a 1 GiB gzip bomb and a 17 MiB file cost no memory to speak of,
// and the agent stops in time.
func testSpoolCorrupt(t *testing.T) {
	pid := burner(t, "tpafcor", "")
	spool := filepath.Join(t.TempDir(), "spool")
	sub := filepath.Join(spool, "pyroscope-ingest")
	os.MkdirAll(sub, 0o700)
	good := spoolFile(t, time.Now().Add(-time.Minute), "4242", nil)
	hdr := good[:bytes.IndexByte(good, '\n')+1]
	bad := map[string][]byte{
		"garbage":    []byte("not a spool file at all"),
		"headeronly": hdr,
		"badjson":    append([]byte("{\"start\":\n"), good[len(hdr):]...),
		"truncgzip":  good[:len(good)-20],
		"notpprof":   append(append([]byte{}, hdr...), gzipped([]byte("hello"))...),
		"bomb":       append(append([]byte{}, hdr...), bomb(1024)...),
	}
	i := 1
	for name, data := range bad {
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("%020d.window", i)), data, 0o600); err != nil {
			t.Fatal(name, err)
		}
		i++
	}
	big := filepath.Join(sub, fmt.Sprintf("%020d.window", i))
	f, _ := os.Create(big)
	f.Write(hdr)
	f.Truncate(17 << 20)
	f.Close()
	i++
	groupw := filepath.Join(sub, fmt.Sprintf("%020d.window", i))
	os.WriteFile(groupw, good, 0o600)
	os.Chmod(groupw, 0o620)
	i++
	syscall.Mkfifo(filepath.Join(sub, fmt.Sprintf("%020d.window", i)), 0o600)
	i++
	os.Symlink(groupw, filepath.Join(sub, fmt.Sprintf("%020d.window", i)))
	i++
	os.WriteFile(filepath.Join(sub, fmt.Sprintf("%020d.window", i)), good, 0o600)
	srv := newRecorder(t, 0)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", srv.url, "--spool", spool, "--flush-timeout", "5s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	waitFor(t, 20*time.Second, func() bool { return srv.has("4242") })
	hwm := vmHWM(r.cmd.Process.Pid)
	code := r.stopAndWait(t, flushBound(5*time.Second))
	_, sinks := r.summary(t)
	s := sinks["pyroscope-ingest"]
	const wantDropped = 8 // the six bad files, the 17 MiB one, the group-writable one
	if s.dropped != wantDropped || code != 3 {
		t.Errorf("exit status %d, %+v: want 3 and the %d bad files counted as dropped:\n%s", code, s, wantDropped, r.log())
	}
	if hwm > 400<<20 {
		t.Errorf("agent's peak RSS %d MiB reading a corrupt spool", hwm>>20)
	}
}

// testInFlight: the destination stores a window and answers late; SIGTERM
// comes meanwhile: the window is not spooled (it was, and the next start
// sent it again), and a restart on the same spool stores nothing twice.
func testInFlight(t *testing.T) {
	pid := burner(t, "tpafinf", "")
	spool := filepath.Join(t.TempDir(), "spool")
	srv := newRecorder(t, 4*time.Second)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", srv.url, "--spool", spool, "--flush-timeout", "1s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	waitFor(t, 15*time.Second, func() bool { return len(srv.keys()) > 0 })
	code := r.stopAndWait(t, flushBound(time.Second))
	got := srv.keys()
	for _, k := range spooled(t, spool) {
		if got[k] > 0 {
			t.Errorf("window %s was received and spooled: the next run stores it twice", k)
		}
	}
	t.Logf("first run: status %d, received %d, spooled %d", code, len(got), len(spooled(t, spool)))
	srv.delay.Store(0)
	r2 := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", srv.url, "--spool", spool, "--flush-timeout", "5s")
	r2.waitLog(t, `sampling at`, 10*time.Second)
	waitFor(t, 10*time.Second, func() bool { return len(spooled(t, spool)) == 0 })
	r2.stopAndWait(t, flushBound(5*time.Second))
	for k, n := range srv.keys() {
		if n > 1 {
			t.Errorf("window %s stored %d times", k, n)
		}
	}
}

// testMetricsClients: 300 idle connections, 20 clients that never finish
// their headers and one with oversized headers hit /metrics: the agent's
// open files stay bounded, it keeps writing windows, a real scrape still
// succeeds, and the idle clients are cut off.
func testMetricsClients(t *testing.T) {
	pid := burner(t, "tpafmet", "")
	out := outDir(t)
	port := freePort(t)
	r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--dir", out, "--listen", port, "--flush-timeout", "1s")
	r.waitLog(t, `metrics on`, 10*time.Second)
	waitFor(t, 15*time.Second, func() bool { return countFiles(out) > 0 })
	fds0 := openFiles(r.cmd.Process.Pid)
	opened := time.Now()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", port)
		if err != nil {
			break
		}
		conns = append(conns, c)
		if i < 20 {
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		}
	}
	if c, err := net.Dial("tcp", port); err == nil {
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("b", 64<<10))
		conns = append(conns, c)
	}
	time.Sleep(500 * time.Millisecond)
	before := countFiles(out)
	fds := openFiles(r.cmd.Process.Pid)
	if fds-fds0 > 40 {
		t.Errorf("%d files open with 300 idle clients (%d before): the connections are not bounded", fds, fds0)
	}
	scraped := false
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !scraped; time.Sleep(200 * time.Millisecond) {
		scraped = metric(t, port, "tickprof_agent_windows_total") > 0
	}
	if !scraped {
		t.Error("no scrape succeeded within 10 s of the idle clients")
	}
	time.Sleep(time.Until(opened.Add(7 * time.Second)))
	if after := countFiles(out); after <= before {
		t.Errorf("no window written while the clients held on (%d files before, %d after)", before, after)
	}
	alive := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors_is_eof(err) {
			alive++
		}
	}
	if alive > 0 {
		t.Errorf("%d of %d idle or slow connections still open after %v", alive, len(conns), time.Since(opened).Round(time.Second))
	}
	if code := r.stopAndWait(t, flushBound(time.Second)); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// errors_is_eof reports whether a read saw the connection closed.
func errors_is_eof(err error) bool {
	return err == io.EOF || strings.Contains(err.Error(), "reset by peer")
}

// testForkedChildren: a service that forks short-lived children (subshells
// that burn CPU and exit within the window): every window carries the
// service, the executable and the build ID, none "unknown".
func testForkedChildren(t *testing.T) {
	burner(t, "tpafforker", "while :; do ( i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done ) & wait; done")
	out := outDir(t)
	r := startAgent(t, nil, "--exe", "tpafforker", "--window", "1s", "--dir", out, "--flush-timeout", "1s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	waitFor(t, 20*time.Second, func() bool { return countFiles(out) >= 12 })
	r.stopAndWait(t, flushBound(time.Second))
	files, _ := filepath.Glob(filepath.Join(out, "*.pb.gz"))
	unknown, noExe := 0, 0
	for _, f := range files {
		l := fileLabels(t, f)
		if l["service"] == "unknown" || l["service"] == "" {
			unknown++
		}
		if l["executable"] == "" || l["build_id"] == "" {
			noExe++
		}
	}
	if unknown > 0 || noExe > 0 {
		t.Errorf("of %d windows, %d have service unknown, %d lack the executable or build ID", len(files), unknown, noExe)
	}
}

// testDebuginfodSilent: debug files are looked up on a debuginfod server
// that never answers: the agent still stops within its flush bound.
func testDebuginfodSilent(t *testing.T) {
	yes := burner(t, "tpafyes", "exec yes > /dev/null")
	env := []string{"DEBUGINFOD_URLS=http://" + silentServer(t), "DEBUGINFOD_CACHE_PATH=" + t.TempDir()}
	out := outDir(t)
	r := startAgent(t, env, "-p", strconv.Itoa(yes), "--window", "1s", "--dir", out, "--flush-timeout", "1s")
	r.waitLog(t, `sampling at`, 10*time.Second)
	time.Sleep(2500 * time.Millisecond)
	t0 := time.Now()
	r.stopAndWait(t, flushBound(time.Second))
	t.Logf("exited %v after SIGTERM", r.ended.Sub(t0).Round(time.Millisecond))
	if countFiles(out) == 0 {
		t.Errorf("no window written:\n%s", r.log())
	}
}

// asNobody runs the agent as uid 65534 with the capabilities BPF needs.
func asNobody(t *testing.T, args ...string) *agentRun {
	t.Helper()
	setpriv := setprivPath(t)
	// CAP_DAC_OVERRIDE lets it read tracefs; it does not bear on which
	// processes it may observe (CAP_SYS_PTRACE would).
	caps := "+bpf,+perfmon,+dac_override"
	argv := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups",
		"--inh-caps=" + caps, "--ambient-caps=" + caps, bin, "agent"}, args...)
	return startCmd(t, setpriv, argv...)
}

// suidSleep is a copy of sleep, set-user-ID root, that nobody can run.
func suidSleep(t *testing.T) string {
	t.Helper()
	dir := openTempDir(t)
	b, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skip(err)
	}
	p := filepath.Join(dir, "suidsleep")
	os.WriteFile(p, b, 0o755)
	os.Chmod(p, 0o755|os.ModeSetuid)
	return p
}

// openTempDir is a new directory every user can enter (and the
// directories above it).
func openTempDir(t *testing.T) string {
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return dir
}

// nobodyDir is a directory nobody owns, for the agent's --dir.
func nobodyDir(t *testing.T) string {
	out := filepath.Join(openTempDir(t), "out")
	os.Mkdir(out, 0o700)
	os.Chown(out, 65534, 65534)
	return out
}

// testSetuidRefused: a set-user-ID root process started by nobody runs
// with nobody's real uid but root's effective uid: an agent run by nobody
// with CAP_BPF and CAP_PERFMON must refuse it (the check looked at the
// real uid only).
func testSetuidRefused(t *testing.T) {
	setpriv := setprivPath(t)
	target := startCmd(t, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", suidSleep(t), "30")
	waitFor(t, 5*time.Second, func() bool { return procState(target.cmd.Process.Pid) == "S" })
	r := asNobody(t, "-p", strconv.Itoa(target.cmd.Process.Pid), "--dir", nobodyDir(t))
	code := r.wait(t, refuseTimeout)
	if code != 1 || !strings.Contains(r.log(), "runs as uid 0") {
		t.Errorf("agent as nobody on nobody's setuid-root process: status %d:\n%s", code, r.log())
	}
}

// testAccessLostAtExec: nobody's process, watched by nobody's agent,
// execs a set-user-ID root program: the agent says it lost access and
// stops watching it.
func testAccessLostAtExec(t *testing.T) {
	setpriv := setprivPath(t)
	target := startCmd(t, setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
		"i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec "+suidSleep(t)+" 30")
	r := asNobody(t, "-p", strconv.Itoa(target.cmd.Process.Pid), "--window", "1s", "--dir", nobodyDir(t), "--flush-timeout", "1s")
	r.waitLog(t, `no longer observed, access lost`, 30*time.Second)
	r.stopAndWait(t, flushBound(time.Second))
}

// testRandomSignals: SIGTERM (and half the time a second one) at random
// moments while windows are pushed to a slow destination and flushed:
// every run ends within its bound; every window made is delivered,
// spooled, or counted as lost, and the exit status says whether any was
// lost; no window is both received and spooled (stored twice on replay).
func testRandomSignals(t *testing.T) {
	pid := burner(t, "tpafrnd", "")
	rng := rand.New(rand.NewPCG(23, 1))
	runs := 6
	if testing.Short() {
		runs = 3
	}
	for i := 0; i < runs; i++ {
		srv := newRecorder(t, time.Duration(rng.IntN(1500))*time.Millisecond)
		spool := filepath.Join(t.TempDir(), "spool")
		r := startAgent(t, nil, "-p", strconv.Itoa(pid), "--window", "1s", "--pyroscope", srv.url, "--spool", spool, "--flush-timeout", "2s")
		r.waitLog(t, `sampling at`, 10*time.Second)
		time.Sleep(time.Duration(500+rng.IntN(3000)) * time.Millisecond)
		bound := flushBound(2 * time.Second)
		r.signal(syscall.SIGTERM)
		if rng.IntN(2) == 0 {
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
			r.signal(syscall.SIGTERM)
			bound = 2 * time.Second
		}
		code := r.wait(t, bound+time.Second)
		n, sinks := r.summary(t)
		s := sinks["pyroscope-ingest"]
		got, sp := srv.keys(), spooled(t, spool)
		for _, k := range sp {
			if got[k] > 0 {
				t.Errorf("run %d: window %s received and spooled", i, k)
			}
		}
		lost := s.dropped + s.rejected + s.unconfirmed
		// A window received but unconfirmed (its answer came too late) is
		// both received and counted as lost: received lies between the
		// pushed and the pushed plus the unconfirmed.
		if s.pushed+lost+len(sp) != n || len(got) < s.pushed || len(got) > s.pushed+s.unconfirmed {
			t.Errorf("run %d: %d windows made; %d received, %+v, %d spooled: not all accounted for", i, n, len(got), s, len(sp))
		}
		if (lost > 0) != (code == 3) || (code != 0 && code != 3) {
			t.Errorf("run %d: exit status %d with %d windows lost", i, code, lost)
		}
		t.Logf("run %d: %d windows, %d received, %d spooled, %d lost, status %d", i, n, len(got), len(sp), lost, code)
	}
}

// recorder is a Pyroscope /ingest receiver that answers after delay, and
// counts the windows it stored by key (pid, from, until).
type recorder struct {
	url   string
	ing   pushtest.Ingest
	delay atomic.Int64
	mu    sync.Mutex
	got   map[string]int
}

func newRecorder(t *testing.T, delay time.Duration) *recorder {
	r := &recorder{got: map[string]int{}}
	r.delay.Store(int64(delay))
	ln := pushtest.Listen(t, "127.0.0.1:0")
	r.url = "http://" + ln.Addr().String()
	pushtest.Serve(t, ln, r)
	return r
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	r.ing.ServeHTTP(rec, req)
	if rec.Code/100 == 2 {
		q := req.URL.Query()
		name := q.Get("name")
		pid := ""
		if i := strings.Index(name, "pid="); i >= 0 {
			pid = strings.FieldsFunc(name[i+4:], func(c rune) bool { return c == ',' || c == '}' })[0]
		}
		r.mu.Lock()
		r.got[pid+"/"+q.Get("from")+"/"+q.Get("until")]++
		r.mu.Unlock()
	}
	time.Sleep(time.Duration(r.delay.Load()))
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

func (r *recorder) keys() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

func (r *recorder) has(pid string) bool {
	for k := range r.keys() {
		if strings.HasPrefix(k, pid+"/") {
			return true
		}
	}
	return false
}

// spooled returns the keys (pid/from/until, as the recorder counts them) of
// the windows in a spool.
func spooled(t *testing.T, spool string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(spool, "*", "*.window"))
	var keys []string
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		line, _ := bufio.NewReader(fh).ReadBytes('\n')
		fh.Close()
		var h struct {
			Start, End time.Time
			Labels     map[string]string
		}
		if json.Unmarshal(line, &h) != nil {
			continue
		}
		until := h.End.Unix()
		if h.End.Nanosecond() > 0 {
			until++
		}
		keys = append(keys, fmt.Sprintf("%s/%d/%d", h.Labels["pid"], h.Start.Unix(), until))
	}
	return keys
}

// spoolFile is a valid spool file holding a small window of pid.
func spoolFile(t *testing.T, start time.Time, pid string, labels map[string]string) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main", SystemName: "main"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10101010,
		Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
		Sample:    []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{3, 30303030}}},
		TimeNanos: start.UnixNano(), DurationNanos: int64(time.Second),
	}
	var body bytes.Buffer
	p.Write(&body)
	l := map[string]string{"service": "old", "pid": pid}
	for k, v := range labels {
		l[k] = v
	}
	hdr, _ := json.Marshal(map[string]any{"start": start, "end": start.Add(time.Second), "labels": l})
	return append(append(hdr, '\n'), body.Bytes()...)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// bomb is a gzip stream of mib MiB of zeros (a few hundred KiB).
func bomb(mib int) []byte {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	return bytes.Repeat(member.Bytes(), mib/64)
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	ln := pushtest.Listen(t, "127.0.0.1:0")
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// freePort returns 127.0.0.1:PORT, free a moment ago.
func freePort(t *testing.T) string { return closedPort(t) }

// metric scrapes the agent's /metrics and returns one series' value (-1
// when the scrape fails or lacks it).
func metric(t *testing.T, addr, series string) float64 {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, _ := strconv.ParseFloat(rest, 64)
			return v
		}
	}
	return -1
}

// waitFor polls cond until it holds, failing after d.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("condition not met within %v", d)
		}
	}
}

// openFiles counts a process's open file descriptors.
func openFiles(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// countFiles counts the windows written into a --dir.
func countFiles(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.pb.gz"))
	return len(files)
}

// vmHWM is a process's peak resident set, in bytes.
func vmHWM(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// fileLabels reads the labels a --dir file carries in its comments.
func fileLabels(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	l := map[string]string{}
	for _, c := range p.Comments {
		if kv, ok := strings.CutPrefix(c, "tickprof-label "); ok {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = v
		}
	}
	return l
}

// setprivPath returns setpriv, skipping without root or util-linux.
func setprivPath(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run as another user")
	}
	p, err := execLookPath("setpriv")
	if err != nil {
		t.Skip("setpriv not installed")
	}
	return p
}
