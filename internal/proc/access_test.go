// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tickprof/tickprof/internal/testtarget"
)

func TestDecide(t *testing.T) {
	user := Creds{UID: 1000, GID: 1000, TGID: 50}
	mine := Target{PID: 100, UIDs: [4]int{1000, 1000, 1000, 1000}, GIDs: [4]int{1000, 1000, 1000, 1000}, OwnerUID: 1000}
	root := Target{PID: 1, OwnerUID: 0}
	for _, tc := range []struct {
		name string
		c    Creds
		t    Target
		want error // nil: allowed
		text string
	}{
		{"own process", user, mine, nil, ""},
		{"itself", user, Target{PID: 50, OwnerUID: 0}, nil, ""},
		{"root's process", user, root, ErrNotPermitted, "runs as uid 0"},
		{"root's process with CAP_SYS_PTRACE", Creds{UID: 1000, GID: 1000, Ptrace: true}, root, nil, ""},
		{"setuid program run by the user", user, Target{PID: 7, UIDs: [4]int{1000, 0, 0, 0}, GIDs: mine.GIDs, OwnerUID: 0}, ErrNotPermitted, "saved uid 1000/0/0"},
		{"setgid program run by the user", user, Target{PID: 7, UIDs: mine.UIDs, GIDs: [4]int{1000, 42, 42, 42}, OwnerUID: 1000}, ErrNotPermitted, "gid 42"},
		{"not dumpable", user, Target{PID: 8, UIDs: mine.UIDs, GIDs: mine.GIDs, OwnerUID: 0}, ErrNotPermitted, "not dumpable"},
		{"kernel thread, even for root", Creds{Ptrace: true}, Target{PID: 2, Kthread: true}, ErrKernelThread, "kernel thread"},
		{"zombie", user, Target{PID: 9, Zombie: true, UIDs: mine.UIDs, GIDs: mine.GIDs}, ErrNoProcess, "has exited"},
	} {
		err := Decide(tc.c, tc.t)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v, want allowed", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: err = %v, want %v saying %q", tc.name, err, tc.want, tc.text)
		}
	}
}

func TestReadTargetKernelThread(t *testing.T) {
	// kthreadd is PID 2 in the initial PID namespace.
	tg, err := ReadTarget(2)
	if err != nil || !tg.Kthread {
		t.Skipf("PID 2 is not kthreadd here (%v)", err)
	}
	if err := CheckAccess(2); !errors.Is(err, ErrKernelThread) || errors.Is(err, ErrNoProcess) {
		t.Fatalf("CheckAccess(2) = %v, want a kernel-thread error, not \"no such process\"", err)
	}
}

func TestCheckAccessMissing(t *testing.T) {
	for _, pid := range []int{0, -1, 1 << 30} {
		if err := CheckAccess(pid); !errors.Is(err, ErrNoProcess) {
			t.Errorf("CheckAccess(%d) = %v, want ErrNoProcess", pid, err)
		}
	}
}

// The child modes of this test binary, run under dropped credentials.
func TestMain(m *testing.M) {
	switch os.Getenv("TICKPROF_ACCESS_CHILD") {
	case "check":
		// Print one verdict per PID: ok, kthread, notpermitted, noprocess.
		for _, a := range strings.Fields(os.Getenv("TICKPROF_ACCESS_PIDS")) {
			pid, _ := strconv.Atoi(a)
			err := CheckAccess(pid)
			v := "ok"
			switch {
			case errors.Is(err, ErrKernelThread):
				v = "kthread"
			case errors.Is(err, ErrNotPermitted):
				v = "notpermitted"
			case errors.Is(err, ErrNoProcess):
				v = "noprocess"
			case err != nil:
				v = "error:" + err.Error()
			}
			fmt.Println(v)
		}
		os.Exit(0)
	case "held":
		// Start a command held, release it, print its PID and wait to be
		// killed.
		h, err := StartHeld([]string{"sleep", "60"}, Stdio{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		h.Release()
		fmt.Println(h.Pid)
		time.Sleep(60 * time.Second)
		os.Exit(0)
	case "nodump":
		unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
		time.Sleep(30 * time.Second)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// An unprivileged user, also one holding CAP_BPF and CAP_PERFMON as
// ambient capabilities, may observe only its own dumpable processes; with
// CAP_SYS_PTRACE any. Real processes under setpriv, real checks.
func TestCheckAccessDroppedCredentials(t *testing.T) {
	setpriv := testtarget.Setpriv(t)
	// A copy of this test binary that the other user can run.
	bin := testtarget.SelfCopy(t, "proc.test")
	const nobody = "65534"
	as := func(extra ...string) []string {
		return append([]string{setpriv, "--reuid=" + nobody, "--regid=" + nobody, "--clear-groups"}, extra...)
	}
	start := func(argv []string, env ...string) *exec.Cmd {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), env...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	rootProc := start([]string{"sleep", "30"})
	userProc := start(as("sleep", "30"))
	noDump := start(as(bin, "-test.run=^$"), "TICKPROF_ACCESS_CHILD=nodump")
	time.Sleep(300 * time.Millisecond) // let setpriv exec and the child drop dumpable
	pids := fmt.Sprintf("%d %d %d", rootProc.Process.Pid, userProc.Process.Pid, noDump.Process.Pid)
	check := func(name string, argv []string, want string) {
		t.Helper()
		argv = append(argv, bin, "-test.run=^$")
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), "TICKPROF_ACCESS_CHILD=check", "TICKPROF_ACCESS_PIDS="+pids)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		if got := strings.Join(strings.Fields(string(out)), " "); got != want {
			t.Errorf("%s: verdicts for root's, the user's, the user's non-dumpable process: %q, want %q", name, got, want)
		}
	}
	check("user", as(), "notpermitted ok notpermitted")
	check("user with ambient CAP_BPF+CAP_PERFMON", as("--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon"), "notpermitted ok notpermitted")
	check("user with ambient CAP_SYS_PTRACE", as("--inh-caps=+sys_ptrace", "--ambient-caps=+sys_ptrace"), "ok ok ok")
	check("root", nil, "ok ok ok")
}

// TestReadTargetMainThreadGone: a process whose main thread alone exited
// (pthread_exit; so too mid-exec by another thread) lives on, and its map
// is read; one that exited and was not reaped is a zombie.
func TestReadTargetMainThreadGone(t *testing.T) {
	testtarget.NeedGCC(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "pe.c")
	os.WriteFile(src, []byte(`#include <pthread.h>
#include <unistd.h>
static void *thr(void *a) { sleep(30); return 0; }
int main(int argc, char **argv) { if (argc > 1) return 0; pthread_t t; pthread_create(&t, 0, thr, 0); pthread_exit(0); }
`), 0o644)
	bin := filepath.Join(dir, "pe")
	if out, err := exec.Command("gcc", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, exits := range []bool{false, true} {
		args := []string{}
		if exits {
			args = append(args, "exit")
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // not reaped: no Wait yet
		tg, err := ReadTarget(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Zombie != exits {
			t.Errorf("exited %v: Zombie %v", exits, tg.Zombie)
		}
		if err := CheckProcess(cmd.Process.Pid); (err != nil) != exits {
			t.Errorf("exited %v: CheckProcess %v", exits, err)
		}
		if !exits {
			// Its map is read through its live thread.
			ms, err := ReadMaps(cmd.Process.Pid)
			found := false
			for _, m := range ms {
				found = found || m.Path == bin
			}
			if err != nil || !found {
				t.Errorf("map of a process whose main thread exited: %d mappings, %v; want %s among them", len(ms), err, bin)
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
}
