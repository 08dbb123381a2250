// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tickprof/tickprof/estimate"
	"github.com/tickprof/tickprof/export"
	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestAgentUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--dir", "x"}, "one kind of target"},
		{[]string{"agent", "--all", "-p", "3", "--dir", "x"}, "one kind of target"},
		{[]string{"agent", "--all"}, "no destination"},
		{[]string{"agent", "--all", "--dir", "x", "--label", "novalue"}, "KEY=VALUE"},
		{[]string{"agent", "--all", "--dir", "x", "--window", "100ms"}, "give at least 1s"},
		{[]string{"agent", "--all", "--pyroscope", "http://h", "--pyroscope-api", "grpc"}, "ingest or connect"},
		{[]string{"agent", "--all", "--otlp", "nohost"}, "HOST:PORT"},
		{[]string{"agent", "--all", "--dir", "x", "--basic-auth-user", "u"}, "password file"},
		{[]string{"agent", "--all", "--dir", "x", "--spool-size", "big"}, "not a size"},
		{[]string{"agent", "--dir", "x", "-p=-3"}, "a PID is positive"},
		{[]string{"agent", "-p", "1", "--dir", "x", "-s", "read", "--overhead", "1%"}, "user functions only"},
		{[]string{"agent", "-p", "1", "--dir", "x", "-u", "f", "--overhead", "150%"}, "below 100%"},
		{[]string{"agent", "-p", "1", "--dir", "x", "--confidence", "150%"}, "--confidence"},
	} {
		_, errs, code := runTickprof(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want usage error about %q", c.args, code, errs, c.want)
		}
	}
}

// TestAgentDirMergedReport runs `tickprof agent --exe` into a directory
// while the burn target (burn_a does three times burn_b's work, and each
// function's own CPU time is measured by the target) runs and exits; the
// windows are merged as a backend would, and `tickprof report` on the merged
// file gives burn_a's share of burn_a+burn_b with a 99% interval that must
// cover the measured ratio (a correct agent fails this 1% of the time).
func TestAgentDirMergedReport(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	exe := testtarget.Sampled(t, "burn", "tpdirburn")
	out := filepath.Join(dir, "profiles")
	kv := filepath.Join(dir, "truth")
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Wait for the agent, then run the target while it watches.
		time.Sleep(2 * time.Second)
		cmd := exec.Command(exe, "6", kv)
		if err := cmd.Run(); err != nil {
			t.Errorf("burn: %v", err)
		}
		// Let the last window close, then stop the agent as systemd would.
		time.Sleep(1500 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
	_, errs, code := runTickprof(t, "agent", "--exe", "tpdirburn", "-F", "199", "--window", "1s", "--dir", out, "--label", "env=test")
	<-done
	if code != 0 {
		t.Fatalf("agent exit %d: %s", code, errs)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.pb.gz"))
	if len(files) < 3 {
		t.Fatalf("%d window files; agent said:\n%s", len(files), errs)
	}
	var profs []*profile.Profile
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(strings.Join(p.Comments, "\n"), "tickprof-label env=test") {
			t.Errorf("%s lacks its labels: %v", f, p.Comments)
		}
		profs = append(profs, p)
	}
	merged, err := profile.Merge(profs)
	if err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, "merged.pb.gz")
	w, _ := os.Create(mf)
	merged.Write(w)
	w.Close()
	stdout, errs, code := runTickprof(t, "report", "--json", "--top", "0", "--confidence", "99%", mf)
	if code != 0 {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var tab export.CPUTable
	if err := json.Unmarshal([]byte(stdout), &tab); err != nil {
		t.Fatal(err)
	}
	var ha, hb uint64
	for _, r := range tab.Rows {
		switch r.Function {
		case "burn_a":
			ha = r.Flat.Hits
		case "burn_b":
			hb = r.Flat.Hits
		}
	}
	truth := testtarget.ReadKV(t, kv)
	want := truth["ns_a"] / (truth["ns_a"] + truth["ns_b"])
	// At 99.9% a correct sampler misses one run in 1,000 by chance.
	sh, err := estimate.Share(ha, ha+hb, estimate.Options{Confidence: 0.999})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d windows merged: burn_a %d, burn_b %d samples; share %.3f [%.3f, %.3f] (99.9%%), measured by the target %.3f",
		len(files), ha, hb, sh.Share, sh.Low, sh.High, want)
	if want < sh.Low || want > sh.High {
		t.Errorf("burn_a's share of the merged windows %.3f [%.3f, %.3f] misses the measured %.3f", sh.Share, sh.Low, sh.High, want)
	}
}
