// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// sampleGCPercent is the Go collector's target for `sample` unless GOGC
// says otherwise: the heap may grow a quarter past its live size instead
// of doubling. A sampling run's heap peaks once, when the profile is
// symbolized (the DWARF of separate debug files, unwind and symbol
// tables); at 25 its peak RSS fell from 103-107 MiB to 86-88 MiB on
// sqlite3 at 999 Hz, for 0.05-0.1 s more CPU (docs/performance.md, "Own
// cost").
const sampleGCPercent = 25

// tightenSampleGC sets sampleGCPercent unless the user set GOGC.
func tightenSampleGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(sampleGCPercent)
	}
}

// timeFirstGC is the memory the Go runtime may reach in a `time` run
// before its first collection, unless GOGC or GOMEMLIMIT say otherwise;
// after it the collector's defaults hold. A one-function run allocates
// about 15 MB in 5 s, most of it at its start (the BPF objects' ELF and
// BTF), and the default target of a 4 MB heap collected 6 times in it
// (docs/performance.md, "Own cost").
const timeFirstGC = 32 << 20

// deferTimeGC holds the collector off until the runtime's memory reaches
// timeFirstGC, then restores the defaults, unless the user set GOGC or
// GOMEMLIMIT.
func deferTimeGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(timeFirstGC)
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// gcSentinel is an object whose finalizer runs after the collection that
// finds it unreachable.
type gcSentinel struct{ _ [16]byte }
