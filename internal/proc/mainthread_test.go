// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/testtarget"
)

// TestExecWatch: an exec by the main thread, and one by another thread,
// are both seen; only the second says the probes bound to the process
// went with the old main thread.
func TestExecWatch(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (perf events on another process)")
	}
	bin := execBinary(t)
	for _, byThread := range []bool{false, true} {
		mode := "0"
		if byThread {
			mode = "1"
		}
		cmd := exec.Command(bin, mode, "1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		w, err := WatchExec(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		var got ExecEvent
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !got.Exec; time.Sleep(50 * time.Millisecond) {
			if got, err = w.Check(); err != nil {
				t.Fatal(err)
			}
		}
		if !got.Exec || got.ByThread != byThread {
			t.Errorf("exec by a thread %v: saw %+v", byThread, got)
		}
		w.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// TestExecWatchSettles: Check, called the moment the old main thread is
// gone, returns once the exec completed (the new program is mapped: a
// probe attached earlier would bind to the dead thread); called long after
// the exec, it returns at once.
func TestExecWatchSettles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (perf events on another process)")
	}
	bin := execBinary(t)
	for _, late := range []bool{false, true} {
		cmd := exec.Command(bin, "1", "1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		w, err := WatchExec(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		before := w.last
		select {
		case <-w.HungUp():
		case <-time.After(5 * time.Second):
			t.Fatal("no hang-up in 5 s")
		}
		if late {
			time.Sleep(300 * time.Millisecond)
		}
		t0 := time.Now()
		ev, err := w.Check()
		took := time.Since(t0)
		if err != nil || !ev.ByThread {
			t.Fatalf("late %v: Check %+v, %v", late, ev, err)
		}
		l, err := ReadLayout(cmd.Process.Pid)
		if err != nil || l.Code() == before.Code() {
			t.Errorf("late %v: Check returned with the layout of before the exec (%v)", late, err)
		}
		if took >= execSettle/2 {
			t.Errorf("late %v: Check took %v", late, took)
		}
		w.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// execBinary builds execSrc.
func execBinary(t *testing.T) string {
	t.Helper()
	testtarget.NeedGCC(t)
	src := filepath.Join(t.TempDir(), "ex.c")
	os.WriteFile(src, []byte(execSrc), 0o644)
	bin := filepath.Join(t.TempDir(), "ex")
	if out, err := exec.Command("gcc", "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// execSrc execs itself (argv[2] times) after 0.5 s, from the main thread
// (argv[1] 0) or from a second one (1), then sleeps.
const execSrc = `#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static char **av;
static void again(void) {
	int n = atoi(av[2]);
	if (n > 0) { char b[8]; snprintf(b, sizeof b, "%d", n - 1); execl("/proc/self/exe", av[0], av[1], b, (char *)0); }
	for (;;) pause();
}
static void *thr(void *a) { usleep(500000); again(); return 0; }
int main(int argc, char **argv) {
	av = argv;
	if (atoi(argv[1]) == 1) { pthread_t t; pthread_create(&t, 0, thr, 0); for (;;) pause(); }
	usleep(500000);
	again();
}
`
