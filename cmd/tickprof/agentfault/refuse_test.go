// SPDX-License-Identifier: Apache-2.0

package agentfault

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// refusal is one bad input: the arguments after `tickprof agent`, the
// exit status, a substring of the one-line error saying what is wrong and
// a pattern saying what is expected.
type refusal struct {
	name   string
	args   []string
	exit   int
	wrong  string
	expect string
	root   bool // needs root (files of another user)
}

// refuseTimeout bounds a refusal: every one is decided before anything is
// loaded or any network is used; one still running after it hangs.
const refuseTimeout = 5 * time.Second

// base is a valid agent command line but for the flag under test.
func base(extra ...string) []string {
	return append([]string{"--all", "--dir", filepath.Join(work, "out")}, extra...)
}

func refusals() []refusal {
	var rs []refusal
	add := func(r refusal) { rs = append(rs, r) }
	bad := func(wrong, expect string, args ...string) {
		add(refusal{name: strings.Join(args, " "), args: args, exit: 2, wrong: wrong, expect: expect})
	}

	// Every flag's edge values.
	for _, v := range []string{"0", "-1", "-49", "100001", "2147483648", "x", "", "1.5", "1e3"} {
		bad("-F", "between 1 and|see --help", base("-F", v)...)
	}
	for _, v := range []string{"0", "0s", "-1s", "-10s", "999ms", "1ns", "x", "", "10", "1e3s"} {
		bad("--window", "positive length|at least 1s|see --help", base("--window", v)...)
	}
	for _, v := range []string{"0", "0s", "-1s", "-1ns", "x", "", "5"} {
		bad("--flush-timeout", "positive length|see --help", base("--flush-timeout", v)...)
	}
	sizes := []string{"0", "0.5", "0.9B", "1e-4KiB", "-1MiB", "x", "", "1e30GiB", "NaN", "Inf", "12XB", "0x10"}
	for _, v := range sizes {
		bad("--queue-size", "not a size|less than one byte", base("--queue-size", v)...)
		bad("--spool-size", "not a size|less than one byte", base("--spool", filepath.Join(work, "spool-ok"), "--spool-size", v)...)
		bad("--dir-max-size", "not a size|less than one byte", base("--dir-max-size", v)...)
	}
	for _, v := range []string{"-1s", "-1ns", "x", ""} {
		bad("--dir-max-age", "positive age|see --help", base("--dir-max-age", v)...)
	}
	for _, v := range []string{"0", "-1", "x", "1e3", ""} {
		bad("--max-probes", "want at least 1|see --help", base("--max-probes", v)...)
	}
	for _, v := range []string{"0", "0%", "100%", "150%", "-5%", "x", "", "nan"} {
		bad("--confidence", "", base("--confidence", v)...)
	}
	for _, v := range []string{"-5%", "150%", "100%", "x", "nan"} {
		bad("--overhead", "", base("-u", "libc:malloc", "--overhead", v)...)
	}
	for _, v := range []string{"-1", "-5", "x", "1.5", "99999999999999999999"} {
		bad("-p", "PID is positive|see --help", "-p", v, "--dir", filepath.Join(work, "out"))
	}
	for _, v := range []string{"ftp://h", "http://", "h:4040", "http://h/?q=1", "http://h/#f", "://", "http://h\x01"} {
		bad("pyroscope", "", base("--pyroscope", v)...)
	}
	for _, v := range []string{"grpc", "pprof", "INGEST"} {
		bad("Pyroscope API", "ingest or connect", base("--pyroscope", "http://127.0.0.1:1", "--pyroscope-api", v)...)
	}
	for _, v := range []string{"nohost", "h:1:2", "[::1"} {
		bad("OTLP endpoint", "HOST:PORT", base("--otlp", v)...)
	}
	for _, v := range []string{"nohost", "h:1:2", "[::1"} {
		bad("metrics address", "HOST:PORT", base("--listen", v)...)
	}

	// Combinations.
	for _, c := range []struct {
		args          []string
		wrong, expect string
	}{
		{[]string{"--dir", "x"}, "one kind of target", "PIDs, executables, or all"},
		{[]string{"--all", "-p", "3", "--dir", "x"}, "one kind of target", "PIDs, executables, or all"},
		{[]string{"--all", "--exe", "x", "--dir", "x"}, "one kind of target", "PIDs, executables, or all"},
		{[]string{"--all"}, "no destination", "give a Pyroscope URL"},
		{base("--spool-size", "1MiB"), "--spool-size needs --spool", "."},
		{[]string{"--all", "--pyroscope", "http://h", "--dir-max-size", "1MiB"}, "--dir-max-size needs --dir", "."},
		{[]string{"--all", "--pyroscope", "http://h", "--dir-max-age", "1h"}, "--dir-max-age needs --dir", "."},
		{base("-s", "read", "--overhead", "1%"), "user functions only", "."},
		{base("--basic-auth-user", "u"), "needs a password file", "."},
		{base("--basic-auth-user", "u", "--basic-auth-password-file", fx("good-token"), "--bearer-token-file", fx("good-token")), "exclusive", "give one"},
		{base("extra"), "no arguments", "see"},
		{base("--bogus"), "unknown flag", "see --help"},
	} {
		bad(c.wrong, c.expect, c.args...)
	}

	// Labels Pyroscope would refuse, and the agent's own.
	for _, kv := range []string{"novalue", "=x", "a-b=x", "1a=x", "a b=x", "é=x", "__name__=x", "service_name=x", "__session_id__=x", "__x=y",
		"service=x", "pid=1", "host=h", "executable=/x", "build_id=ab", "kernel_release=6", "cgroup=/x", "container_id=ab", "systemd_unit=x.service",
		"k=a{b", "k=a}b", "k=a,b", "k=a=b", "k=a\nb", "k=\x1b]0;pwned\x07", "k=\x01", "k=a\rb", "k=\x7f", "k=\u009b2J", "k=\xff\xfe",
		"k=" + strings.Repeat("v", 2049), strings.Repeat("k", 1025) + "=v"} {
		bad("label", "", base("--label", kv)...)
	}
	many := base()
	for i := 0; i < 20; i++ {
		many = append(many, "--label", fmt.Sprintf("l%d=v", i))
	}
	bad("20 labels", "at most 19", many...)
	bad("twice", "each name once", base("--label", "k=a", "--label", "k=b")...)
	for _, v := range []string{"a b,c", "x=y", "{x}", "\x1b[2J", "x\x02", strings.Repeat("s", 2049)} {
		bad("label service", "", base("--service", v)...)
	}

	// Credentials: control characters, and files of every kind.
	for _, v := range []string{"a\x01b", "a\x1f", "t\x7f", "a\rb", "a\nb", "x\u0085", "\x1b[2J"} {
		bad("tenant ID", "control character", base("--tenant", v)...)
		bad("basic-auth user", "control character", base("--basic-auth-user", v, "--basic-auth-password-file", fx("good-token"))...)
	}
	bad("basic-auth user", "':'", base("--basic-auth-user", "a:b", "--basic-auth-password-file", fx("good-token"))...)
	credFiles := []struct{ file, wrong string }{
		{fx("fifo"), "not a regular file"},
		{"/dev/zero", "not a regular file"},
		{"/dev/null", "not a regular file"},
		{"/dev/tty", "not a regular file"},
		{fix, "not a regular file"},
		{fx("link-to-token"), "symbolic link"},
		{fx("dangling"), "symbolic link"},
		{fx("missing"), "no such file"},
		{fx("huge-token"), "over"},
		{fx("nul-token"), "control character"},
		{fx("del-token"), "control character"},
		{fx("esc-token"), "control character"},
		{fx("c1-token"), "control character"},
		{fx("empty-token"), "empty"},
		{fx("twoline-token"), "more than one line"},
		{fx("writable-token"), "writable by group or others"},
		{fx("group-writable-token"), "writable by group or others"},
	}
	for _, c := range credFiles {
		bad(c.wrong, ".", base("--pyroscope", "http://127.0.0.1:1", "--bearer-token-file", c.file)...)
		bad(c.wrong, ".", base("--pyroscope", "http://127.0.0.1:1", "--basic-auth-user", "u", "--basic-auth-password-file", c.file)...)
	}
	add(refusal{name: "token of another user", args: base("--pyroscope", "http://127.0.0.1:1", "--bearer-token-file", fx("theirs-token")),
		exit: 2, wrong: "owned by uid 65534", expect: "or root", root: true})
	add(refusal{name: "password of another user", args: base("--pyroscope", "http://127.0.0.1:1", "--basic-auth-user", "u", "--basic-auth-password-file", fx("theirs-token")),
		exit: 2, wrong: "owned by uid 65534", expect: "or root", root: true})

	// Directories another user controls, links, files.
	for _, c := range []struct {
		dir, wrong string
		root       bool
	}{
		{fx("open-dir"), "writable by group or others", false},
		{"/tmp", "writable by group or others", false},
		{fx("sticky-dir"), "writable by group or others", false},
		{fx("link-dir"), "symbolic link", false},
		{fx("good-token"), "not a directory", false},
		{"/dev/null", "not a directory", false},
		{fx("theirs-dir"), "owned by uid 65534", true},
		{fx("open-parent/spool"), "writable by group or others", false},
	} {
		add(refusal{name: "spool " + c.dir, args: base("--spool", c.dir), exit: 2, wrong: c.wrong, expect: ".", root: c.root})
		if c.dir != fx("open-parent/spool") && c.dir != "/dev/null" {
			add(refusal{name: "dir " + c.dir, args: []string{"--all", "--dir", c.dir}, exit: 2, wrong: c.wrong, expect: ".", root: c.root})
		}
	}

	// Processes that cannot be watched: the same status and reasons as
	// `tickprof time` and `sample`.
	for _, c := range []struct{ pid, wrong, expect string }{
		{"2", "kernel thread", "user process"},
		{zombiePID, "has exited", "."},
		{"2147483647", "no such process", "check the PID"},
	} {
		add(refusal{name: "-p " + c.pid, args: []string{"-p", c.pid, "--dir", filepath.Join(work, "out")}, exit: 1, wrong: c.wrong, expect: c.expect, root: true})
	}
	return rs
}

