// SPDX-License-Identifier: Apache-2.0

package unwind

import (
	"path"
	"strings"
)

// rootFuncs are the functions a complete user stack ends in; a
// frame-pointer walk whose outermost frame is another function ended early
// (a frame without a frame pointer, or a depth limit).
var rootFuncs = []string{
	"_start", "__libc_start_main", "__libc_start_call_main", "main", "start_thread",
	"clone", "clone3", "__clone", "__clone3", "thread_start",
	"runtime.goexit", "runtime.mstart", "runtime.mstart0", "runtime.rt0_go",
	"runtime.mcall", "runtime.morestack", "runtime.systemstack", "runtime.sigtramp",
	"runtime.asmcgocall", "runtime.goexit.abi0", "runtime.mstart.abi0", "runtime.rt0_go.abi0",
}

// EndsStack reports whether a stack whose outermost frame is the function
// fn ("" when unnamed) in file is complete: fn is a process or thread start
// (or Go's stack roots), or an unnamed frame in a file whose start code
// distributions strip (glibc's __libc_start_call_main and start_thread are
// local symbols).
func EndsStack(fn, file string) bool {
	for _, r := range rootFuncs {
		if fn == r {
			return true
		}
	}
	if fn != "" {
		return false
	}
	base := path.Base(file)
	return strings.HasPrefix(base, "libc.so") || strings.HasPrefix(base, "libc-") ||
		strings.HasPrefix(base, "ld-linux") || strings.HasPrefix(base, "libpthread")
}
