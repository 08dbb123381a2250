// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickprof/tickprof/internal/bpftest"
	"github.com/tickprof/tickprof/internal/testtarget"
)

// reexecSrc calls work for a second once the file argv[1] exists, then
// execs itself from a second thread (argv[3] 1) or the main one (0) and
// calls work for two seconds more; it writes the calls it made in all to
// argv[2] and exits.
const reexecSrc = `#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
static char **av;
static long calls;
__attribute__((noinline)) void work(void) { for (int i = 0; i < 2000; i++) sink += i; }
static void spin(long ns) {
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do { work(); calls++; clock_gettime(CLOCK_MONOTONIC, &t); } while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < ns);
}
static void again(void) {
	char b[32]; snprintf(b, sizeof b, "%ld", calls);
	execl("/proc/self/exe", av[0], av[1], av[2], av[3], b, (char *)0);
	_exit(3);
}
static void *thr(void *a) { spin(1000000000L); again(); return 0; }
int main(int argc, char **argv) {
	av = argv;
	if (argc > 4) { /* after the exec */
		calls = atol(argv[4]);
		spin(2000000000L);
		FILE *f = fopen(argv[2], "w"); fprintf(f, "%ld\n", calls); fclose(f);
		return 0;
	}
	while (access(argv[1], F_OK) != 0) usleep(10000);
	if (atoi(argv[3])) { pthread_t t; pthread_create(&t, 0, thr, 0); for (;;) pause(); }
	spin(1000000000L);
	again();
}
`

// TestTimesAcrossExec times work in a process that execs itself halfway,
// from its main thread and from a second thread (after which the kernel
// drops the probes bound to the old main thread): the calls of both
// halves are counted (after an exec by a thread, all but those made while
// the probes are attached again; it timed nothing after the exec), none
// twice, and the run ends when the process exits.
func TestTimesAcrossExec(t *testing.T) {
	bpftest.Require(t)
	testtarget.NeedGCC(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "reexec.c")
	os.WriteFile(src, []byte(reexecSrc), 0o644)
	bin := filepath.Join(dir, "reexec")
	if out, err := exec.Command("gcc", "-O1", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, byThread := range []string{"0", "1"} {
		gate, count := filepath.Join(dir, "gate"+byThread), filepath.Join(dir, "count"+byThread)
		cmd := exec.Command(bin, gate, count, byThread)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		var warnings []string
		s, err := Open(context.Background(), Config{PID: cmd.Process.Pid, Targets: Targets{Users: []string{bin + ":work"}, MaxProbes: 1},
			Clock: Clock{Kind: ClockNS}, NoRecords: true,
			Warn: func(m string) { warnings = append(warnings, m) }})
		if err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		os.WriteFile(gate, nil, 0o644)

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := s.Run(ctx)
		cancel()
		s.Close()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(count)
		made, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		got := res.Targets[0].Calls
		t.Logf("exec by a thread %s: %d calls made, %d counted; stop: %s; warnings %q", byThread, made, got, res.StopReason, warnings)
		// The calls between the exec and the probes' return (detecting it,
		// attaching again: 70-150 ms here, 250 ms and more at a load of 29,
		// in the two seconds after the exec) are lost; none may count twice.
		if made == 0 || got < made*70/100 || got > made {
			t.Errorf("exec by a thread %s: %d calls counted of %d made", byThread, got, made)
		}
		// One exec by a thread, probed again; the exit is no exec.
		if n := len(warnings); byThread == "1" && (n != 1 || !strings.Contains(warnings[0], "attached again")) || byThread == "0" && n != 0 {
			t.Errorf("exec by a thread %s: warnings %q", byThread, warnings)
		}
		if res.StopReason != StopExited {
			t.Errorf("stop reason %q", res.StopReason)
		}
	}
}
