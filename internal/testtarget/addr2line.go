// SPDX-License-Identifier: Apache-2.0

package testtarget

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Frame is one function at an address as addr2line prints it: the name,
// and the file (base name) and line of the address in it, or of the call
// of the function inlined there.
type Frame struct {
	Function string
	File     string
	Line     int64
}

// String is "function file:line".
func (f Frame) String() string { return fmt.Sprintf("%s %s:%d", f.Function, f.File, f.Line) }

// HaveAddr2line reports whether binutils' addr2line is installed (the
// kernel matrix guests have none).
func HaveAddr2line() bool {
	_, err := exec.LookPath("addr2line")
	return err == nil
}

// Addr2line runs `addr2line -i -f -a -e bin` on the file's virtual
// addresses vaddrs and returns the frames of each, innermost first, the
// way binutils reads the DWARF: the inlined functions, each at its own
// line, then the function that holds the address. Unknown names are "??",
// unknown lines 0; files are base names, without the discriminator.
func Addr2line(t testing.TB, bin string, vaddrs []uint64) map[uint64][]Frame {
	t.Helper()
	args := []string{"-i", "-f", "-a", "-e", bin}
	for _, a := range vaddrs {
		args = append(args, fmt.Sprintf("%#x", a))
	}
	out, err := exec.Command("addr2line", args...).Output()
	if err != nil {
		t.Fatalf("addr2line -e %s: %v", bin, err)
	}
	res := map[uint64][]Frame{}
	var cur uint64
	var fn string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if fn == "" && strings.HasPrefix(line, "0x") {
			if a, err := strconv.ParseUint(line[2:], 16, 64); err == nil {
				cur = a
				continue
			}
		}
		if fn == "" {
			fn = line
			continue
		}
		res[cur] = append(res[cur], parsePos(fn, line))
		fn = ""
	}
	return res
}

// parsePos reads "file:line (discriminator N)" into a frame of fn.
func parsePos(fn, pos string) Frame {
	if i := strings.Index(pos, " ("); i >= 0 {
		pos = pos[:i]
	}
	f := Frame{Function: fn}
	if i := strings.LastIndexByte(pos, ':'); i >= 0 {
		f.File = filepath.Base(pos[:i])
		f.Line, _ = strconv.ParseInt(pos[i+1:], 10, 64)
	}
	if f.File == "??" {
		f.File = ""
	}
	return f
}

// FileVAddr returns the virtual address of the file offset off in the ELF
// file bin (from its loadable segments).
func FileVAddr(t testing.TB, bin string, off uint64) (uint64, bool) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// FileOffset returns the file offset of the virtual address va in the ELF
// file bin.
func FileOffset(t testing.TB, bin string, va uint64) (uint64, bool) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && va >= p.Vaddr && va < p.Vaddr+p.Filesz {
			return va - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// Strip splits bin into a copy stripped of its symbol table and DWARF and
// a debug file holding them (objcopy --only-keep-debug), both in a
// temporary directory of the test; both keep bin's build ID.
func Strip(t testing.TB, bin string) (stripped, debug string) {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Base(bin)
	stripped, debug = filepath.Join(dir, base+"-stripped"), filepath.Join(dir, base+".debug")
	for _, args := range [][]string{{"--only-keep-debug", bin, debug}, {"--strip-all", bin, stripped}} {
		if b, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
			t.Fatalf("objcopy %v: %v\n%s", args, err, b)
		}
	}
	return stripped, debug
}

// DebuginfodCache puts the debug file of the build id where a debuginfod
// client's cache keeps it (DIR/ID/debuginfo) in a temporary directory, and
// points this test's environment there (DEBUGINFOD_CACHE_PATH, no
// DEBUGINFOD_URLS); it returns the file's new path.
func DebuginfodCache(t *testing.T, id, debug string) string {
	t.Helper()
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, id), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(cache, id, "debuginfo")
	if err := os.Rename(debug, p); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEBUGINFOD_CACHE_PATH", cache)
	t.Setenv("DEBUGINFOD_URLS", "")
	return p
}
