// SPDX-License-Identifier: Apache-2.0

package proc

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// libDirs are searched for a shared library that is not mapped yet (a
// command held before exec has not run its dynamic loader).
var libDirs = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
	"/lib", "/usr/lib", "/usr/local/lib",
}

// SplitTarget splits a [LIB|PATH:]SYMBOL target into its binary part
// (empty: the process's executable) and the symbol. The separator is the first ':'
// that is not part of a C++ '::'.
func SplitTarget(arg string) (bin, sym string) {
	for i := 0; i < len(arg); i++ {
		if arg[i] != ':' {
			continue
		}
		if i+1 < len(arg) && arg[i+1] == ':' {
			i++
			continue
		}
		return arg[:i], arg[i+1:]
	}
	return "", arg
}

// ResolveBinary returns the path to open for the binary part of a target
// (see SplitTarget) in process pid (0: none), and the name to show for it:
// "" is the process's executable, a name with a slash a file under the
// process's root, anything else a library the process maps or its
// executable needs.
func ResolveBinary(pid int, bin string) (path, display string, err error) {
	switch {
	case bin == "" && pid == 0:
		return "", "", fmt.Errorf("a bare SYMBOL %w to look in, or write PATH:SYMBOL", ErrNeedProcess)
	case bin == "":
		exe := fmt.Sprintf("/proc/%d/exe", pid)
		target, err := os.Readlink(exe)
		if err != nil {
			return "", "", readErr(pid, "executable", err)
		}
		return exe, strings.TrimSuffix(target, " (deleted)"), nil
	case strings.Contains(bin, "/"):
		p := RootPath(pid, bin)
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("binary %s: %w", bin, err)
		}
		return p, bin, nil
	}
	// A library name: first what the process has mapped, then what its
	// executable needs (not mapped yet when held before exec).
	if pid == 0 {
		return "", "", fmt.Errorf("library %q %w to search, or give the library's path", bin, ErrNeedProcess)
	}
	maps, err := ReadMaps(pid)
	if err != nil {
		return "", "", readErr(pid, "memory maps", err)
	}
	for _, m := range maps {
		if libMatches(filepath.Base(m.Path), bin) {
			return RootPath(pid, m.Path), m.Path, nil
		}
	}
	if p, disp, ok := neededLibrary(pid, bin); ok {
		return p, disp, nil
	}
	return "", "", fmt.Errorf("no library matching %q is mapped in process %d or needed by its executable: check /proc/%d/maps or give the library's path", bin, pid, pid)
}

// libMatches reports whether file (a base name) is library lib: "libc"
// matches libc.so.6 and libc-2.36.so, "c" matches libc.so.6, an exact
// name matches itself.
func libMatches(file, lib string) bool {
	if file == lib {
		return true
	}
	for _, l := range []string{lib, "lib" + lib} {
		if strings.HasPrefix(file, l+".so") || strings.HasPrefix(file, l+"-") && strings.Contains(file, ".so") {
			return true
		}
	}
	return false
}

// neededLibrary searches the DT_NEEDED libraries of the process's
// executable in the usual directories under the process's root.
func neededLibrary(pid int, lib string) (path, display string, ok bool) {
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		return "", "", false
	}
	for _, n := range needed {
		if !libMatches(n, lib) {
			continue
		}
		for _, d := range libDirs {
			p := filepath.Join(d, n)
			if _, err := os.Stat(RootPath(pid, p)); err == nil {
				return RootPath(pid, p), p, true
			}
		}
	}
	return "", "", false
}

// RootPath returns path as seen by process pid (through its root, so
// that processes in containers work); pid 0 means this process.
//
// When the process has the same root as tickprof the path is returned as
// is: the kernel resolves a /proc/PID/root path only for a caller that
// passes the ptrace access check, which a tickprof run with file
// capabilities (not dumpable, so neither is a child before its exec) does
// not pass for its own held child. A root that cannot be compared is taken
// to be tickprof's own.
func RootPath(pid int, path string) string {
	if pid == 0 || sameRoot(pid) {
		return path
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", pid), path)
}

// sameRoot reports whether process pid has tickprof's root directory, or
// its root cannot be read.
func sameRoot(pid int) bool {
	var theirs, ours unix.Stat_t
	if unix.Stat(fmt.Sprintf("/proc/%d/root", pid), &theirs) != nil || unix.Stat("/", &ours) != nil {
		return true
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino
}
