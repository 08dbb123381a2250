// Package demo carries the workload of `tickprof demo` (c/workload.c): three
// functions of known duration, each measuring itself, built with the
// machine's gcc when the demo runs.
package demo

import _ "embed" // for the workload source

// Source is c/workload.c.
//
//go:embed c/workload.c
var Source []byte

// Functions returns the workload's timed functions, in the order it
// reports them.
func Functions() []string { return []string{"demo_short", "demo_medium", "demo_sleep"} }

// GCCArgs returns gcc's arguments around the source file: frame pointers
// for the sampled stacks, -g for file and line, pthreads and libm.
func GCCArgs(src, out string) []string {
	return []string{"-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", out, src, "-lm"}
}
