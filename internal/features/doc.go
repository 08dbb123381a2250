// SPDX-License-Identifier: Apache-2.0

// Package features probes what this kernel offers tickprof: privileges,
// BTF, each attach type (uprobes, kprobes, fentry, tracepoints, perf
// events), the BPF helpers and maps the programs use, tracefs and the
// kernel's symbols; and picks the attach method of each target kind from
// what it found (`tickprof doctor` prints it). It loads only the empty
// programs it probes with.
package features
