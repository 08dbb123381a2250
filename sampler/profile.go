// SPDX-License-Identifier: Apache-2.0

package sampler

import (
	"time"

	"github.com/tickprof/tickprof/internal/symbolize"
)

// VDSOPath is the File of the vDSO's mapping, as /proc/PID/maps names it:
// the ELF image the kernel maps into every process (clock_gettime,
// gettimeofday, getcpu, ...); its unnamed code is one function of that
// name.
const VDSOPath = symbolize.VDSOPath

// Profile is a sampled CPU profile, the sampler's own model (package export
// encodes it as pprof): symbolized locations and stacks of location
// indices, as the sampler collected them.
type Profile struct {
	// Period is the CPU time one sample stands for, in nanoseconds: the
	// mean period of the sampling clocks over the profile's span (near
	// 1e9 / sampling frequency; see dither.go).
	Period int64
	// Start and Duration are the wall-clock span of the sampling.
	Start    time.Time
	Duration time.Duration
	// Mappings are the mapped files; Mappings[0] should be the main
	// executable, as in Go's own profiles.
	Mappings []ProfileMapping
	// Locations are the distinct program counters.
	Locations []Location
	// Samples are the distinct stacks with their counts.
	Samples []Sample
	// Calls are exact call counts of functions (from entry uprobes).
	Calls []CallCount
	// Comments are free text lines stored in the profile.
	Comments []string
}

// ProfileMapping is one mapped file (or the kernel).
type ProfileMapping struct {
	Start, Limit, Offset uint64
	File                 string
	BuildID              string
	// Symbolized is true when the file's symbols were read, so that pprof
	// need not try again; Lines when it also had line information; Inlines
	// when inlined calls were expanded (from DWARF).
	Symbolized, Lines, Inlines bool
}

// Location is one program counter; Function is "" when unknown (the
// address and mapping are kept). Function is the function the address
// belongs to; when calls were inlined there, Inlined lists the inlined
// bodies innermost first, and File and Line are then the position of the
// outermost inlined call in Function.
type Location struct {
	Address  uint64
	Mapping  int // index into Mappings, or -1
	Function string
	File     string
	Line     int64
	Inlined  []Line
}

// Line is a source position in a function.
type Line struct {
	Function string
	File     string
	Line     int64
}

// Sample is one distinct stack, leaf first, with its sample count.
type Sample struct {
	Locations []int // indices into Locations, leaf first
	Count     int64
	Pid       int64 // 0 when unknown
	// Truncated marks a stack that ended early (the walk hit the depth limit,
	// failed, or stopped before a thread's root function).
	Truncated bool
	// Off is the time off CPU estimated for this stack (Config.OffCPU):
	// a stack taken when a thread left the CPU, with Count 0; nil for CPU
	// samples.
	Off *OffCPU
	// Tid is the thread, with off-CPU sampling (Config.OffCPU), where
	// stacks are kept by thread so that times are shares of each thread's
	// wall time; 0 otherwise.
	Tid int64
}
