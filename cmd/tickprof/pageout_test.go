// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	maps := `00400000-0100b000 r-xp 00000000 fd:01 4242 /usr/bin/tickprof
0100b000-01d28000 r--p 00c0b000 fd:01 4242 /usr/bin/tickprof
01d28000-01f02000 rw-p 01928000 fd:01 4242 /usr/bin/tickprof
01f02000-03f4f000 rw-p 00000000 00:00 0
7f0000000000-7f0000010000 r--p 00000000 fd:02 4242 /other/fs/same-inode
7f0000010000-7f0000020000 r-xp 00000000 fd:01 4343 /usr/lib/libc.so.6
`
	got, err := readOnlyMappings([]byte(maps), 0x495080)
	if err != nil {
		t.Fatal(err)
	}
	want := []addrRange{{0x400000, 0x100b000}, {0x100b000, 0x1d28000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readOnlyMappings = %#x, want %#x", got, want)
	}
	if _, err := readOnlyMappings([]byte(maps), 0x2000000); err == nil {
		t.Error("an address in an anonymous mapping: no error")
	}
	if _, err := readOnlyMappings([]byte("zz-01 r-xp 0 fd:01 1 /x\n"), 1); err == nil {
		t.Error("a bad range: no error")
	}
}

// TestPageOutExecutable pages out the test binary's own text and
// read-only data: its resident file pages must fall.
func TestPageOutExecutable(t *testing.T) {
	before := rssFileKB(t)
	err := pageOutExecutable()
	if errors.Is(err, syscall.EINVAL) {
		t.Skipf("kernel without MADV_PAGEOUT (5.4): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	t.Logf("RssFile %d kB before, %d kB after", before, after)
	if after >= before {
		t.Errorf("RssFile %d kB after paging out, %d kB before", after, before)
	}
}

// rssFileKB reads RssFile of /proc/self/status.
func rssFileKB(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssFile:" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