// TestRefusals runs every bad input and checks the exit status, a single
// line "tickprof: ..." saying what is wrong and what is expected, and an
// exit within refuseTimeout.
func TestRefusals(t *testing.T) {
	rs := refusals()
	if len(rs) < 200 {
		t.Fatalf("%d refusal cases, want at least 200", len(rs))
	}
	t.Logf("%d refusal cases", len(rs))
	root := os.Geteuid() == 0
	for _, r := range rs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			if r.root && !root {
				t.Skip("needs root")
			}
			checkRefusal(t, r)
		})
	}
}

func checkRefusal(t *testing.T, r refusal) {
	ctx, cancel := context.WithTimeout(context.Background(), refuseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"agent"}, r.args...)...)
	cmd.Dir = work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("agent %q still running after %v (hang); stderr: %s", r.args, refuseTimeout, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	msg := strings.TrimRight(stderr.String(), "\n")
	if strings.Contains(msg, "panic:") {
		t.Fatalf("agent %q panicked:\n%s", r.args, msg)
	}
	if code != r.exit {
		t.Errorf("agent %q: exit status %d, want %d; stderr: %s", r.args, code, r.exit, msg)
	}
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "tickprof: ") {
		t.Errorf("agent %q: want one line \"tickprof: ...\", got:\n%s", r.args, msg)
	}
	if r.wrong != "" && !regexp.MustCompile(r.wrong).MatchString(msg) && !strings.Contains(msg, r.wrong) {
		t.Errorf("agent %q: error %q does not say %q", r.args, msg, r.wrong)
	}
	if r.expect != "" && !regexp.MustCompile(r.expect).MatchString(msg) {
		t.Errorf("agent %q: error %q does not say what is expected (%s)", r.args, msg, r.expect)
	}
}

