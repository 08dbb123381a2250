// SPDX-License-Identifier: Apache-2.0

package symbolize

import (
	"os"
	"testing"
	"time"
)

// TestRefreshPolicy checks when a sample outside a process's map rereads
// the map: never for a sample taken before the read (a new read cannot
// show what was mapped then), at once for the first quickRereads reads (a
// map read while the dynamic loader was still mapping libraries must not
// lose the samples that follow), and then at most every rereadGap.
func TestRefreshPolicy(t *testing.T) {
	tab := NewProcs(nil)
	pid := os.Getpid()
	img := tab.Image(pid)
	if img.err != nil || img.reads != 1 || img.readNs == 0 {
		t.Fatalf("first read: reads %d at %d ns, err %v", img.reads, img.readNs, img.err)
	}
	if img.Refresh(img.readNs - 1) {
		t.Fatal("a sample taken before the read reread the map")
	}
	for want := 2; want <= quickRereads; want++ {
		if !img.Refresh(img.readNs + 1) {
			t.Fatalf("read %d: a sample taken after the read did not reread the map", want)
		}
		next := tab.Image(pid)
		if next == img || next.reads != want || next.readNs < img.readNs {
			t.Fatalf("read %d: image %p (reads %d) after %p", want, next, next.reads, img)
		}
		img = next
	}
	img.readAt = time.Now().Add(time.Hour) // no stall of the test can make the gap
	if img.Refresh(img.readNs + 1) {
		t.Fatalf("read %d followed read %d within %v", quickRereads+1, quickRereads, rereadGap)
	}
	img.readAt = time.Now().Add(-rereadGap)
	if !img.Refresh(img.readNs + 1) {
		t.Fatalf("no reread %v after the last", rereadGap)
	}
}

// TestRefreshKeepsMapOfExitingProcess checks that a reread finding no
// executable mapping, as that of a process between the release of its
// memory and becoming a zombie, does not replace the map its samples were
// taken in. A kernel thread (kthreadd, PID 2) is alive with an empty map,
// which stands for such a process.
func TestRefreshKeepsMapOfExitingProcess(t *testing.T) {
	b, err := os.ReadFile("/proc/2/maps")
	if err != nil || len(b) != 0 {
		t.Skipf("PID 2 is not a kernel thread with an empty map here (%d bytes, %v)", len(b), err)
	}
	tab := NewProcs(nil)
	img := tab.Image(os.Getpid())
	if len(img.maps) == 0 {
		t.Fatalf("no executable mapping in this process: %v", img.err)
	}
	img.pid = 2
	img.readAt = time.Now().Add(time.Hour) // no stall of the test can make the gap
	for i := 1; i <= quickRereads; i++ {
		if img.Refresh(img.readNs + 1) {
			t.Fatal("an empty reread replaced the map")
		}
	}
	if tab.cur[os.Getpid()] != img || len(tab.all) != 1 {
		t.Fatalf("the table changed: %d images", len(tab.all))
	}
	// Failed rereads count: after quickRereads of them the next waits
	// for the gap (a reread now would still fail, but cost a read).
	if img.reads < quickRereads {
		t.Errorf("%d reads counted after %d failed rereads, want at least %d", img.reads, quickRereads, quickRereads)
	}
}
