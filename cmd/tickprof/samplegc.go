// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
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
