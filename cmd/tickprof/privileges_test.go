// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/features"
	"github.com/tickprof/tickprof/internal/loader"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestPrivilegesAgree runs doctor and time as an unprivileged user holding
// only CAP_SYS_ADMIN, only CAP_BPF+CAP_PERFMON, or no capability: both
// must give the same verdict on whether BPF programs may be loaded (one
// check, internal/proc, behind both).
func TestPrivilegesAgree(t *testing.T) {
	if os.Getenv("TICKPROF_PRIV_CHILD") != "" {
		privilegeChild(t)
		return
	}
	setpriv := testtarget.Setpriv(t)
	// A copy of this test binary that the unprivileged user can run.
	self := testtarget.SelfCopy(t, "tickprof.test")
	dir := filepath.Dir(self)
	for _, c := range []struct {
		caps string
		want bool
	}{
		{"+sys_admin", true},
		{"+bpf,+perfmon", true},
		{"", false},
	} {
		args := []string{"--reuid=65534", "--regid=65534", "--clear-groups"}
		if c.caps != "" {
			args = append(args, "--inh-caps=-all,"+c.caps, "--ambient-caps=-all,"+c.caps)
		} else {
			args = append(args, "--inh-caps=-all", "--ambient-caps=-all")
		}
		args = append(args, self, "-test.run=^TestPrivilegesAgree$", "-test.count=1")
		cmd := exec.Command(setpriv, args...)
		cmd.Env = append(os.Environ(), "TICKPROF_PRIV_CHILD=1")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("caps %q: child failed: %v\n%s", c.caps, err, out)
		}
		want := fmt.Sprintf("verdict doctor=%v time=%v", c.want, c.want)
		if !strings.Contains(string(out), want) {
			t.Errorf("caps %q: want %q:\n%s", c.caps, want, out)
		}
	}
}

// privilegeChild prints doctor's and time's verdicts on the privileges of
// this process.
func privilegeChild(t *testing.T) {
	out, errs, code := runTickprof(t, "doctor", "--json")
	if code != 0 {
		t.Fatalf("doctor exited %d: %s", code, errs)
	}
	var rep struct {
		Results []struct {
			ID string `json:"id"`
			OK bool   `json:"ok"`
		} `json:"features"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	doctorOK := false
	for _, r := range rep.Results {
		if r.ID == string(features.FeatPrivileges) {
			doctorOK = r.OK
		}
	}
	// time's preflight: the error it stops on before loading anything.
	err := runTime(t.Context(), io.Discard, io.Discard, timeFlags{syscalls: []string{"getpid"}, confidence: "95%",
		maxProbes: 1, interval: 200e6, duration: 100e6, noCorrect: true}, nil)
	timeOK := !errors.Is(err, loader.ErrNotRoot)
	fmt.Printf("verdict doctor=%v time=%v (time: %v)\n", doctorOK, timeOK, err)
}
