// SPDX-License-Identifier: Apache-2.0

//go:build fleet

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// agentStartupPages is the least time after its start at which the agent
// hands its executable's start-up pages back (releaseStartupPages); it
// waits two windows when they are longer, so that the first window's
// symbolization and delivery are done.
const agentStartupPages = 30 * time.Second

// releaseStartupPages pages out the executable's read-only mappings once,
// after delay, unless ctx is done first. A tickprof binary is 40 MB, and
// its start (package initialization, command-line parsing, loading the
// BPF objects, the first window's symbolization) leaves 20-23 MB of its
// text and read-only data resident, which a running agent does not read
// again for the most part. MADV_PAGEOUT drops the pages no other process
// maps; the ones the agent still runs fault back in from the file, one
// page at a time (MADV_RANDOM: read-ahead around each fault brought the
// RSS of a paged-out agent on one process back from 11 to 16 MB within
// minutes, against 9 MB with it). Failures are logged: they cost memory,
// not correctness.
func releaseStartupPages(ctx context.Context, delay time.Duration, logf func(string, ...any)) {
	t := time.AfterFunc(delay, func() {
		if ctx.Err() != nil {
			return
		}
		if err := pageOutExecutable(); err != nil {
			logf("releasing the executable's start-up pages: %v", err)
		}
	})
	context.AfterFunc(ctx, func() { t.Stop() })
}

// pageOutExecutable advises MADV_RANDOM then MADV_PAGEOUT on every mapping
// of this process's executable that is not writable (text and read-only
// data; never the data segment, whose private copy would be lost).
func pageOutExecutable() error {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	spans, err := readOnlyMappings(maps, reflect.ValueOf(pageOutExecutable).Pointer())
	if err != nil {
		return err
	}
	for _, s := range spans {
		for _, adv := range []struct {
			name string
			val  uintptr
		}{{"MADV_RANDOM", unix.MADV_RANDOM}, {"MADV_PAGEOUT", unix.MADV_PAGEOUT}} {
			_, _, e := unix.Syscall(unix.SYS_MADVISE, s.start, s.end-s.start, adv.val)
			if e != 0 {
				return fmt.Errorf("madvise %#x-%#x %s: %w", s.start, s.end, adv.name, syscall.Errno(e))
			}
		}
	}
	return nil
}

// addrRange is an address range [start, end).
type addrRange struct{ start, end uintptr }

// readOnlyMappings returns the ranges of /proc/PID/maps text (maps)
// that map, without write permission, the file whose mapping holds
// address pc (the executable, for an address of its code): the same
// device and inode, so that a path renamed or shown through an overlay
// does not matter.
func readOnlyMappings(maps []byte, pc uintptr) ([]addrRange, error) {
	type mapping struct {
		addrRange
		file     string // device and inode
		writable bool
	}
	var all []mapping
	file := ""
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("maps: bad range %q", f[0])
		}
		m := mapping{addrRange{uintptr(start), uintptr(end)}, f[3] + " " + f[4], strings.Contains(f[1], "w")}
		if m.start <= pc && pc < m.end && f[4] != "0" {
			file = m.file
		}
		all = append(all, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if file == "" {
		return nil, fmt.Errorf("maps: no file mapping holds %#x", pc)
	}
	var out []addrRange
	for _, m := range all {
		if m.file == file && !m.writable {
			out = append(out, m.addrRange)
		}
	}
	return out, nil
}