// writeFixtures writes the credential files and directories the cases
// name.
func writeFixtures() error {
	for _, d := range []string{fix, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	files := map[string]string{
		"good-token":           "tok\n",
		"huge-token":           strings.Repeat("t", 64<<10+1),
		"nul-token":            "tok\x00en",
		"del-token":            "tok\x7f",
		"esc-token":            "tok\x1b[2J",
		"c1-token":             "tok\u009b",
		"empty-token":          " \n",
		"twoline-token":        "a\nb\n",
		"writable-token":       "tok",
		"group-writable-token": "tok",
		"theirs-token":         "tok",
	}
	for name, content := range files {
		if err := os.WriteFile(fx(name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	os.Chmod(fx("writable-token"), 0o666)
	os.Chmod(fx("group-writable-token"), 0o620)
	if err := syscall.Mkfifo(fx("fifo"), 0o600); err != nil {
		return err
	}
	os.Symlink(fx("good-token"), fx("link-to-token"))
	os.Symlink(fx("nowhere"), fx("dangling"))
	for name, mode := range map[string]os.FileMode{"open-dir": 0o777, "sticky-dir": 0o777 | os.ModeSticky, "theirs-dir": 0o700, "open-parent": 0o777} {
		os.Mkdir(fx(name), 0o700)
		os.Chmod(fx(name), mode)
	}
	os.Symlink(work, fx("link-dir"))
	if os.Geteuid() == 0 {
		os.Chown(fx("theirs-token"), 65534, 65534)
		os.Chown(fx("theirs-dir"), 65534, 65534)
	}
	return nil
}

// TestRefusalCount guards the suite's size: the issue asked for at least
// 200 cases of bad input and faults.
func TestRefusalCount(t *testing.T) {
	if n := len(refusals()) + len(faultCases); n < 200 {
		t.Errorf("%d cases in all, want at least 200", n)
	}
}
